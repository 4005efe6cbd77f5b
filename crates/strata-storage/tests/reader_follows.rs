//! A reader node on the writer's path sees acknowledged samples within a
//! second, follows seals, and refuses writes.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, Storage, StorageSettings,
    SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;

fn series(i: u32, samples: Vec<(i64, f64)>) -> IngestSeries {
    IngestSeries {
        labels: vec![Label::new("__name__", "m"), Label::new("i", i.to_string())],
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

async fn count(s: &Storage, mint: i64, maxt: i64) -> usize {
    let m = Matcher::new(MatchOp::Equal, "__name__", "m").unwrap();
    s.select(&[m], mint, maxt)
        .await
        .unwrap()
        .iter()
        .map(|x| x.timestamps.len())
        .sum()
}

/// A writer on a fresh in-memory store, its clock at the start of the hour
/// two hours ago (`t0`), seals only when asked; `spill_min_samples` as
/// given.
async fn writer_at_t0(
    spill_min_samples: u32,
) -> (
    Arc<dyn ObjectStore>,
    StorageSettings,
    Arc<ManualClock>,
    Writer,
    i64,
) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 2 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let settings = StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        spill_min_samples,
        ..StorageSettings::default()
    };
    let writer = Writer::open(Arc::clone(&store), "db", settings.clone(), clock.clone())
        .await
        .unwrap();
    (store, settings, clock, writer, t0)
}

/// A reader node on the writer's path, polling every 50 ms.
async fn open_reader(
    store: &Arc<dyn ObjectStore>,
    settings: StorageSettings,
    clock: &Arc<ManualClock>,
) -> Storage {
    let reader_settings = ReaderSettings {
        poll_interval: Duration::from_millis(50),
        ..ReaderSettings::default()
    };
    Storage::open_reader(
        Arc::clone(store),
        "db",
        settings,
        reader_settings,
        clock.clone(),
    )
    .await
    .unwrap()
}

/// Waits (at most 5 s) until the reader has followed the seal of `bucket`.
async fn wait_sealed(reader: &Storage, bucket: i64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while reader.head().sealed_through() != Some(bucket) {
        assert!(Instant::now() < deadline, "reader never saw the seal");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_follows_writer() {
    let (store, settings, clock, writer, t0) =
        writer_at_t0(StorageSettings::default().spill_min_samples).await;
    writer
        .write(vec![series(0, vec![(t0, 1.0)])], Durability::Durable)
        .await
        .unwrap();
    let reader = open_reader(&store, settings, &clock).await;
    assert_eq!(
        count(&reader, t0, t0 + 3 * HOUR).await,
        1,
        "recovered at open"
    );

    // Freshness: an Applied write shows up on the reader.
    let mut worst = Duration::ZERO;
    for k in 1..=10 {
        let t = t0 + k * 60_000;
        writer
            .write(vec![series(0, vec![(t, k as f64)])], Durability::Applied)
            .await
            .unwrap();
        let acked = Instant::now();
        while count(&reader, t, t).await == 0 {
            assert!(
                acked.elapsed() < Duration::from_secs(5),
                "sample {k} never reached the reader"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        worst = worst.max(acked.elapsed());
    }
    eprintln!("worst freshness over 10 writes: {worst:?}");

    // A seal on the writer: the reader reads the sealed bucket from the store.
    clock.set(t0 + HOUR + 6 * 60_000);
    writer.seal_due_now().await.unwrap();
    writer.flush().await.unwrap();
    wait_sealed(&reader, t0 / HOUR).await;
    assert_eq!(count(&reader, t0, t0 + 3 * HOUR).await, 11);

    reader.close().await.unwrap();
    writer.close().await.unwrap();
}

/// A reader opened on a writer whose head spilled segments reads each
/// sample once: the segments from the store, the rest from the log, and
/// after the seal from the chunk keys that list them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_reads_spilled_segments_once() {
    let (store, settings, clock, writer, t0) = writer_at_t0(160).await;
    // 4 series × 340 samples at 15 s: 240 in the first bucket, spilled
    // (each series' threshold is between 160 and 240), and 100 in the
    // second, too few to freeze.
    for part in 0..4 {
        let req = (0..4)
            .map(|i| {
                let samples = (part * 85..(part + 1) * 85)
                    .map(|k| (t0 + k * 15_000, (k * i64::from(i)) as f64))
                    .collect();
                series(i, samples)
            })
            .collect();
        writer.write(req, Durability::Applied).await.unwrap();
    }
    assert_eq!(writer.freeze_and_spill_now().await.unwrap().segments, 4);
    writer.flush().await.unwrap();
    let reader = open_reader(&store, settings, &clock).await;
    assert_eq!(count(&reader, t0, t0 + 3 * HOUR).await, 1360);
    assert_eq!(count(&writer, t0, t0 + 3 * HOUR).await, 1360);
    assert_eq!(count(&reader, t0 + HOUR, t0 + 3 * HOUR).await, 400);

    clock.set(t0 + HOUR + 6 * 60_000);
    writer.seal_due_now().await.unwrap();
    wait_sealed(&reader, t0 / HOUR).await;
    assert_eq!(count(&reader, t0, t0 + 3 * HOUR).await, 1360);
    assert_eq!(count(&writer, t0, t0 + 3 * HOUR).await, 1360);
    reader.close().await.unwrap();
    writer.close().await.unwrap();
}
