//! The command line as an operator meets it: one exit-code convention (2
//! for configuration and start-up errors, each printed once), `--listen`
//! forms, logs without colour codes when not on a terminal, `strata
//! config` with sources and secrets redacted, and `--help` defaults that
//! match the built-in configuration.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{free_port, http_get, wait_until};

fn strata(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(args)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    strata(args, env).output().expect("run strata")
}

/// `strata config`'s settings: dotted key → (value, source).
fn config_settings(args: &[&str], env: &[(&str, &str)]) -> BTreeMap<String, (String, String)> {
    let mut all = vec!["config"];
    all.extend_from_slice(args);
    let out = run(&all, env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut section = String::new();
    let mut settings = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_owned();
        } else if let Some((kv, source)) = line.rsplit_once("  # ") {
            let (k, v) = kv.split_once(" = ").expect("key = value");
            settings.insert(
                format!("{section}.{k}"),
                (v.trim_matches('"').to_owned(), source.to_owned()),
            );
        }
    }
    settings
}

#[test]
fn config_prints_each_value_with_its_source_and_redacts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strata.toml");
    std::fs::write(&file, "[storage]\nretention = \"30d\"\n").unwrap();
    let file = file.to_str().unwrap();
    let s = config_settings(
        &["--config", file, "--listen", ":9999"],
        &[
            ("STRATA_SERVER_LOG_LEVEL", "debug"),
            ("STRATA_OBJECT_STORE_S3_SECRET_ACCESS_KEY", "do-not-print"),
        ],
    );
    assert_eq!(s["server.role"], ("all".into(), "default".into()));
    assert_eq!(
        s["storage.retention"],
        ("30d".into(), format!("file {file}"))
    );
    assert_eq!(
        s["server.log_level"],
        ("debug".into(), "env STRATA_SERVER_LOG_LEVEL".into())
    );
    assert_eq!(s["server.listen"], (":9999".into(), "flag --listen".into()));
    assert_eq!(s["object_store.s3.secret_access_key"].0, "<secret>");

    // An invalid configuration: exit 2, the problem printed once.
    let out = run(&["config"], &[("STRATA_STORAGE_RETENTION", "soon")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("storage").count(), 1, "{err}");
}

#[test]
fn help_defaults_match_the_built_in_configuration() {
    let help = run(&["serve", "--help"], &[]);
    let help = String::from_utf8(help.stdout).unwrap();
    let defaults = config_settings(&[], &[]);
    let mut checked = 0;
    for part in help.split("[default: ").skip(1) {
        let (default, rest) = part.split_once(']').unwrap();
        let Some(env) = rest
            .trim_start()
            .strip_prefix("[env: ")
            .and_then(|r| r.split(']').next())
        else {
            continue;
        };
        // Which setting the variable sets: the one `strata config` then
        // says came from it.
        let value = if default == "none" { "" } else { default };
        let with_env = config_settings(&[], &[(env, value)]);
        let key = with_env
            .iter()
            .find(|(_, (_, source))| source == &format!("env {env}"))
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| panic!("{env} sets no setting"));
        let built_in = &defaults[&key].0;
        let shown = if built_in.is_empty() {
            "none"
        } else {
            built_in
        };
        assert_eq!(default, shown, "--help says {env} defaults to {default}");
        checked += 1;
    }
    assert!(checked >= 6, "{checked} defaults checked:\n{help}");
}

/// Starts `serve` with `args` in `dir` and its stdout in a file; the child
/// and the file.
fn serve(dir: &std::path::Path, args: &[&str]) -> (std::process::Child, std::path::PathBuf) {
    let log = dir.join("strata.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let child = strata(&all, &[])
        .current_dir(dir)
        .stdout(file)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strata");
    (child, log)
}

#[test]
fn listen_forms_and_logs_without_colour_codes() {
    for form in ["localhost:{}", ":{}"] {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let listen = form.replace("{}", &port.to_string());
        let (mut child, log) = serve(dir.path(), &["--listen", &listen]);
        wait_until(Duration::from_secs(30), "ready", || {
            assert!(child.try_wait().unwrap().is_none(), "exited on {listen}");
            matches!(http_get(port, "/-/ready"), Ok(r) if r.status == 200)
        });
        let _ = child.kill();
        let _ = child.wait();
        let text = std::fs::read_to_string(log).unwrap();
        assert!(text.contains("strata starting"), "{text}");
        assert!(
            !text.contains('\u{1b}'),
            "colour codes in a log file:\n{text}"
        );
        let longest = text.lines().map(str::len).max().unwrap_or(0);
        assert!(longest < 600, "a {longest}-byte log line:\n{text}");
    }
}

#[test]
fn start_up_errors_exit_2_printed_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let cases = [
        (
            vec!["--listen".to_owned(), format!("127.0.0.1:{port}")],
            "cannot listen",
        ),
        (
            vec!["--object-store".to_owned(), "ftp://host/x".to_owned()],
            "unsupported scheme",
        ),
        (
            vec!["--listen".to_owned(), "9470".to_owned()],
            "server.listen",
        ),
    ];
    for (args, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (mut child, log) = serve(dir.path(), &args);
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let out = std::fs::read_to_string(log).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}{out}");
        let printed = err.matches(needle).count() + out.matches(needle).count();
        assert_eq!(
            printed, 1,
            "{args:?}: printed {printed} times:\n{err}\n{out}"
        );
    }
    drop(taken);
}
