//! A writer killed with SIGKILL loses no Durable write and at most the last
//! flush interval of Applied writes, and recovery invents nothing.
//!
//! The test re-runs its own binary as a child (`child_ingest`, selected by
//! `STRATA_CRASH_CHILD_DIR`) that ingests into a `file://` store and logs
//! every acknowledged request to an ack file; the parent kills it at a random
//! moment, reopens the store and compares what it finds with what was sent
//! and acknowledged. `STRATA_CRASH_ROUNDS` sets the number of kills (3).
//!
//! A second child (`child_churn`, `STRATA_CRASH_CHURN_DIR`) writes pods that
//! come and go over one-second buckets, so seals drop series from the head
//! and bring them back, while it is killed.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    open_object_store, Clock, Durability, IngestSeries, StorageSettings, SystemClock, Writer,
};

const CHILD_ENV: &str = "STRATA_CRASH_CHILD_DIR";
const CHURN_ENV: &str = "STRATA_CRASH_CHURN_DIR";
const SERIES_PER_REQUEST: u32 = 100;
const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// The most wall-clock time before the kill whose Applied acks may be lost:
/// two flush intervals plus scheduling slack on a loaded machine.
const MAX_LOSS_SPAN_MS: i64 = 500;

/// Two request streams on disjoint series: `a` writes at Applied only; `d`
/// alternates Durable and Applied.
const STREAMS: [&str; 2] = ["a", "d"];

fn settings() -> StorageSettings {
    StorageSettings {
        flush_interval: FLUSH_INTERVAL,
        ..StorageSettings::default()
    }
}

fn store_url(dir: &Path) -> String {
    format!("file://{}", dir.join("store").display())
}

/// The value series `i` of `stream` gets in request `seq`: bit patterns that
/// exercise the codec (NaN payloads, -0.0, subnormals, big integers).
fn value(stream: usize, seq: u64, i: u32) -> f64 {
    let mut x = (seq << 20) ^ (u64::from(i) << 4) ^ stream as u64;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    match seq % 7 {
        0 => f64::from_bits(x),
        1 => -0.0,
        2 => (x % 1000) as f64,
        3 => f64::from_bits(0x7ff0_0000_0000_0002),
        4 => f64::from_bits(x & 0x000f_ffff_ffff_ffff),
        _ => seq as f64 * 0.25 + f64::from(i),
    }
}

fn labels(stream: &str, i: u32) -> Vec<Label> {
    vec![
        Label::new("__name__", "crash_test"),
        Label::new("i", format!("{i:03}")),
        Label::new("stream", stream),
    ]
}

