//! The head holds only series with samples not yet sealed: a seal drops the
//! rest, on the writer and on reader nodes, and their data stays readable
//! from the store. A series that comes back keeps its id, across seals and
//! restarts, so its old and new samples stay one series.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "support/raw.rs"]
mod raw;

use std::sync::atomic::Ordering;
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
const MINUTE: i64 = 60_000;

fn labels(i: u32) -> Vec<Label> {
    vec![
        Label::new("__name__", "m"),
        Label::new("pod", format!("pod-{i}")),
    ]
}

fn series(i: u32, samples: Vec<(i64, f64)>) -> IngestSeries {
    IngestSeries {
        labels: labels(i),
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

/// Samples every minute from `from` for `minutes`, valued by time.
fn minutes(from: i64, n: i64) -> Vec<(i64, f64)> {
    (0..n)
        .map(|k| (from + k * MINUTE, (from + k * MINUTE) as f64))
        .collect()
}

/// Every series named `m` over all time: labels and timestamps.
async fn read_all(db: &Storage) -> Vec<(Vec<Label>, Vec<i64>)> {
    let m = Matcher::new(MatchOp::Equal, "__name__", "m").unwrap();
    db.select(&[m], 0, i64::MAX / 2)
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            for (t, v) in s.timestamps.iter().zip(&s.values) {
                assert_eq!(*t as f64, *v, "value of {:?} at {t}", s.labels);
            }
            (s.labels.to_vec(), s.timestamps)
        })
        .collect()
}

/// `db` reads `n` series of `samples` samples each.
async fn assert_series(db: &Storage, n: usize, samples: usize) {
    let all = read_all(db).await;
    assert_eq!(all.len(), n);
    assert!(all.iter().all(|(_, ts)| ts.len() == samples), "{all:?}");
}

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

/// The start of the hour three hours ago: buckets from there are in the
/// past of the real clock, which SlateDB's TTLs follow.
fn start() -> i64 {
    let now = SystemClock.now_ms();
    now - now % HOUR - 3 * HOUR
}

async fn open(store: &Arc<dyn ObjectStore>, clock: &Arc<ManualClock>) -> Writer {
    Writer::open(Arc::clone(store), "db", settings(), clock.clone())
        .await
        .unwrap()
}

/// A writer on a fresh store at `start()`, with `n` series written from
/// there, `samples` minutes each.
async fn writer_with(
    n: u32,
    samples: i64,
    durability: Durability,
) -> (Arc<dyn ObjectStore>, i64, Arc<ManualClock>, Writer) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let t0 = start();
    let clock = Arc::new(ManualClock::new(t0));
    let writer = open(&store, &clock).await;
    writer
        .write(
            (0..n).map(|i| series(i, minutes(t0, samples))).collect(),
            durability,
        )
        .await
        .unwrap();
    (store, t0, clock, writer)
}

fn id_of(db: &Storage, i: u32) -> Option<u64> {
    db.head().get(&labels(i)).map(|s| s.id)
}

