//! A seal lets each series' chunk of the bucket go as soon as its chunk key
//! is durable, not at the end of the seal: the head's memory falls while
//! the seal is spread, and every read during the seal still finds every
//! sample (the released ones from the store).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, Storage, StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;
/// Three of the sealer's batches of 1,024 chunk keys, and a bit.
const SERIES: u32 = 3_200;

fn labels(i: u32) -> Vec<Label> {
    vec![
        Label::new("__name__", "m"),
        Label::new("pod", format!("pod-{i}")),
    ]
}

/// Samples every minute from `from` for `n` minutes, valued by time and
/// series.
fn minutes(i: u32, from: i64, n: i64) -> Vec<(i64, f64)> {
    (0..n)
        .map(|k| (from + k * MINUTE, value(i, from + k * MINUTE)))
        .collect()
}

fn value(i: u32, t: i64) -> f64 {
    (t / 1000) as f64 + f64::from(i) * 1e-3
}

/// The series of `db` over [mint, maxt] through `matcher`: each series'
/// pod and sample count, checking every value.
async fn read(db: &Storage, matcher: Matcher, mint: i64, maxt: i64) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    for s in db.select(&[matcher], mint, maxt).await.unwrap() {
        let pod = s.labels.iter().find(|l| l.name == "pod").unwrap();
        let i: u32 = pod.value.trim_start_matches("pod-").parse().unwrap();
        for (t, v) in s.timestamps.iter().zip(&s.values) {
            assert_eq!(*v, value(i, *t), "pod-{i} at {t}");
        }
        out.push((i, s.timestamps.len()));
    }
    out.sort_unstable();
    out
}

fn by_name() -> Matcher {
    Matcher::new(MatchOp::Equal, "__name__", "m").unwrap()
}

fn by_pod() -> Matcher {
    Matcher::new(MatchOp::RegexMatch, "pod", "pod-.*").unwrap()
}

/// Series with samples in the first bucket only.
fn gone(i: u32) -> bool {
    i % 4 == 3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seal_releases_each_chunk_once_written_and_reads_miss_nothing() {
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let spread = Duration::from_secs(4);
    let settings = StorageSettings {
        seal_check_interval: Duration::from_millis(20),
        seal_spread: spread,
        ..StorageSettings::default()
    };
    let db = Writer::open(Arc::new(InMemory::new()), "db", settings, clock.clone())
        .await
        .unwrap();
    // An hour in the first bucket and, but for every fourth series (gone
    // with the bucket, as a pod replaced), ten minutes of the next; every
    // tenth series also has an out-of-order sample in the first, which
    // the seal takes into its chunk.
    let write = |f: &dyn Fn(u32) -> Vec<(i64, f64)>| {
        (0..SERIES)
            .map(|i| IngestSeries {
                labels: labels(i),
                samples: f(i),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
            .filter(|s| !s.samples.is_empty())
            .collect::<Vec<_>>()
    };
    db.write(
        write(&|i| {
            let mut s = minutes(i, t0 + 30_000, 60);
            if !gone(i) {
                s.extend(minutes(i, t0 + HOUR, 10));
            }
            s
        }),
        Durability::Applied,
    )
    .await
    .unwrap();
    db.write(
        write(&|i| {
            if i % 10 == 0 {
                vec![(t0 + 15_000, value(i, t0 + 15_000))]
            } else {
                Vec::new()
            }
        }),
        Durability::Applied,
    )
    .await
    .unwrap();
    // Samples per series in the first bucket, or both.
    let first_bucket = |i: u32| 60 + usize::from(i % 10 == 0);
    let both = |i: u32| first_bucket(i) + if gone(i) { 0 } else { 10 };
    let expect = |n: &dyn Fn(u32) -> usize| (0..SERIES).map(|i| (i, n(i))).collect::<Vec<_>>();
    let whole = (t0, t0 + 2 * HOUR);
    let first = (t0, t0 + HOUR - 1);
    assert_eq!(read(&db, by_name(), whole.0, whole.1).await, expect(&both));
    let chunks_before = db.head().memory().chunks;

    // The first bucket is due; the seal spreads its four batches.
    let bucket = t0 / HOUR;
    // Two readers more, back to back through the seal, so that some read
    // is always under way when a batch's chunks are let go.
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let storage = Arc::clone(db.storage());
            let want = expect(&first_bucket);
            tokio::spawn(async move {
                let mut reads = 0;
                while storage.head().sealed_through() < Some(bucket) {
                    let got = read(&storage, by_pod(), first.0, first.1).await;
                    assert_eq!(got, want, "a read during the seal");
                    let listed = storage.series(&[by_pod()], first.0, first.1).await.unwrap();
                    assert_eq!(listed.len(), SERIES as usize, "a listing during the seal");
                    reads += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                reads
            })
        })
        .collect();
    clock.set(t0 + 2 * HOUR - 20 * MINUTE);
    let started = Instant::now();
    let (mut reads, mut reads_released, mut least_chunks) = (0, 0, usize::MAX);
    while db.head().sealed_through() < Some(bucket) {
        assert!(started.elapsed() < spread * 10, "never sealed");
        let chunks = db.head().memory().chunks;
        let sealed = db.head().sealed_through() >= Some(bucket);
        assert_eq!(read(&db, by_name(), whole.0, whole.1).await, expect(&both));
        assert_eq!(
            read(&db, by_pod(), first.0, first.1).await,
            expect(&first_bucket)
        );
        let listed = db.series(&[by_pod()], first.0, first.1).await.unwrap();
        assert_eq!(listed.len(), SERIES as usize);
        reads += 1;
        if !sealed && chunks < chunks_before * 9 / 10 {
            reads_released += 1;
            least_chunks = least_chunks.min(chunks);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for task in busy {
        reads += task.await.unwrap();
    }
    eprintln!(
        "{reads} reads during the seal, {reads_released} with chunks released; \
         head chunks {chunks_before} B before, down to {least_chunks} B before the checkpoint"
    );
    assert!(
        reads_released > 0,
        "the head held every chunk until the seal's end ({reads} reads)"
    );
    // Sealed: the bucket's postings list every series, the released ones
    // included, and nothing is read twice.
    assert_eq!(
        read(&db, by_pod(), first.0, first.1).await,
        expect(&first_bucket)
    );
    assert_eq!(read(&db, by_name(), whole.0, whole.1).await, expect(&both));
    let next: Vec<(u32, usize)> = (0..SERIES).filter(|&i| !gone(i)).map(|i| (i, 10)).collect();
    assert_eq!(
        read(&db, by_pod(), t0 + HOUR, whole.1).await,
        next,
        "the next bucket"
    );
    db.close().await.unwrap();
}
