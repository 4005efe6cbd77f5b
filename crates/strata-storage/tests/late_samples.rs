//! Out-of-order and late samples: a week of history for 1,000 series sent
//! in shuffled hour order after those hours were sealed reads back equal on
//! the writer and on a reader node, before and after the fold, and after a
//! restart; re-sending is idempotent, another value at a stored timestamp
//! is refused by name; out-of-order samples in an open bucket are kept and
//! sealed in order.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "support/samples.rs"]
mod samples;
#[path = "support/shuffle.rs"]
mod shuffle;
use samples::{read, Expected};
use shuffle::shuffled;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, Rejection, Storage,
    StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const SERIES: usize = 1000;
const HOURS: i64 = 168;
/// Samples per series per hour: one every six minutes.
const PER_HOUR: i64 = 10;

fn settings() -> StorageSettings {
    StorageSettings {
        // Seals only when asked; WAL flushes often so the many seals of
        // the setup are quick. No blocks: the background compaction (every
        // minute of wall clock) would take the sealed days, and their late
        // segments, from the fold these tests check, when a slow machine
        // takes over a minute to get there (`compaction/` tests both).
        seal_check_interval: Duration::from_secs(3600),
        flush_interval: Duration::from_millis(10),
        block_duration: Duration::ZERO,
        ..StorageSettings::default()
    }
}

fn labels(i: usize) -> Vec<Label> {
    vec![
        Label::new("__name__", "backfilled"),
        Label::new("host", format!("h{}", i % 200)),
        Label::new("i", i.to_string()),
    ]
}

fn value(i: usize, t: i64) -> f64 {
    ((t / 1000) as f64 * 0.001 + i as f64).sin() * 100.0
}

/// One hour of history for every series.
fn hour_request(start: i64) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: labels(i),
            samples: (0..PER_HOUR)
                .map(|k| {
                    let t = start + k * (HOUR / PER_HOUR) + (i as i64 % 7) * 1000;
                    (t, value(i, t))
                })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

async fn read_all(db: &Storage, mint: i64, maxt: i64) -> Expected {
    let m = Matcher::new(MatchOp::Equal, "__name__", "backfilled").unwrap();
    read(db, &[m], mint, maxt).await
}

async fn open_reader(store: &Arc<dyn ObjectStore>, clock: &Arc<ManualClock>) -> Storage {
    let reader = ReaderSettings {
        poll_interval: Duration::from_millis(50),
        ..ReaderSettings::default()
    };
    Storage::open_reader(Arc::clone(store), "db", settings(), reader, clock.clone())
        .await
        .unwrap()
}

