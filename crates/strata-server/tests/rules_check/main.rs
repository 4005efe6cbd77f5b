//! `strata rules check` against Prometheus 3.16's `promtool check rules` on
//! the same files: real-world recording and alerting rules that pass, and
//! files with each mistake `rulefmt` catches. The verdict of each file (its
//! rule count, a failure, or a lint finding) and the exit code must be
//! promtool's; where the wording is the same by design, the messages too.
//!
//! The tests are here; beside them: the real-world rule files
//! (`rule_files`), the cases and their verdicts (`cases`), and the two
//! checkers run and read (`checkers`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod cases;
mod checkers;
#[path = "../common/mod.rs"]
mod common;
mod rule_files;

use std::path::Path;
use std::process::{Command, Stdio};

use cases::{Case, Verdict, CASES};
use checkers::{messages, promtool, run, show, strata, verdict};
use rule_files::NODE_RECORDING;

#[test]
fn verdicts_match_promtool_file_by_file() {
    let promtool_bin = common::prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for case in CASES {
        let path = dir.path().join(case.name);
        std::fs::write(&path, case.text).unwrap();
        let ours = strata(&[&path]);
        let theirs = promtool(&promtool_bin, &[&path]);
        let (v_ours, v_theirs) = (verdict(&ours), verdict(&theirs));
        if v_ours != case.verdict || v_theirs != case.verdict {
            failures.push(format!(
                "{}: expected {:?}, strata {v_ours:?}, promtool {v_theirs:?}\n== strata {}\n== promtool {}",
                case.name,
                case.verdict,
                show(&ours),
                show(&theirs)
            ));
            continue;
        }
        if ours.status.code() != theirs.status.code() || ours.stdout != theirs.stdout {
            failures.push(format!(
                "{}: output differs\n== strata {}\n== promtool {}",
                case.name,
                show(&ours),
                show(&theirs)
            ));
            continue;
        }
        if case.same_messages && messages(&ours) != messages(&theirs) {
            failures.push(format!(
                "{}: messages differ\n== strata {}\n== promtool {}",
                case.name,
                show(&ours),
                show(&theirs)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn many_files_at_once_exit_as_promtool() {
    let promtool_bin = common::prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let write = |case: &Case| {
        let path = dir.path().join(case.name);
        std::fs::write(&path, case.text).unwrap();
        path
    };
    let by_verdict = |pick: fn(Verdict) -> bool| -> Vec<std::path::PathBuf> {
        CASES
            .iter()
            .filter(|c| pick(c.verdict))
            .map(write)
            .collect()
    };
    let passing = by_verdict(|v| matches!(v, Verdict::Pass(_)));
    let linted = by_verdict(|v| v == Verdict::Lint);
    let failing = by_verdict(|v| v == Verdict::Fail);
    let all: Vec<_> = passing
        .iter()
        .chain(&linted)
        .chain(&failing)
        .cloned()
        .collect();
    for (files, exit) in [(&passing, 0), (&linted, 0), (&failing, 1), (&all, 1)] {
        let files: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let ours = strata(&files);
        let theirs = promtool(&promtool_bin, &files);
        assert_eq!(ours.status.code(), Some(exit), "{}", show(&ours));
        assert_eq!(theirs.status.code(), Some(exit), "{}", show(&theirs));
        // `Checking FILE`, the verdicts and the blank lines between files,
        // in order.
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout)
        );
    }

    // Lint findings exit 3 with --lint-fatal, and --lint=none turns the
    // lint off, for both.
    let lint_file = [linted[0].as_path()];
    for (args, exit) in [(&["--lint-fatal"][..], 3), (&["--lint=none"][..], 0)] {
        let ours = run(
            Path::new(env!("CARGO_BIN_EXE_strata")),
            &[&["rules", "check"][..], args].concat(),
            &lint_file,
        );
        let theirs = run(
            &promtool_bin,
            &[&["check", "rules"][..], args].concat(),
            &lint_file,
        );
        assert_eq!(ours.status.code(), Some(exit), "{}", show(&ours));
        assert_eq!(theirs.status.code(), Some(exit), "{}", show(&theirs));
        assert_eq!(ours.stdout, theirs.stdout, "{}", show(&ours));
    }
}

#[test]
fn a_missing_file_fails() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yml");
    let out = strata(&[&missing]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: ", missing.display())),
        "{}",
        show(&out)
    );
}

#[test]
fn standard_input_when_no_file_is_named() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["rules", "check"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(NODE_RECORDING.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Checking standard input\n  SUCCESS: 8 rules found\n\n"
    );
}