async fn seal_at(writer: &Writer, clock: &ManualClock, t: i64) {
    clock.set(t);
    writer.seal_due_now().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_series_keeps_its_id_across_seals_and_restarts() {
    let (store, t0, clock, writer) = writer_with(2, 30, Durability::Applied).await;
    let (id0, id1) = (id_of(&writer, 0).unwrap(), id_of(&writer, 1).unwrap());
    assert_eq!(writer.head().num_series(), 2);

    // The seal of bucket 0 leaves them nothing in the head: both dropped,
    // their samples read from the store.
    seal_at(&writer, &clock, t0 + HOUR + 6 * MINUTE).await;
    assert_eq!(writer.head().num_series(), 0);
    assert_eq!(writer.head().series_dropped(), 2);
    assert_series(&writer, 2, 30).await;

    // Series 0 comes back: its old id, not a new series.
    writer
        .write(
            vec![series(0, minutes(t0 + HOUR + 10 * MINUTE, 5))],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(id_of(&writer, 0), Some(id0));
    let stats = writer.stats();
    assert_eq!(stats.series_created.load(Ordering::Relaxed), 2);
    assert_eq!(stats.series_returned.load(Ordering::Relaxed), 1);
    let all = read_all(&writer).await;
    assert_eq!(all.len(), 2, "one series per label set: {all:?}");
    assert_eq!(all[0].1.len(), 35);

    // Series 1 re-sends its old samples (a sender's backlog) and one late
    // sample in the sealed bucket: duplicates are found in the store, the
    // late one is kept.
    let mut backlog = minutes(t0, 30);
    backlog.push((t0 + 45 * MINUTE, (t0 + 45 * MINUTE) as f64));
    let out = writer
        .write(vec![series(1, backlog)], Durability::Applied)
        .await
        .unwrap();
    assert_eq!((out.duplicates, out.appended), (30, 1), "{out:?}");
    assert_eq!(id_of(&writer, 1), Some(id1));
    writer.flush_late_now().await.unwrap();

    // Restart while series 0 has samples in the open bucket: the log
    // brings it back with its id.
    writer.close().await.unwrap();
    let writer = open(&store, &clock).await;
    assert_eq!(id_of(&writer, 0), Some(id0));
    let all = read_all(&writer).await;
    assert_eq!(all.len(), 2);
    assert_eq!((all[0].1.len(), all[1].1.len()), (35, 31));

    // Sealed and restarted again: an empty head; both come back with
    // their ids, found in the store this time (the cache of dropped
    // series did not survive the restart).
    seal_at(&writer, &clock, t0 + 2 * HOUR + 6 * MINUTE).await;
    writer.close().await.unwrap();
    let writer = open(&store, &clock).await;
    assert_eq!(writer.head().num_series(), 0);
    writer
        .write(
            vec![
                series(1, minutes(t0 + 2 * HOUR + 10 * MINUTE, 3)),
                series(0, minutes(t0 + 2 * HOUR + 10 * MINUTE, 3)),
                series(2, minutes(t0 + 2 * HOUR + 10 * MINUTE, 3)),
            ],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(id_of(&writer, 0), Some(id0));
    assert_eq!(id_of(&writer, 1), Some(id1));
    let id2 = id_of(&writer, 2).unwrap();
    assert!(id2 > id0.max(id1), "a new series gets a new id");
    assert_eq!(writer.stats().series_returned.load(Ordering::Relaxed), 2);
    let all = read_all(&writer).await;
    let lens: Vec<usize> = all.iter().map(|(_, ts)| ts.len()).collect();
    assert_eq!(lens, vec![38, 34, 3]);
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_drops_sealed_series_too() {
    let (store, t0, clock, writer) = writer_with(50, 20, Durability::Durable).await;
    let reader = Storage::open_reader(
        Arc::clone(&store),
        "db",
        settings(),
        ReaderSettings {
            poll_interval: Duration::from_millis(50),
            ..ReaderSettings::default()
        },
        clock.clone(),
    )
    .await
    .unwrap();
    assert_eq!(reader.head().num_series(), 50);

    seal_at(&writer, &clock, t0 + HOUR + 6 * MINUTE).await;
    writer.flush().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while reader.head().sealed_through() != Some(t0 / HOUR) {
        assert!(Instant::now() < deadline, "the reader never saw the seal");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(reader.head().num_series(), 0, "dropped on the reader");
    assert_eq!(reader.head().series_dropped(), 50);
    assert_series(&reader, 50, 20).await;

    // One comes back: the reader learns it from the log again and reads
    // its old and new samples as one series.
    writer
        .write(
            vec![series(7, minutes(t0 + HOUR + 10 * MINUTE, 2))],
            Durability::Durable,
        )
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all = read_all(&reader).await;
        assert_eq!(all.len(), 50);
        if all.iter().any(|(_, ts)| ts.len() == 22) {
            break;
        }
        assert!(Instant::now() < deadline, "the reader never saw the return");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(reader.head().num_series(), 1);
    assert_eq!(id_of(&reader, 7), id_of(&writer, 7));
    reader.close().await.unwrap();
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_series_come_back_at_once_after_a_restart() {
    let (store, t0, clock, writer) = writer_with(100, 3, Durability::Applied).await;
    let ids: Vec<u64> = (0..100).map(|i| id_of(&writer, i).unwrap()).collect();
    seal_at(&writer, &clock, t0 + HOUR + 6 * MINUTE).await;
    assert_eq!(writer.head().num_series(), 0);
    writer.close().await.unwrap();

    // A sender back after an outage: its 100 series (the cache of dropped
    // series is gone with the restart: all read from the store in one
    // request) and 30 new ones, interleaved.
    let writer = open(&store, &clock).await;
    let t = t0 + HOUR + 10 * MINUTE;
    let out = writer
        .write(
            (0..130).rev().map(|i| series(i, minutes(t, 1))).collect(),
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(out.appended, 130);
    let stats = writer.stats();
    assert_eq!(stats.series_returned.load(Ordering::Relaxed), 100);
    assert_eq!(stats.series_created.load(Ordering::Relaxed), 30);
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(id_of(&writer, i as u32), Some(id), "series {i}");
    }
    let all = read_all(&writer).await;
    assert_eq!(all.len(), 130);
    assert_eq!(all.iter().filter(|(_, ts)| ts.len() == 4).count(), 100);
    writer.close().await.unwrap();
}

/// A series' labels reach the store with its first data there, not with
/// its first write: at its bucket's seal after a restart (the log brought
/// the series back), and by the late pass for a series whose only samples
/// are history in a sealed bucket. Either way a dropped series reads back
/// from the store and comes back with its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_reach_the_store_with_a_series_first_data() {
    let (store, t0, clock, writer) = writer_with(1, 30, Durability::Durable).await;
    let id0 = id_of(&writer, 0).unwrap();
    // Restart before any seal: the series comes back from the log alone.
    writer.close().await.unwrap();
    let writer = open(&store, &clock).await;
    assert_eq!(id_of(&writer, 0), Some(id0));
    seal_at(&writer, &clock, t0 + HOUR + 6 * MINUTE).await;
    assert_eq!(writer.head().num_series(), 0);

    // History for a new series, all of it in the sealed bucket.
    let out = writer
        .write(
            vec![series(1, minutes(t0 + MINUTE, 10))],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(out.appended, 10, "{out:?}");
    let id1 = id_of(&writer, 1).unwrap();
    let pass = writer.flush_late_now().await.unwrap();
    assert_eq!(pass.samples, 10, "{pass:?}");
    // The next seal (of a bucket another series writes to) finds it idle
    // and drops it.
    writer
        .write(
            vec![series(2, minutes(t0 + HOUR + 10 * MINUTE, 5))],
            Durability::Applied,
        )
        .await
        .unwrap();
    seal_at(&writer, &clock, t0 + 2 * HOUR + 6 * MINUTE).await;
    assert_eq!(writer.head().num_series(), 0);
    writer.close().await.unwrap();

    // After a restart (no cache of dropped series) both read back with
    // their labels, and come back with their ids.
    let writer = open(&store, &clock).await;
    let all = read_all(&writer).await;
    let got: Vec<(Vec<Label>, usize)> = all.into_iter().map(|(l, ts)| (l, ts.len())).collect();
    assert_eq!(got, vec![(labels(0), 30), (labels(1), 10), (labels(2), 5)]);
    let t = t0 + 2 * HOUR + 10 * MINUTE;
    writer
        .write(
            vec![series(0, minutes(t, 2)), series(1, minutes(t, 2))],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(id_of(&writer, 0), Some(id0));
    assert_eq!(id_of(&writer, 1), Some(id1));
    assert_eq!(writer.stats().series_returned.load(Ordering::Relaxed), 2);
    let lens: Vec<usize> = read_all(&writer)
        .await
        .iter()
        .map(|(_, ts)| ts.len())
        .collect();
    assert_eq!(lens, vec![32, 12, 5]);
    writer.close().await.unwrap();
}

/// The label hashes the store's labels index (`H` keys) holds, ascending,
/// and when the `S` key of series `id` was last written.
async fn stored_index(store: &Arc<dyn ObjectStore>, id: u64) -> (Vec<u64>, Option<i64>) {
    use strata_storage::{keys, values};
    let reader = raw::reader(store).await;
    let h = keys::SERIES_HASH;
    let mut it = reader.scan(vec![h]..vec![h + 1]).await.unwrap();
    let mut hashes = Vec::new();
    while let Some(kv) = it.next().await.unwrap() {
        hashes.push(keys::series_hash(&kv.key).unwrap());
    }
    let written = reader
        .get(keys::series_key(id))
        .await
        .unwrap()
        .map(|v| values::decode_series(&v).unwrap().0);
    reader.close().await.unwrap();
    hashes.sort_unstable();
    (hashes, written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_is_indexed_by_its_labels_once_it_may_leave_the_head() {
    // Series 0 writes on into the next bucket; series 1 does not.
    let (store, t0, clock, writer) = writer_with(2, 30, Durability::Applied).await;
    let (id0, id1) = (id_of(&writer, 0).unwrap(), id_of(&writer, 1).unwrap());
    clock.set(t0 + HOUR + 5 * MINUTE);
    writer
        .write(vec![series(0, minutes(t0 + HOUR, 5))], Durability::Applied)
        .await
        .unwrap();
    let hash = |i: u32| strata_storage::head::labels_hash(&labels(i)[..]);

    // The seal of bucket 0 lets series 1 go, with its `H` key; series 0
    // stays in the head, which finds it by its labels: no key yet. Its
    // `S` key is written by this seal, or by the writer's own seal check
    // (its first runs at once) if that ran at the clock of the write, when
    // bucket 0 was due already.
    let first_seal = t0 + HOUR + 6 * MINUTE;
    seal_at(&writer, &clock, first_seal).await;
    assert_eq!(writer.head().num_series(), 1);
    assert_eq!(id_of(&writer, 0), Some(id0));
    writer.close().await.unwrap();
    let (hashes, written) = stored_index(&store, id0).await;
    assert_eq!(hashes, vec![hash(1)]);
    let written = written.expect("series 0's labels are stored");
    assert!(
        (t0 + HOUR + 5 * MINUTE..=first_seal).contains(&written),
        "labels written at {written}"
    );

    // After a restart the log brings series 0 back with its id; the seal
    // of its last bucket writes its key as it lets it go.
    let writer = open(&store, &clock).await;
    assert_eq!(id_of(&writer, 0), Some(id0));
    // Its labels are written again beside it, to expire no sooner than
    // its last data.
    let last_seal = t0 + 2 * HOUR + 6 * MINUTE;
    seal_at(&writer, &clock, last_seal).await;
    assert_eq!(writer.head().num_series(), 0);
    writer.close().await.unwrap();
    let mut both = vec![hash(0), hash(1)];
    both.sort_unstable();
    assert_eq!(stored_index(&store, id0).await, (both, Some(last_seal)));

    // Restarted with an empty head, both come back with their old ids and
    // read as one series each, old samples and new.
    let writer = open(&store, &clock).await;
    let t = t0 + 2 * HOUR + 10 * MINUTE;
    clock.set(t + 2 * MINUTE);
    writer
        .write(
            vec![series(1, minutes(t, 2)), series(0, minutes(t, 2))],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(id_of(&writer, 0), Some(id0));
    assert_eq!(id_of(&writer, 1), Some(id1));
    assert_eq!(writer.stats().series_returned.load(Ordering::Relaxed), 2);
    let lens: Vec<usize> = read_all(&writer)
        .await
        .iter()
        .map(|(_, ts)| ts.len())
        .collect();
    assert_eq!(lens, vec![37, 32]);
    writer.close().await.unwrap();
}
