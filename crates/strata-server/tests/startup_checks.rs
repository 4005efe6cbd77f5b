//! Mistakes an operator makes on the first day fail the start at once,
//! with exit code 2 and one line naming the problem and the setting, against
//! a real S3-compatible server (moto): a missing bucket, an `http://`
//! endpoint without `allow_http`. `AWS_ALLOW_HTTP` is honoured, and a
//! good store starts, leaving no probe object behind.
// Real processes run in real time: the wall clock and sleeps are the point.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::s3::{s3_env, MotoServer};
use common::{free_port, http_get, wait_until};

/// The start must fail well within this.
const LIMIT: Duration = Duration::from_secs(30);

/// Runs `strata serve` with `env` until it exits (or `LIMIT` passes):
/// its exit code, its stderr, and how long it took.
fn serve_until_exit(
    object_store: &str,
    env: &[(String, String)],
) -> (Option<i32>, String, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--object-store", object_store])
        .env_remove("RUST_LOG")
        .env_remove("AWS_ALLOW_HTTP")
        .env("STRATA_SERVER_LOG_LEVEL", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start strata");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    (code, err, started.elapsed())
}

/// Starts `strata serve` on a free port with `env`, its output discarded.
fn serve_quietly(object_store: &str, env: &[(String, String)]) -> (u16, std::process::Child) {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--object-store", object_store])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    (port, cmd.spawn().expect("start strata"))
}

fn without(env: Vec<(String, String)>, key: &str) -> Vec<(String, String)> {
    env.into_iter().filter(|(k, _)| k != key).collect()
}

fn with(mut env: Vec<(String, String)>, key: &str, value: &str) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != key);
    env.push((key.to_owned(), value.to_owned()));
    env
}

#[test]
fn store_mistakes_exit_2_naming_the_problem() {
    let moto = MotoServer::start();
    moto.create_bucket("present");
    let env = s3_env(moto.port);

    let cases = [
        (
            "a missing bucket",
            "s3://no-such-bucket/strata",
            env.clone(),
            "bucket does not exist",
        ),
        (
            "an http:// endpoint without allow_http",
            "s3://present/strata",
            without(env.clone(), "STRATA_OBJECT_STORE_S3_ALLOW_HTTP"),
            "allow_http",
        ),
    ];
    for (what, url, env, needle) in cases {
        let (code, err, took) = serve_until_exit(url, &env);
        assert_eq!(
            code,
            Some(2),
            "{what}: exit {code:?} after {took:?}; stderr:\n{err}"
        );
        assert!(took < LIMIT, "{what}: took {took:?}");
        assert!(
            err.contains(needle),
            "{what}: stderr lacks {needle:?}:\n{err}"
        );
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(needle)).collect();
        assert_eq!(lines.len(), 1, "{what}: printed once:\n{err}");
        eprintln!("startup_checks: {what}: exit 2 in {took:?}: {}", lines[0]);
    }
}

#[test]
fn aws_allow_http_is_honoured_and_a_good_store_starts() {
    let moto = MotoServer::start();
    moto.create_bucket("good");
    let env = with(
        without(s3_env(moto.port), "STRATA_OBJECT_STORE_S3_ALLOW_HTTP"),
        "AWS_ALLOW_HTTP",
        "true",
    );
    let (port, mut child) = serve_quietly("s3://good/strata", &env);
    wait_until(Duration::from_secs(30), "strata is ready", || {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "strata exited with AWS_ALLOW_HTTP=true"
        );
        matches!(http_get(port, "/-/ready"), Ok(r) if r.status == 200)
    });
    let _ = child.kill();
    let _ = child.wait();
    // The start probe left nothing behind but the database's own objects.
    let listed = moto.list_keys("good");
    assert!(
        listed.iter().all(|k| !k.contains("start-probe")),
        "{listed:?}"
    );
}

/// A store that does not answer at start may be an outage: the server
/// waits for it (no exit), `/-/ready` is 503, and `/-/healthy` turns 503
/// naming the problem once it has lasted `server.store_unhealthy_after`.
#[test]
fn an_unreachable_store_at_start_makes_healthy_fail() {
    let closed = free_port();
    let mut env = s3_env(closed);
    env.push(("STRATA_SERVER_STORE_UNHEALTHY_AFTER".into(), "2s".into()));
    let (port, mut child) = serve_quietly("s3://any/strata", &env);
    let mut body = String::new();
    wait_until(LIMIT, "/-/healthy answers 503", || {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "strata exited while the store was unreachable"
        );
        match http_get(port, "/-/healthy") {
            Ok(r) if r.status == 503 => {
                body = r.text();
                true
            }
            _ => false,
        }
    });
    assert!(body.contains("object-store"), "{body}");
    assert!(
        body.contains(&closed.to_string()),
        "names the endpoint: {body}"
    );
    let ready = http_get(port, "/-/ready").expect("ready");
    assert_eq!(ready.status, 503);
    let _ = child.kill();
    let _ = child.wait();
}
