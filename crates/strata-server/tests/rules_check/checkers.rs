//! Running `strata rules check` and `promtool check rules`, and reading
//! their output: the verdict, the message lines, all of it for a failure.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::cases::Verdict;

pub(crate) fn run(bin: &Path, args: &[&str], files: &[&Path]) -> Output {
    Command::new(bin)
        .args(args)
        .args(files)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub(crate) fn strata(files: &[&Path]) -> Output {
    run(
        Path::new(env!("CARGO_BIN_EXE_strata")),
        &["rules", "check"],
        files,
    )
}

pub(crate) fn promtool(bin: &Path, files: &[&Path]) -> Output {
    run(bin, &["check", "rules"], files)
}

pub(crate) fn verdict(out: &Output) -> Verdict {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(n) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  SUCCESS: "))
        .and_then(|rest| rest.strip_suffix(" rules found"))
    {
        return Verdict::Pass(n.parse().unwrap());
    }
    if stderr.contains("lint error") {
        Verdict::Lint
    } else {
        Verdict::Fail
    }
}

pub(crate) fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The message lines, sorted (Go visits labels in random order), without
/// the log lines promtool may add.
pub(crate) fn messages(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("time="))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}
