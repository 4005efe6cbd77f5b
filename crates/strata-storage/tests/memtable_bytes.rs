//! `memtable_bytes` sizes SlateDB's memtable: past it, the writes go to
//! the object store as level-0 tables while the writer runs, and a value
//! too small to be sensible is refused by name. `max_unflushed_bytes`
//! bounds the memtables together: a value under two memtables is refused,
//! and the figure it bounds is SlateDB's own.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{Clock, Durability, IngestSeries, ManualClock, StorageSettings, Writer};

const HOUR: i64 = 3_600_000;
const SERIES: u32 = 2_000;

/// `SERIES` gauges with full-precision values, `n` samples each from `t0`.
fn data(t0: i64, n: i64, round: u32) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "node_memory_free_bytes"),
                Label::new("instance", format!("host-{i}")),
            ],
            samples: (0..n)
                .map(|k| {
                    let x = f64::from(i) + f64::from(round) * 1e3 + k as f64 * 0.37;
                    (t0 + k * 15_000, x.sin() * 1e9)
                })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

/// Level-0 tables SlateDB has written under `db`.
async fn tables(store: &Arc<dyn ObjectStore>) -> usize {
    let prefix = Path::from("db/compacted");
    let mut list = store.list(Some(&prefix));
    let mut n = 0;
    while let Some(meta) = list.next().await {
        if meta.unwrap().location.as_ref().ends_with(".sst") {
            n += 1;
        }
    }
    n
}

/// Writes about `rounds` × 2,000 series × 40 samples through a writer with
/// this memtable size and counts the tables SlateDB wrote meanwhile.
async fn tables_after_writes(memtable_bytes: u64, rounds: u32) -> usize {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR;
    let settings = StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        memtable_bytes,
        ..StorageSettings::default()
    };
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(Arc::clone(&store), "db", settings, clock)
        .await
        .unwrap();
    for round in 0..rounds {
        let start = t0 + i64::from(round) * 40 * 15_000;
        db.write(data(start, 40, round), Durability::Durable)
            .await
            .unwrap();
    }
    // The memtable flush runs beside the writes: give it a moment.
    let mut n = tables(&store).await;
    for _ in 0..50 {
        if n > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        n = tables(&store).await;
    }
    // What a table holds is read back as well as the head's copy.
    let read = db
        .select(
            &[Matcher::new(MatchOp::Equal, "instance", "host-7").unwrap()],
            t0,
            t0 + HOUR,
        )
        .await
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].timestamps.len(), 40 * rounds as usize);
    db.close().await.unwrap();
    n
}

#[tokio::test]
async fn a_small_memtable_is_written_as_tables_while_the_writer_runs() {
    // About 4 MB of log records: past a 1 MiB memtable several times, far
    // from SlateDB's 64 MiB default.
    let small = tables_after_writes(1 << 20, 5).await;
    let default = tables_after_writes(StorageSettings::default().memtable_bytes, 5).await;
    assert!(small >= 2, "1 MiB memtable: {small} level-0 tables");
    assert_eq!(default, 0, "64 MiB memtable: {default} level-0 tables");
}

/// The error opening a writer with `settings`, which must be refused.
async fn refusal(settings: StorageSettings) -> String {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    Writer::open(store, "db", settings, Arc::new(ManualClock::new(0)))
        .await
        .err()
        .expect("the settings must be refused")
        .to_string()
}

#[tokio::test]
async fn a_memtable_under_a_mebibyte_is_refused_by_name() {
    let err = refusal(StorageSettings {
        memtable_bytes: 64 << 10,
        ..StorageSettings::default()
    })
    .await;
    assert!(err.contains("memtable_bytes: must be at least"), "{err}");
}

#[tokio::test]
async fn an_unflushed_limit_under_two_memtables_is_refused_by_name() {
    let err = refusal(StorageSettings {
        memtable_bytes: 4 << 20,
        max_unflushed_bytes: 6 << 20,
        ..StorageSettings::default()
    })
    .await;
    assert!(
        err.contains("max_unflushed_bytes: must be at least"),
        "{err}"
    );
}

#[tokio::test]
async fn the_writer_sees_slatedbs_unflushed_bytes_the_background_waits_on() {
    // The seal, spills and compaction wait on this figure: it must be
    // SlateDB's own, growing with writes its memtable holds and back to
    // nothing once the memtable is a table.
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR;
    let settings = StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    };
    let db = Writer::open(store, "db", settings, Arc::new(ManualClock::new(t0)))
        .await
        .unwrap();
    // SlateDB takes the figure as a write begins: each look below is
    // after a small write, which sees what came before it.
    let small = |k: i64| data(t0 + (40 + k) * 15_000, 1, 1);
    db.write(data(t0, 40, 0), Durability::Durable)
        .await
        .unwrap();
    db.write(small(0), Durability::Durable).await.unwrap();
    let held = db.unflushed_bytes();
    assert!(
        held > 100_000,
        "unflushed after ~1 MB of log records: {held}"
    );
    db.flush_memtable_now().await.unwrap();
    db.write(small(1), Durability::Durable).await.unwrap();
    db.write(small(2), Durability::Durable).await.unwrap();
    let after = db.unflushed_bytes();
    assert!(
        after < held / 4,
        "unflushed after the memtable was written: {after} (before {held})"
    );
    db.close().await.unwrap();
}