/// Request `seq` of a stream: one sample per series at `t0 + seq`.
fn request(stream: usize, t0: i64, seq: u64) -> Vec<IngestSeries> {
    let t = t0 + seq as i64;
    (0..SERIES_PER_REQUEST)
        .map(|i| IngestSeries {
            labels: labels(STREAMS[stream], i),
            samples: vec![(t, value(stream, seq, i))],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

fn durability(stream: usize, seq: u64) -> Durability {
    if stream == 1 && seq % 2 == 0 {
        Durability::Durable
    } else {
        Durability::Applied
    }
}

/// A child's folder (from `env`, set by the parent; `None`: not a child)
/// and its runtime.
fn child_setup(env: &str) -> Option<(std::path::PathBuf, tokio::runtime::Runtime)> {
    let dir = std::env::var(env).ok()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    Some((Path::new(&dir).to_path_buf(), rt))
}

/// The child: ingests until killed. Not a test of its own; it returns at
/// once unless the parent set `STRATA_CRASH_CHILD_DIR`.
#[test]
fn child_ingest() {
    let Some((dir, rt)) = child_setup(CHILD_ENV) else {
        return;
    };
    rt.block_on(async move {
        let loc = open_object_store(&store_url(&dir), &Default::default()).unwrap();
        let db = Arc::new(
            Writer::open(loc.store, &loc.path, settings(), Arc::new(SystemClock))
                .await
                .unwrap(),
        );
        // SlateDB expires keys by the real clock, so write near the real now.
        let t0 = SystemClock.now_ms();
        let acks = Arc::new(parking_lot::Mutex::new(
            std::fs::File::create(dir.join("acks")).unwrap(),
        ));
        writeln!(acks.lock(), "t0 {t0}").unwrap();
        let tasks: Vec<_> = (0..STREAMS.len())
            .map(|stream| {
                let db = Arc::clone(&db);
                let acks = Arc::clone(&acks);
                tokio::spawn(async move {
                    for seq in 0u64.. {
                        let d = durability(stream, seq);
                        let out = db.write(request(stream, t0, seq), d).await.unwrap();
                        assert_eq!(out.appended, SERIES_PER_REQUEST as usize);
                        let now = SystemClock.now_ms();
                        // Written to the OS at once: it survives SIGKILL.
                        writeln!(
                            acks.lock(),
                            "ack {stream} {seq} {} {} {now}",
                            u8::from(d == Durability::Durable),
                            t0 + seq as i64,
                        )
                        .unwrap();
                        if seq % 16 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[derive(Debug)]
struct Ack {
    durable: bool,
    at_ms: i64,
}

struct AckLog {
    t0: i64,
    /// Per stream: seq -> ack.
    acks: Vec<BTreeMap<u64, Ack>>,
}

fn read_acks(dir: &Path) -> AckLog {
    let text = std::fs::read_to_string(dir.join("acks")).unwrap();
    let mut log = AckLog {
        t0: 0,
        acks: STREAMS.iter().map(|_| BTreeMap::new()).collect(),
    };
    // The kill can cut the last line short: only whole lines count.
    for line in text.split_inclusive('\n') {
        let Some(line) = line.strip_suffix('\n') else {
            break;
        };
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["t0", t0] => log.t0 = t0.parse().unwrap(),
            ["ack", stream, seq, durable, _t, at] => {
                log.acks[stream.parse::<usize>().unwrap()].insert(
                    seq.parse().unwrap(),
                    Ack {
                        durable: *durable == "1",
                        at_ms: at.parse().unwrap(),
                    },
                );
            }
            _ => {}
        }
    }
    log
}

/// A pseudo-random number from the clock, for the kill moment.
fn jitter_ms(round: u32, range: u64) -> u64 {
    let seed = strata_storage::SystemClock.now_ms() as u64;
    let mut x = seed ^ (u64::from(round) << 32);
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 17) % range
}

struct RoundResult {
    acked: usize,
    lost_applied_requests: usize,
    lost_span_ms: i64,
}

/// Runs this binary's test `name` as a child writing into `dir` (named by
/// the environment variable `env`), and waits until it has acknowledged
/// its first requests.
async fn start_child(name: &str, env: &str, dir: &Path) -> std::process::Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::metadata(dir.join("acks")).map_or(0, |m| m.len()) < 64 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "child never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "child exited early");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child
}

async fn one_round(round: u32) -> RoundResult {
    let dir = tempfile::tempdir().unwrap();
    // Once the child is ingesting, kill it 1–3 s later.
    let mut child = start_child("child_ingest", CHILD_ENV, dir.path()).await;
    let delay = Duration::from_millis(1000 + jitter_ms(round, 2000));
    tokio::time::sleep(delay).await;
    child.kill().unwrap(); // SIGKILL
    let killed_at = SystemClock.now_ms();
    child.wait().unwrap();

    let log = read_acks(dir.path());
    let loc = open_object_store(&store_url(dir.path()), &Default::default()).unwrap();
    let db = Writer::open(loc.store, &loc.path, settings(), Arc::new(SystemClock))
        .await
        .unwrap();
    let found = db
        .select(
            &[Matcher::new(MatchOp::Equal, "__name__", "crash_test").unwrap()],
            log.t0 - 1,
            i64::MAX / 2,
        )
        .await
        .unwrap();

    // Per stream, per request seq: how many of its series hold the sample.
    let mut present: Vec<BTreeMap<u64, u32>> = STREAMS.iter().map(|_| BTreeMap::new()).collect();
    for s in &found {
        let stream_name = &s.labels.iter().find(|l| l.name == "stream").unwrap().value;
        let stream = STREAMS.iter().position(|x| x == stream_name).unwrap();
        let i: u32 = s
            .labels
            .iter()
            .find(|l| l.name == "i")
            .unwrap()
            .value
            .parse()
            .unwrap();
        assert_eq!(*s.labels, *labels(STREAMS[stream], i));
        for (&t, &v) in s.timestamps.iter().zip(&s.values) {
            let seq = u64::try_from(t - log.t0).expect("sample before t0 was never sent");
            let want = value(stream, seq, i);
            assert_eq!(
                v.to_bits(),
                want.to_bits(),
                "stream {stream_name} series {i} seq {seq}: value not as sent"
            );
            *present[stream].entry(seq).or_default() += 1;
        }
    }

    let mut acked = 0;
    let mut lost_applied = Vec::new();
    for (stream, acks) in log.acks.iter().enumerate() {
        let name = STREAMS[stream];
        // Only the request in flight at the kill may be present unacked.
        let last_sent = acks.keys().next_back().map_or(0, |&s| s + 1);
        for (&seq, &n) in &present[stream] {
            assert!(seq <= last_sent, "stream {name}: seq {seq} was never sent");
            assert_eq!(n, SERIES_PER_REQUEST, "stream {name}: seq {seq} is torn");
        }
        // The log is written in order, so what survives is a prefix.
        let kept = present[stream].len() as u64;
        assert!(
            present[stream].keys().copied().eq(0..kept),
            "stream {name}: surviving requests are not a prefix"
        );
        for (&seq, ack) in acks {
            acked += 1;
            if present[stream].contains_key(&seq) {
                continue;
            }
            assert!(
                !ack.durable,
                "stream {name}: Durable request {seq} acknowledged at {} is lost",
                ack.at_ms
            );
            lost_applied.push(ack.at_ms);
        }
    }
    let lost_span_ms = lost_applied
        .iter()
        .min()
        .map_or(0, |&first| killed_at - first);
    db.close().await.unwrap();
    RoundResult {
        acked,
        lost_applied_requests: lost_applied.len(),
        lost_span_ms,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_loses_at_most_the_last_flush_interval() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let rounds: u32 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let mut worst = 0;
    let mut lost_total = 0;
    for round in 0..rounds {
        let r = one_round(round).await;
        eprintln!(
            "round {round}: {} requests acknowledged, {} Applied requests ({} samples) lost, \
             first lost ack {} ms before the kill",
            r.acked,
            r.lost_applied_requests,
            r.lost_applied_requests * SERIES_PER_REQUEST as usize,
            r.lost_span_ms
        );
        assert!(
            r.lost_span_ms <= MAX_LOSS_SPAN_MS,
            "round {round}: Applied acks lost over {} ms (flush interval {:?})",
            r.lost_span_ms,
            FLUSH_INTERVAL
        );
        worst = worst.max(r.lost_span_ms);
        lost_total += r.lost_applied_requests;
    }
    eprintln!(
        "{rounds} rounds: {lost_total} Applied requests lost in all, longest span {worst} ms"
    );
}

/// Pods per generation of the churn child, and how long a generation
/// lives: three generations take turns, so each pod is gone for two
/// seconds (two sealed buckets: dropped from the head) and comes back.
const PODS: u32 = 40;
const GENERATION_MS: i64 = 1000;

fn churn_settings() -> StorageSettings {
    StorageSettings {
        flush_interval: FLUSH_INTERVAL,
        bucket_duration: Duration::from_secs(1),
        block_duration: Duration::ZERO,
        seal_grace: Duration::from_millis(100),
        seal_check_interval: Duration::from_millis(50),
        seal_spread: Duration::ZERO,
        ..StorageSettings::default()
    }
}

fn pod_labels(generation: i64, pod: u32) -> Vec<Label> {
    vec![
        Label::new("__name__", "churn_test"),
        Label::new("pod", format!("g{generation}-{pod:02}")),
    ]
}

fn pod_value(generation: i64, pod: u32, t: i64) -> f64 {
    (t * 100 + generation * 1000 + i64::from(pod)) as f64
}

/// The churn child: every 10 ms a Durable request with one sample of each
/// pod of the current generation, at the real time; writes until killed.
#[test]
fn child_churn() {
    let Some((dir, rt)) = child_setup(CHURN_ENV) else {
        return;
    };
    rt.block_on(async move {
        let loc = open_object_store(&store_url(&dir), &Default::default()).unwrap();
        let db = Writer::open(
            loc.store,
            &loc.path,
            churn_settings(),
            Arc::new(SystemClock),
        )
        .await
        .unwrap();
        let mut acks = std::fs::File::create(dir.join("acks")).unwrap();
        let mut last = 0;
        loop {
            let t = SystemClock.now_ms().max(last + 1);
            last = t;
            let generation = (t / GENERATION_MS) % 3;
            let request = (0..PODS)
                .map(|pod| IngestSeries {
                    labels: pod_labels(generation, pod),
                    samples: vec![(t, pod_value(generation, pod, t))],
                    exemplars: Vec::new(),
                    histograms: Vec::new(),
                })
                .collect();
            let out = db.write(request, Durability::Durable).await.unwrap();
            assert_eq!(out.appended, PODS as usize, "{out:?}");
            let returned = db.stats().series_returned.load(Ordering::Relaxed);
            writeln!(acks, "ack {t} {generation} {returned}").unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_with_series_dropped_and_returning_loses_no_durable_write() {
    if std::env::var_os(CHILD_ENV).is_some() || std::env::var_os(CHURN_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_child("child_churn", CHURN_ENV, dir.path()).await;
    // Long enough for every generation to go and come back.
    tokio::time::sleep(Duration::from_millis(5000 + jitter_ms(7, 1000))).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let text = std::fs::read_to_string(dir.path().join("acks")).unwrap();
    let mut returned = 0u64;
    let acked: Vec<(i64, i64)> = text
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                ["ack", t, g, r] => {
                    returned = r.parse().unwrap();
                    Some((t.parse().unwrap(), g.parse().unwrap()))
                }
                _ => None,
            }
        })
        .collect();
    assert!(
        returned > 0,
        "no series was dropped and came back before the kill"
    );
    let generations: std::collections::BTreeSet<i64> = acked.iter().map(|a| a.1).collect();
    assert_eq!(generations.len(), 3, "every generation ran");

    let loc = open_object_store(&store_url(dir.path()), &Default::default()).unwrap();
    let db = Writer::open(
        loc.store,
        &loc.path,
        churn_settings(),
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    // The head holds the pods with unsealed samples: the last generation
    // or two, not all three.
    assert!(
        db.head().num_series() <= 2 * PODS as usize,
        "{}",
        db.head().num_series()
    );
    let found = db
        .select(
            &[Matcher::new(MatchOp::Equal, "__name__", "churn_test").unwrap()],
            acked[0].0 - 60_000,
            i64::MAX / 2,
        )
        .await
        .unwrap();
    // One series per label set, each value as sent.
    assert_eq!(found.len(), 3 * PODS as usize, "one series per pod");
    let mut held: BTreeMap<(i64, i64), u32> = BTreeMap::new();
    for s in &found {
        let pod_label = &s.labels.iter().find(|l| l.name == "pod").unwrap().value;
        let (g, pod) = pod_label[1..].split_once('-').unwrap();
        let (g, pod): (i64, u32) = (g.parse().unwrap(), pod.parse().unwrap());
        assert_eq!(*s.labels, *pod_labels(g, pod));
        for (&t, &v) in s.timestamps.iter().zip(&s.values) {
            assert_eq!(v, pod_value(g, pod, t), "{pod_label} at {t}");
            *held.entry((t, g)).or_default() += 1;
        }
    }
    // Every acknowledged (Durable) request is there, whole.
    for a in &acked {
        assert_eq!(
            held.get(a),
            Some(&PODS),
            "request at {} (generation {}) lost or torn",
            a.0,
            a.1
        );
    }
    // Only the request in flight at the kill may be there unacknowledged.
    let last = acked.last().unwrap().0;
    for (t, g) in held.keys() {
        assert!(
            acked.binary_search(&(*t, *g)).is_ok() || *t > last,
            "{t} was never acked"
        );
    }
    eprintln!(
        "churn: {} Durable requests acknowledged and found; {returned} series came back before the kill",
        acked.len(),
    );
    db.close().await.unwrap();
}
