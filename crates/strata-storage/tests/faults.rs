//! The storage under object-store faults (HTTP 500 and 503 answers,
//! connection resets, answers lost after the work was done, stalls,
//! black holes, latency), on uploads and then on reads:
//!
//! - a Durable write is acknowledged only once its samples are in the
//!   store (checked by opening a copy of the store taken at the moment of
//!   the acknowledgement, as a crash would leave it); otherwise it fails as
//!   `Unavailable` within `write_timeout`;
//! - Applied writes keep being answered; nothing panics;
//! - once the store heals, the same `Storage` takes Durable writes again,
//!   serves every acknowledged sample, and a reopening finds them all, once;
//! - queries over sealed data fail as `Unavailable` within `read_timeout`
//!   or answer the right data, never wrong data; head data is served from
//!   memory; after healing, queries answer again.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, Fault, Faults, IngestSeries, ManualClock, Op, Storage, StorageError,
    StorageSettings, SystemClock, When, Writer,
};

const SERIES: u32 = 20;
const HOUR: i64 = 3_600_000;
const WRITE_TIMEOUT: Duration = Duration::from_millis(1000);
const READ_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long after healing the first Durable write may take: SlateDB's
/// retry backoff reaches one second, plus scheduling slack.
const RECOVERS_WITHIN: Duration = Duration::from_secs(10);

fn settings() -> StorageSettings {
    StorageSettings {
        flush_interval: Duration::from_millis(50),
        seal_check_interval: Duration::from_secs(3600),
        write_timeout: WRITE_TIMEOUT,
        read_timeout: READ_TIMEOUT,
        ..StorageSettings::default()
    }
}

fn value(stream: &str, t: i64, i: u32) -> f64 {
    let s = if stream == "d" { 0.25 } else { 0.5 };
    (t % 1_000_000) as f64 + f64::from(i) * 1000.0 + s
}

/// One sample at `t` for each of the stream's series.
fn request(stream: &str, t: i64) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "fault_test"),
                Label::new("i", format!("{i:02}")),
                Label::new("stream", stream),
            ],
            samples: vec![(t, value(stream, t, i))],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

/// What was sent and what was acknowledged, per (stream, timestamp).
#[derive(Default)]
struct Ledger {
    sent: BTreeSet<(String, i64)>,
    acked: BTreeSet<(String, i64)>,
    durable: BTreeSet<(String, i64)>,
}

impl Ledger {
    async fn write(
        &mut self,
        db: &Writer,
        stream: &str,
        t: i64,
        durability: Durability,
    ) -> Result<(), StorageError> {
        self.sent.insert((stream.into(), t));
        let out = db.write(request(stream, t), durability).await?;
        assert_eq!(out.rejected, 0, "{out:?}");
        assert_eq!(out.appended + out.duplicates, SERIES as usize, "{out:?}");
        self.acked.insert((stream.into(), t));
        if durability == Durability::Durable {
            self.durable.insert((stream.into(), t));
        }
        Ok(())
    }