/// Polls until the reader node reads what the writer wrote.
async fn reader_sees(reader: &Storage, want: &Expected, mint: i64, maxt: i64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = read_all(reader, mint, maxt).await;
        if &got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the reader node read {} series, {} samples; want {} and {}",
            got.len(),
            got.values().map(Vec::len).sum::<usize>(),
            want.len(),
            want.values().map(Vec::len).sum::<usize>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_week_backfilled_into_sealed_hours_reads_back_everywhere_before_and_after_the_fold() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let first = now - now % HOUR - (HOURS + 2) * HOUR;
    let clock = Arc::new(ManualClock::new(now));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    // Every hour of the week sealed first: a marker series with a sample
    // in each, then the seals.
    let marker = IngestSeries {
        labels: vec![Label::new("__name__", "marker")],
        samples: (0..HOURS).map(|h| (first + h * HOUR, 1.0)).collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    };
    db.write(vec![marker], Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    let last_bucket = (first + (HOURS - 1) * HOUR) / HOUR;
    assert!(db.head().sealed_through().unwrap() >= last_bucket);

    // History in shuffled hour order, every hour already sealed.
    let mut want: Expected = BTreeMap::new();
    for h in shuffled(HOURS) {
        let req = hour_request(first + h * HOUR);
        for s in &req {
            want.entry(s.labels.clone())
                .or_default()
                .extend(s.samples.iter().map(|&(t, v)| (t, v.to_bits())));
        }
        let out = db.write(req, Durability::Applied).await.unwrap();
        assert_eq!(
            (out.appended, out.rejected),
            (SERIES * PER_HOUR as usize, 0),
            "hour {h}: {:?}",
            out.first_rejection
        );
    }
    for samples in want.values_mut() {
        samples.sort_unstable();
    }
    let (mint, maxt) = (first, first + HOURS * HOUR);
    assert_eq!(
        read_all(&db, mint, maxt).await,
        want,
        "writer, late samples in memory"
    );

    let pass = db.flush_late_now().await.unwrap();
    assert_eq!(db.head().extra_samples(), 0, "{pass:?}");
    assert_eq!(
        read_all(&db, mint, maxt).await,
        want,
        "writer, late segments"
    );
    let bucket = first / HOUR + 3;
    let layout = db.bucket_layout(bucket).await.unwrap();
    assert_eq!(layout.late_series, SERIES, "{layout:?}");
    assert!(layout.late_segments >= SERIES, "{layout:?}");
    let reader = open_reader(&store, &clock).await;
    reader_sees(&reader, &want, mint, maxt, "late segments").await;

    // Re-sending an hour is idempotent; another value at a stored
    // timestamp is refused, naming the series.
    let again = hour_request(first + 5 * HOUR);
    let out = db.write(again, Durability::Applied).await.unwrap();
    assert_eq!(
        (out.appended, out.duplicates, out.rejected),
        (0, SERIES * PER_HOUR as usize, 0)
    );
    let mut changed = hour_request(first + 6 * HOUR);
    changed.truncate(1);
    changed[0].samples.truncate(1);
    changed[0].samples[0].1 += 1.0;
    let out = db.write(changed, Durability::Applied).await.unwrap();
    assert_eq!((out.appended, out.rejected), (0, 1));
    let (series, why) = out.first_rejection.unwrap();
    assert!(series.contains("i=\"0\""), "{series}");
    assert!(matches!(why, Rejection::Conflicting { .. }), "{why}");

    // The fold: one chunk per series per bucket, nothing else, same reads.
    let folded = db.fold_late_now().await.unwrap();
    assert_eq!(folded.buckets as i64, HOURS, "{folded:?}");
    assert_eq!(folded.joined, SERIES * HOURS as usize, "{folded:?}");
    for b in [first / HOUR, bucket, last_bucket] {
        let layout = db.bucket_layout(b).await.unwrap();
        assert_eq!(
            (
                layout.chunk_keys,
                layout.spilled_segments,
                layout.late_segments,
                layout.late_series
            ),
            (SERIES + 1, 0, 0, 0),
            "bucket {b}"
        );
    }
    assert_eq!(read_all(&db, mint, maxt).await, want, "writer, folded");
    reader_sees(&reader, &want, mint, maxt, "folded").await;
    // Postings of the series that joined late: a selection by label.
    let host = Matcher::new(MatchOp::Equal, "host", "h7").unwrap();
    let got = db.select(&[host], mint, maxt).await.unwrap();
    assert_eq!(got.len(), SERIES / 200);
    reader.close().await.unwrap();
    db.close().await.unwrap();

    // After a restart, the same.
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(read_all(&db, mint, maxt).await, want, "writer, reopened");
    db.close().await.unwrap();
}

#[tokio::test]
async fn late_samples_survive_a_crash_before_they_are_written() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(now));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let one = |t: i64, v: f64| {
        vec![IngestSeries {
            labels: labels(1),
            samples: vec![(t, v)],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        }]
    };
    db.write(one(t0 + 10, 1.0), Durability::Applied)
        .await
        .unwrap();
    db.seal_due_now().await.unwrap();
    assert!(db.head().sealed_through().is_some());
    // Late, and acknowledged Durable: in the log, not yet in a segment.
    let out = db
        .write(one(t0 + 5, 2.0), Durability::Durable)
        .await
        .unwrap();
    assert_eq!(out.appended, 1);
    assert_eq!(db.head().extra_samples(), 1);
    // A crash: the writer is dropped without closing; a new one fences it
    // and replays the log.
    drop(db);
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let want: Expected = [(
        labels(1),
        vec![(t0 + 5, 2f64.to_bits()), (t0 + 10, 1f64.to_bits())],
    )]
    .into_iter()
    .collect();
    assert_eq!(read_all(&db, t0, t0 + HOUR).await, want, "replayed");
    db.flush_late_now().await.unwrap();
    db.fold_late_now().await.unwrap();
    assert_eq!(
        read_all(&db, t0, t0 + HOUR).await,
        want,
        "written and folded"
    );
    db.close().await.unwrap();
}

#[tokio::test]
async fn out_of_order_samples_in_an_open_bucket_are_kept_and_sealed_in_order() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 2 * HOUR;
    let clock = Arc::new(ManualClock::new(t0 + 30 * 60_000));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let s = |samples: Vec<(i64, f64)>| {
        vec![IngestSeries {
            labels: labels(2),
            samples,
            exemplars: Vec::new(),
            histograms: Vec::new(),
        }]
    };
    // Two senders, one a minute behind the other.
    db.write(
        s(vec![(t0 + 120_000, 2.0), (t0 + 180_000, 3.0)]),
        Durability::Applied,
    )
    .await
    .unwrap();
    let out = db
        .write(
            s(vec![
                (t0 + 60_000, 1.0),
                (t0 + 150_000, 2.5),
                (t0 + 120_000, 2.0),
            ]),
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.duplicates, out.rejected), (2, 1, 0));
    let want: Expected = [(
        labels(2),
        [
            (60_000, 1.0),
            (120_000, 2.0),
            (150_000, 2.5),
            (180_000, 3.0),
        ]
        .iter()
        .map(|&(t, v): &(i64, f64)| (t0 + t, v.to_bits()))
        .collect(),
    )]
    .into_iter()
    .collect();
    assert_eq!(read_all(&db, t0, t0 + HOUR).await, want, "head");
    clock.set(t0 + 2 * HOUR);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().extra_samples(), 0);
    assert_eq!(read_all(&db, t0, t0 + HOUR).await, want, "sealed");
    let layout = db.bucket_layout(t0 / HOUR).await.unwrap();
    assert_eq!((layout.chunk_keys, layout.late_segments), (1, 0));

    // A window of 0: Prometheus' strict order.
    let strict = StorageSettings {
        out_of_order_window: Some(Duration::ZERO),
        ..settings()
    };
    db.close().await.unwrap();
    let db = Writer::open(Arc::clone(&store), "db", strict, clock.clone())
        .await
        .unwrap();
    let out = db
        .write(
            s(vec![(t0 + 2 * HOUR + 10, 1.0), (t0 + 2 * HOUR + 5, 1.0)]),
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (1, 1));
    assert!(matches!(
        out.first_rejection,
        Some((_, Rejection::OutOfOrder { .. }))
    ));
    let out = db
        .write(s(vec![(t0 + 1, 1.0)]), Durability::Applied)
        .await
        .unwrap();
    assert!(matches!(
        out.first_rejection,
        Some((_, Rejection::TooOld { .. }))
    ));
    db.close().await.unwrap();
}
