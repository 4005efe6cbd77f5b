//! Writes through object-store faults, end to end: a writer on a real
//! S3-compatible server (versitygw) behind toxiproxy and the HTTP fault
//! layer of `bench/s3/s3net.py`, under steady remote-write load from a
//! sender that retries as Prometheus does, through bursts of 503 SlowDown
//! and a 60-second store outage.
//!
//! - Every sample answered 2xx is there afterwards, once: in the running
//!   writer and after a restart.
//! - While the store fails, writes are answered as `docs/reliability.md`
//!   says: Applied 204 (buffered) or 503 with `Retry-After`, never another
//!   status; a Durable write is never acknowledged while the store is out.
//! - The time from the store's return to the first Durable write
//!   acknowledged is measured (printed) and bounded.
//!
//! versitygw 1.8.0 and toxiproxy 2.12.0 are built by `.ci/run` (through
//! `bench/s3/setup`); missing, the test fails.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

use common::inproc::{body, now_ms, ts};
use common::s3::s3_env_with;
use common::{env_or_test_cache, free_port, http_request, query_matrix, StrataProcess};

/// Series the sender writes, one sample each per batch.
const SERIES: usize = 50;
/// Time between batches: 500 samples/s.
const BATCH_EVERY: Duration = Duration::from_millis(100);
const OUTAGE: Duration = Duration::from_secs(60);

const WRITE_HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

/// versitygw, toxiproxy and the HTTP fault layer, as `s3net.py serve` runs
/// them; stopped when its stdin closes (on drop).
struct S3Chain {
    child: Child,
    stdin: Option<ChildStdin>,
    s3_port: u16,
    control_port: u16,
    access_key: String,
    secret_key: String,
    bucket: String,
}