    /// Retries a write as a remote-write client does, until it succeeds.
    async fn write_until_ok(&mut self, db: &Writer, stream: &str, t: i64, d: Durability) {
        let started = Instant::now();
        loop {
            match self.write(db, stream, t, d).await {
                Ok(()) => return,
                Err(StorageError::Unavailable(e)) => assert!(
                    started.elapsed() < RECOVERS_WITHIN,
                    "still unavailable {:?} after healing: {e}",
                    started.elapsed()
                ),
                Err(e) => panic!("{e:?}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

type Found = BTreeMap<(String, String), Vec<(i64, f64)>>;

async fn read(db: &Storage, mint: i64, maxt: i64) -> Result<Found, StorageError> {
    let name = Matcher::new(MatchOp::Equal, "__name__", "fault_test").unwrap();
    let mut out = Found::new();
    for s in db.select(&[name], mint, maxt).await? {
        let label = |n: &str| {
            s.labels
                .iter()
                .find(|l| l.name == n)
                .map(|l| l.value.clone())
                .unwrap()
        };
        let samples = s.timestamps.iter().copied().zip(s.values.clone()).collect();
        out.insert((label("stream"), label("i")), samples);
    }
    Ok(out)
}

/// Every sample found was sent, once, with its value; every sample of
/// `must` is found.
fn check(found: &Found, ledger: &Ledger, must: &BTreeSet<(String, i64)>, what: &str) {
    for ((stream, i), samples) in found {
        let i: u32 = i.parse().unwrap();
        for w in samples.windows(2) {
            assert!(
                w[0].0 < w[1].0,
                "{what}: {stream}/{i} not strictly ascending: {w:?}"
            );
        }
        for &(t, v) in samples {
            assert!(
                ledger.sent.contains(&(stream.clone(), t)),
                "{what}: {stream}/{i} has a sample at {t} never sent"
            );
            assert_eq!(
                v.to_bits(),
                value(stream, t, i).to_bits(),
                "{what}: {stream}/{i}@{t}"
            );
        }
    }
    for (stream, t) in must {
        for i in 0..SERIES {
            let key = (stream.clone(), format!("{i:02}"));
            let has = found
                .get(&key)
                .is_some_and(|s| s.iter().any(|&(ft, _)| ft == *t));
            assert!(
                has,
                "{what}: acknowledged sample {stream}/{i}@{t} is missing"
            );
        }
    }
}

/// A copy of every object in `store` now: what a crash at this moment
/// would leave for the next writer.
async fn snapshot(store: &Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
    let copy: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let metas: Vec<_> = store.list(None).try_collect().await.unwrap();
    for m in metas {
        let bytes = store.get(&m.location).await.unwrap().bytes().await.unwrap();
        copy.put(&m.location, bytes.into()).await.unwrap();
    }
    copy
}

fn is_unavailable(r: &Result<(), StorageError>) -> bool {
    matches!(r, Err(StorageError::Unavailable(_)))
}

/// Puts fail with `fault`; `store_takes_puts` says whether the uploads
/// still reach the store (latency, answers lost) so Durable writes can
/// succeed.
async fn under_put_fault(fault: Fault, store_takes_puts: bool) {
    let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let faults = Faults::new();
    let clock = Arc::new(SystemClock);
    let db = Writer::open(
        faults.wrap(Arc::clone(&base)),
        "db",
        settings(),
        clock.clone(),
    )
    .await
    .unwrap();
    let t0 = clock.now_ms() - 60_000;
    let mut ledger = Ledger::default();
    ledger
        .write(&db, "d", t0, Durability::Durable)
        .await
        .unwrap();
    ledger
        .write(&db, "a", t0, Durability::Applied)
        .await
        .unwrap();

    faults.set_all(&Op::WRITES, fault, When::Always);
    // "d" sends Durable writes and retries one until it succeeds; "a"
    // sends Applied writes on other series meanwhile.
    let started = Instant::now();
    let durable = ledger.write(&db, "d", t0 + 1000, Durability::Durable).await;
    let took = started.elapsed();
    let mut crash_copies = Vec::new();
    if store_takes_puts {
        durable.as_ref().unwrap();
        crash_copies.push((snapshot(&base).await, ledger.durable.clone()));
    } else {
        assert!(is_unavailable(&durable), "{fault:?}: {durable:?}");
        assert!(
            took < WRITE_TIMEOUT + Duration::from_secs(2),
            "{fault:?}: the Durable write failed only after {took:?}"
        );
    }
    if let Fault::Latency(d) = fault {
        assert!(took >= d, "{took:?}: no latency added");
    }
    for k in 1..=3 {
        ledger
            .write(&db, "a", t0 + k * 1000, Durability::Applied)
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: Applied write failed: {e:?}"));
    }
    if !store_takes_puts {
        let again = ledger.write(&db, "d", t0 + 1000, Durability::Durable).await;
        assert!(is_unavailable(&again), "{fault:?}: {again:?}");
    }
    // Everything applied is served from memory meanwhile.
    let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
    check(&found, &ledger, &ledger.acked.clone(), "during the fault");
    assert!(faults.injected(Op::Put) > 0, "{fault:?} never fired");
    assert!(!db.is_fenced());

    faults.heal();
    let healed = Instant::now();
    ledger
        .write_until_ok(&db, "d", t0 + 1000, Durability::Durable)
        .await;
    eprintln!(
        "{fault:?} on puts: Durable write answered in {took:?} ({}); \
         Durable again {:?} after healing",
        if durable.is_ok() { "ok" } else { "unavailable" },
        healed.elapsed()
    );
    crash_copies.push((snapshot(&base).await, ledger.durable.clone()));
    ledger
        .write(&db, "a", t0 + 4000, Durability::Applied)
        .await
        .unwrap();
    ledger
        .write(&db, "d", t0 + 2000, Durability::Durable)
        .await
        .unwrap_or_else(|e| panic!("{fault:?}: a Durable write after healing failed: {e:?}"));
    crash_copies.push((snapshot(&base).await, ledger.durable.clone()));
    let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
    check(&found, &ledger, &ledger.acked.clone(), "after healing");
    db.close().await.unwrap();

    // A clean reopening finds every acknowledged sample, once.
    let db = Writer::open(Arc::clone(&base), "db", settings(), clock.clone())
        .await
        .unwrap();
    let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
    check(&found, &ledger, &ledger.acked.clone(), "reopened");
    db.close().await.unwrap();

    // So does a writer after a crash at any Durable acknowledgement.
    for (n, (copy, durable)) in crash_copies.into_iter().enumerate() {
        let db = Writer::open(copy, "db", settings(), clock.clone())
            .await
            .unwrap();
        let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
        check(&found, &ledger, &durable, &format!("crash copy {n}"));
        db.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_http_500() {
    under_put_fault(Fault::Status(500), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_http_503() {
    under_put_fault(Fault::Status(503), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_connection_reset() {
    under_put_fault(Fault::Reset, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_stall() {
    under_put_fault(Fault::Stall, false).await;
}

/// Uploads sent into a black hole never answer, even after it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_black_hole() {
    under_put_fault(Fault::BlackHole, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_answer_lost_after_upload() {
    under_put_fault(Fault::AnswerLost, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_latency() {
    under_put_fault(Fault::Latency(Duration::from_millis(200)), true).await;
}

/// A store that answers 503 to a third of all requests, of every kind:
/// writes and reads go on, some failing, none wrong; nothing acknowledged
/// as Durable is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flaky_store() {
    let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let faults = Faults::with_seed(7);
    let clock = Arc::new(SystemClock);
    let db = Writer::open(
        faults.wrap(Arc::clone(&base)),
        "db",
        settings(),
        clock.clone(),
    )
    .await
    .unwrap();
    let t0 = clock.now_ms() - 60_000;
    let mut ledger = Ledger::default();
    faults.set_all(&Op::ALL, Fault::Status(503), When::Probability(0.33));
    let (mut ok, mut failed) = (0, 0);
    let mut k = 0;
    for _ in 0..30 {
        match ledger
            .write(&db, "d", t0 + k * 1000, Durability::Durable)
            .await
        {
            Ok(()) => {
                ok += 1;
                k += 1;
            }
            // Retried as is, as a client would.
            Err(StorageError::Unavailable(_)) => failed += 1,
            Err(e) => panic!("{e:?}"),
        }
        ledger
            .write(&db, "a", t0 + k * 1000, Durability::Applied)
            .await
            .unwrap();
    }
    eprintln!(
        "flaky store: {ok} Durable writes acknowledged, {failed} answered unavailable, {} faults injected",
        faults.injected_total()
    );
    assert!(ok > 0, "no Durable write got through a 1-in-3 flaky store");
    assert!(faults.injected(Op::Put) > 0);
    let crash_copy = snapshot(&base).await;
    faults.heal();
    let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
    check(&found, &ledger, &ledger.acked.clone(), "after healing");
    db.close().await.unwrap();
    for (store, must, what) in [
        (base, &ledger.acked, "reopened"),
        (crash_copy, &ledger.durable, "crash copy"),
    ] {
        let db = Writer::open(store, "db", settings(), clock.clone())
            .await
            .unwrap();
        let found = read(&db, t0 - HOUR, t0 + HOUR).await.unwrap();
        check(&found, &ledger, must, what);
        db.close().await.unwrap();
    }
}

/// A store holding one sealed bucket of `fault_test` samples (40 series,
/// one an every 30 s), written with `clock`, which ends past the seal.
async fn sealed_store(clock: &Arc<ManualClock>, t0: i64) -> (Arc<dyn ObjectStore>, Ledger) {
    let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let db = Writer::open(Arc::clone(&base), "db", settings(), clock.clone())
        .await
        .unwrap();
    let mut ledger = Ledger::default();
    for stream in ["a", "d"] {
        for k in 0..120 {
            ledger
                .write(&db, stream, t0 + k * 30_000, Durability::Applied)
                .await
                .unwrap();
        }
    }
    // Later series of another name, so the bucket's chunks fill several of
    // SlateDB's 64 KiB blocks and those of `fault_test` are not in a block
    // a reopening reads (and caches) for its own keys.
    let pad: Vec<IngestSeries> = (0..2000i64)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "pad"),
                Label::new("i", format!("{i:04}")),
            ],
            samples: (0..120)
                .map(|k| (t0 + k * 30_000, ((i * 7919 + k * 104_729) % 100_003) as f64))
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    db.write(pad, Durability::Applied).await.unwrap();
    clock.set(t0 + HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR));
    // Closing writes the memtable to SSTs: a reopening reads from the store.
    db.close().await.unwrap();
    (base, ledger)
}

/// Reads fail with `fault`; `store_answers` says whether reads still get
/// their data (latency).
async fn under_get_fault(fault: Fault, store_answers: bool) {
    let now = SystemClock.now_ms();
    // SlateDB expires keys by the real clock, so the data must be recent.
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let (base, mut ledger) = sealed_store(&clock, t0).await;
    let sealed = ledger.acked.clone();

    let faults = Faults::new();
    let db = Writer::open(faults.wrap(base), "db", settings(), clock.clone())
        .await
        .unwrap();
    // Samples of the next bucket, in the head.
    let fresh = t0 + HOUR + 60_000;
    ledger
        .write(&db, "a", fresh, Durability::Durable)
        .await
        .unwrap();
    let head_only: BTreeSet<_> = [("a".to_string(), fresh)].into();

    faults.set_all(&[Op::Get, Op::Head], fault, When::Always);
    let started = Instant::now();
    let during = read(&db, t0, t0 + HOUR - 1).await;
    let took = started.elapsed();
    match &during {
        Ok(found) => {
            assert!(
                store_answers,
                "{fault:?}: a read succeeded: {} series",
                found.len()
            );
            check(found, &ledger, &sealed, "during the fault");
            if let Fault::Latency(d) = fault {
                assert!(took >= d, "{took:?}: no latency added");
            }
        }
        Err(e) => {
            assert!(!store_answers, "{fault:?}: {e:?}");
            assert!(matches!(e, StorageError::Unavailable(_)), "{e:?}");
            assert!(
                took < READ_TIMEOUT + Duration::from_secs(2),
                "{fault:?}: the read failed only after {took:?}"
            );
        }
    }
    assert!(
        faults.injected(Op::Get) + faults.injected(Op::Head) > 0,
        "{fault:?} never fired"
    );
    // Head data needs no read from the store.
    let found = read(&db, t0 + HOUR, t0 + 2 * HOUR).await.unwrap();
    check(&found, &ledger, &head_only, "head during the fault");
    // Writes go on.
    ledger
        .write(&db, "a", fresh + 1000, Durability::Durable)
        .await
        .unwrap();

    faults.heal();
    let started = Instant::now();
    let found = loop {
        match read(&db, t0, t0 + 2 * HOUR).await {
            Ok(found) => break found,
            Err(e) => assert!(
                started.elapsed() < RECOVERS_WITHIN,
                "reads still fail {:?} after healing: {e:?}",
                started.elapsed()
            ),
        }
    };
    check(&found, &ledger, &ledger.acked.clone(), "after healing");
    db.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_http_500() {
    under_get_fault(Fault::Status(500), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_http_503() {
    under_get_fault(Fault::Status(503), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_connection_reset() {
    under_get_fault(Fault::Reset, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_stall() {
    under_get_fault(Fault::Stall, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_black_hole() {
    under_get_fault(Fault::BlackHole, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_latency() {
    under_get_fault(Fault::Latency(Duration::from_millis(100)), true).await;
}
