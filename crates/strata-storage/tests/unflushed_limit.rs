//! `max_unflushed_bytes` bounds what SlateDB holds in memory: once its
//! memtables and WAL buffer reach it (here because the object store takes
//! no uploads), writes wait, and one that waits past `write_timeout`
//! fails as unavailable with a message naming the limit, not the store
//! alone. Nothing accepted is lost: once the store takes uploads again,
//! writes go on and every acknowledged sample reads back.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, Fault, Faults, IngestSeries, ManualClock, Op, StorageError, StorageSettings,
    SystemClock, When, Writer,
};

const HOUR: i64 = 3_600_000;
const SERIES: u32 = 2_000;
/// Samples per series in one request: about 1 MB of log record each.
const PER_REQUEST: i64 = 40;

/// `SERIES` gauges, `PER_REQUEST` samples each from `t0`.
fn request(t0: i64) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "unflushed_test"),
                Label::new("i", format!("{i:04}")),
            ],
            samples: (0..PER_REQUEST)
                .map(|k| {
                    let t = t0 + k * 1_000;
                    (t, (t as f64 * 0.37 + f64::from(i)).sin() * 1e9)
                })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_at_the_unflushed_limit_fail_by_name_and_lose_nothing() {
    let faults = Faults::new();
    let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR;
    let settings = StorageSettings {
        flush_interval: Duration::from_millis(50),
        seal_check_interval: Duration::from_secs(3600),
        write_timeout: Duration::from_secs(1),
        memtable_bytes: 1 << 20,
        max_unflushed_bytes: 2 << 20,
        ..StorageSettings::default()
    };
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(faults.wrap(base), "db", settings, clock)
        .await
        .unwrap();

    // No upload gets through: the WAL buffer and the memtables fill.
    faults.set_all(&Op::WRITES, Fault::Stall, When::Always);
    let mut acked = Vec::new();
    let mut refused = None;
    for r in 0..20 {
        let start = t0 + r * PER_REQUEST * 1_000;
        match db.write(request(start), Durability::Applied).await {
            Ok(out) => {
                assert_eq!(out.appended, SERIES as usize * PER_REQUEST as usize);
                acked.push(start);
            }
            Err(StorageError::Unavailable(e)) => {
                refused = Some((start, e));
                break;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let (retry_at, message) = refused.expect("writes past 2 MiB unflushed must wait and fail");
    assert!(
        !acked.is_empty(),
        "writes under the limit are applied at once"
    );
    assert!(
        message.contains("storage.max_unflushed_bytes"),
        "the message names the limit: {message}"
    );
    assert!(db.unflushed_bytes() >= 2 << 20, "{}", db.unflushed_bytes());

    // The store takes uploads again: the refused request, retried as a
    // sender would, is written, and nothing acknowledged is missing.
    faults.heal();
    let started = Instant::now();
    loop {
        match db.write(request(retry_at), Durability::Durable).await {
            Ok(_) => break,
            Err(StorageError::Unavailable(e)) => {
                assert!(started.elapsed() < Duration::from_secs(30), "{e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    acked.push(retry_at);
    let name = Matcher::new(MatchOp::Equal, "__name__", "unflushed_test").unwrap();
    let found = db.select(&[name], t0, t0 + HOUR).await.unwrap();
    assert_eq!(found.len(), SERIES as usize);
    for s in &found {
        for &start in &acked {
            for k in 0..PER_REQUEST {
                let t = start + k * 1_000;
                assert!(
                    s.timestamps.binary_search(&t).is_ok(),
                    "{:?}: acknowledged sample at {t} missing",
                    s.labels
                );
            }
        }
    }
    db.close().await.unwrap();
}