impl S3Chain {
    fn start(workdir: &Path) -> Self {
        for (var, rel) in [
            ("VERSITYGW_BIN", "versitygw-1.8.0/versitygw"),
            ("TOXIPROXY_BIN", "toxiproxy-2.12.0/server"),
        ] {
            let bin = env_or_test_cache(var, rel);
            assert!(
                bin.is_file(),
                "{} not found: build it as .ci/run does (bench/s3/setup), or set {var}",
                bin.display()
            );
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/s3/s3net.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .args(["serve", "--workdir"])
            .arg(workdir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start python3 bench/s3/s3net.py serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("s3net.py serve did not start ({e}): {line:?}"));
        eprintln!("S3 chain: {ready}");
        let text = |k: &str| ready[k].as_str().unwrap().to_owned();
        Self {
            stdin: child.stdin.take(),
            child,
            s3_port: ready["s3_port"].as_u64().unwrap() as u16,
            control_port: ready["control_port"].as_u64().unwrap() as u16,
            access_key: text("access_key"),
            secret_key: text("secret_key"),
            bucket: text("bucket"),
        }
    }

    fn control(&self, path: &str) {
        let r = http_request(self.control_port, "POST", path, &[], b"").unwrap();
        assert_eq!(r.status, 200, "POST {path}: {}", r.text());
    }

    fn slowdown(&self, rate: f64) {
        self.control(&format!("/slowdown?rate={rate}"));
    }

    fn outage(&self, on: bool) {
        self.control(&format!("/outage?on={}", u8::from(on)));
    }

    /// Requests by kind since the start, with their errors.
    fn requests(&self) -> serde_json::Value {
        http_request(self.control_port, "GET", "/requests", &[], b"")
            .unwrap()
            .json()
    }

    fn strata_env(&self) -> Vec<(String, String)> {
        s3_env_with(self.s3_port, &self.access_key, &self.secret_key)
    }
}

impl Drop for S3Chain {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_strata(chain: &S3Chain, port: u16) -> StrataProcess {
    let env = chain.strata_env();
    let mut refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    refs.push(("STRATA_STORAGE_FLUSH_INTERVAL", "100ms"));
    let url = format!("s3://{}/db", chain.bucket);
    StrataProcess::start_on(port, Path::new(&url), &refs)
}

/// The phase a request was sent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Before,
    Slowdown,
    Between,
    Outage,
    After,
}

/// One answer the sender got.
struct Answer {
    phase: Phase,
    durable: bool,
    /// None: no answer (connection refused or reset, or a read timeout).
    status: Option<u16>,
    retry_after: bool,
    sent: Instant,
    answered: Instant,
}

struct Load {
    phase: Mutex<Phase>,
    stop: AtomicBool,
    answers: Mutex<Vec<Answer>>,
    /// Samples answered 2xx: (series, t) → value.
    acked: Mutex<BTreeMap<(usize, i64), f64>>,
}

fn value(series: usize, t: i64) -> f64 {
    (t % 1_000_000) as f64 + series as f64 / 64.0
}

/// Sends `batch` (Durable if asked) until it is answered 2xx or the load
/// stops, waiting as Prometheus does between tries: `Retry-After` when
/// given, else 100 ms doubling to 1 s.
fn send_until_acked(port: u16, load: &Load, batch: &[u8], durable: bool) -> bool {
    let mut headers = WRITE_HEADERS.to_vec();
    if durable {
        headers.push(("X-Strata-Durability", "durable"));
    }
    let mut backoff = Duration::from_millis(100);
    loop {
        let phase = *load.phase.lock().unwrap();
        let sent = Instant::now();
        let r = http_request(port, "POST", "/api/v1/write", &headers, batch).ok();
        let answered = Instant::now();
        let status = r.as_ref().map(|r| r.status);
        let retry_after = r
            .as_ref()
            .and_then(|r| r.header("retry-after"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        load.answers.lock().unwrap().push(Answer {
            phase,
            durable,
            status,
            retry_after: retry_after.is_some(),
            sent,
            answered,
        });
        if status.is_some_and(|s| (200..300).contains(&s)) {
            return true;
        }
        if load.stop.load(Ordering::Relaxed) {
            return false;
        }
        let wait = retry_after.map_or(backoff, Duration::from_secs);
        std::thread::sleep(wait.min(Duration::from_secs(1)));
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// Applied batches every `BATCH_EVERY`, each of `SERIES` samples at the
/// batch's time; a batch not yet acknowledged holds the next back, as one
/// remote-write shard does.
fn run_sender(port: u16, load: Arc<Load>) {
    while !load.stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let t = now_ms();
        let series: Vec<_> = (0..SERIES)
            .map(|i| {
                let i_s = i.to_string();
                ts(
                    &[("__name__", "fault_load"), ("series", &i_s)],
                    &[(t, value(i, t))],
                )
            })
            .collect();
        if send_until_acked(port, &load, &body(series), false) {
            let mut acked = load.acked.lock().unwrap();
            for i in 0..SERIES {
                acked.insert((i, t), value(i, t));
            }
        }
        std::thread::sleep(BATCH_EVERY.saturating_sub(started.elapsed()));
    }
}

/// One Durable sample a second, on a series of its own.
fn run_durable_probe(port: u16, load: Arc<Load>) {
    while !load.stop.load(Ordering::Relaxed) {
        let t = now_ms();
        let batch = body(vec![ts(&[("__name__", "fault_durable")], &[(t, 1.0)])]);
        let mut headers = WRITE_HEADERS.to_vec();
        headers.push(("X-Strata-Durability", "durable"));
        let phase = *load.phase.lock().unwrap();
        let sent = Instant::now();
        let r = http_request(port, "POST", "/api/v1/write", &headers, &batch).ok();
        load.answers.lock().unwrap().push(Answer {
            phase,
            durable: true,
            status: r.as_ref().map(|r| r.status),
            retry_after: r.as_ref().and_then(|r| r.header("retry-after")).is_some(),
            sent,
            answered: Instant::now(),
        });
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Every acknowledged sample is in the writer's answer, once, with its
/// value.
fn assert_all_acked_there(port: u16, acked: &BTreeMap<(usize, i64), f64>, when: &str) {
    let got = query_matrix(port, "fault_load[1h]", now_ms());
    let mut by_series: BTreeMap<usize, BTreeMap<i64, f64>> = BTreeMap::new();
    for (labels, samples) in &got {
        let i: usize = labels["series"].parse().unwrap();
        let mut seen = BTreeMap::new();
        for (t, v) in samples {
            let old = seen.insert(*t, v.parse::<f64>().unwrap());
            assert!(old.is_none(), "{when}: series {i} has {t} twice");
        }
        by_series.insert(i, seen);
    }
    let mut missing = Vec::new();
    for (&(i, t), &v) in acked {
        match by_series.get(&i).and_then(|s| s.get(&t)) {
            Some(&got) => assert_eq!(got, v, "{when}: series {i} at {t}"),
            None => missing.push((i, t)),
        }
    }
    assert!(
        missing.is_empty(),
        "{when}: {} of {} acknowledged samples missing, first {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(10)]
    );
}

#[test]
fn acknowledged_samples_survive_slowdowns_and_an_outage() {
    let work = tempfile::tempdir().unwrap();
    let chain = S3Chain::start(work.path());
    let port = free_port();
    let mut strata = start_strata(&chain, port);

    let load = Arc::new(Load {
        phase: Mutex::new(Phase::Before),
        stop: AtomicBool::new(false),
        answers: Mutex::new(Vec::new()),
        acked: Mutex::new(BTreeMap::new()),
    });
    let sender = {
        let load = Arc::clone(&load);
        std::thread::spawn(move || run_sender(port, load))
    };
    let probe = {
        let load = Arc::clone(&load);
        std::thread::spawn(move || run_durable_probe(port, load))
    };
    let set_phase = |p| *load.phase.lock().unwrap() = p;

    std::thread::sleep(Duration::from_secs(10));
    // Three bursts of 503 SlowDown: half the store's answers for 5 s.
    set_phase(Phase::Slowdown);
    for _ in 0..3 {
        chain.slowdown(0.5);
        std::thread::sleep(Duration::from_secs(5));
        chain.slowdown(0.0);
        std::thread::sleep(Duration::from_secs(5));
    }
    set_phase(Phase::Between);
    std::thread::sleep(Duration::from_secs(5));
    set_phase(Phase::Outage);
    chain.outage(true);
    let outage_started = Instant::now();
    std::thread::sleep(OUTAGE);
    chain.outage(false);
    let healed = Instant::now();
    set_phase(Phase::After);

    // Recovery: the first Durable write sent after the store came back and
    // acknowledged.
    let recovered = loop {
        let first = load
            .answers
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.durable && a.sent >= healed)
            .find(|a| a.status.is_some_and(|s| (200..300).contains(&s)))
            .map(|a| a.answered);
        if let Some(at) = first {
            break at.duration_since(healed);
        }
        assert!(
            healed.elapsed() < Duration::from_secs(60),
            "no Durable write acknowledged within 60 s of the store's return"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(10));
    load.stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    probe.join().unwrap();

    // What the writer answered, by phase and kind.
    let answers = load.answers.lock().unwrap();
    let mut table: BTreeMap<(Phase, bool, Option<u16>), usize> = BTreeMap::new();
    for a in answers.iter() {
        *table.entry((a.phase, a.durable, a.status)).or_default() += 1;
    }
    for ((phase, durable, status), n) in &table {
        let kind = if *durable { "Durable" } else { "Applied" };
        eprintln!("{phase:?} {kind}: {status:?} x{n}");
    }
    let slowest_applied = answers
        .iter()
        .filter(|a| !a.durable)
        .map(|a| a.answered.duration_since(a.sent))
        .max()
        .unwrap_or_default();
    eprintln!(
        "recovery: first Durable write acknowledged {recovered:?} after the store came back; \
         slowest Applied answer {slowest_applied:?}; store requests: {}",
        chain.requests()
    );
    for a in answers.iter() {
        match a.status {
            Some(s) if (200..300).contains(&s) => {}
            Some(503) => assert!(a.retry_after, "a 503 without Retry-After"),
            other => panic!(
                "{:?}: a write answered {other:?}; only 2xx or 503 with Retry-After are documented",
                a.phase
            ),
        }
        // Sent after the outage began and answered before it ended.
        let inside = a.sent >= outage_started + Duration::from_secs(1) && a.answered < healed;
        assert!(
            !(a.durable && inside && a.status.is_some_and(|s| (200..300).contains(&s))),
            "a Durable write was acknowledged while the store was out"
        );
    }
    assert!(
        answers
            .iter()
            .any(|a| a.durable && a.phase == Phase::Outage && a.status == Some(503)),
        "no Durable write was refused during the outage: the outage did not reach the writer"
    );
    assert!(
        recovered < Duration::from_secs(30),
        "writes took {recovered:?} to recover"
    );
    drop(answers);

    let acked = load.acked.lock().unwrap().clone();
    assert!(
        acked.len() > SERIES * 500,
        "too few samples acknowledged: {}",
        acked.len()
    );
    assert_all_acked_there(port, &acked, "running writer");
    let status = strata.stop();
    assert!(status.success(), "graceful stop failed: {status:?}");
    strata = start_strata(&chain, port);
    assert_all_acked_there(port, &acked, "after a restart");
    drop(strata);
}
