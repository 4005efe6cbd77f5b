//! Native histograms: appended to the head's histogram chunks (out of order
//! within the window too), logged, sealed to the store, late ones written
//! with their record, and read back the same from the head, the store,
//! after a restart and on a reader node; a histogram-only series is listed
//! like any other.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::histogram::{
    FloatHistogram, Histogram, HistogramSample, Span, CUSTOM_BUCKETS_SCHEMA,
};
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, Storage, StorageSettings,
    SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

fn labels(name: &str) -> Vec<Label> {
    vec![Label::new("__name__", name), Label::new("job", "api")]
}

/// An exponential histogram whose counts grow with `k`.
fn expo(k: u64) -> HistogramSample {
    HistogramSample::Int(Histogram {
        schema: 2,
        zero_threshold: 1e-128,
        zero_count: k,
        count: 4 * k,
        sum: 2.5 * k as f64,
        positive_spans: vec![Span::new(-1, 2), Span::new(3, 1)],
        positive_buckets: vec![k as i64, 0, 0],
        negative_spans: vec![Span::new(0, 1)],
        negative_buckets: vec![0],
        ..Histogram::default()
    })
}

/// A custom-buckets float histogram.
fn nhcb(k: f64) -> HistogramSample {
    HistogramSample::Float(FloatHistogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 3.0 * k,
        sum: 0.75 * k,
        positive_spans: vec![Span::new(0, 3)],
        positive_buckets: vec![k, k, k],
        custom_values: vec![0.1, 0.5],
        ..FloatHistogram::default()
    })
}

fn series(name: &str, histograms: Vec<(i64, HistogramSample)>) -> IngestSeries {
    IngestSeries {
        labels: labels(name),
        samples: Vec::new(),
        exemplars: Vec::new(),
        histograms,
    }
}

fn by_job() -> Vec<Matcher> {
    vec![Matcher::new(MatchOp::Equal, "job", "api").unwrap()]
}

/// `(name, [(t, count, sum)], float samples)` of every series `db` returns.
type Got = Vec<(String, Vec<(i64, f64, f64)>, usize)>;

async fn read(db: &Storage, mint: i64, maxt: i64) -> Got {
    db.select(&by_job(), mint, maxt)
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            let name = s.labels[0].value.clone();
            let h = s
                .histograms
                .iter()
                .map(|(t, h)| (*t, h.count, h.sum))
                .collect();
            (name, h, s.timestamps.len())
        })
        .collect()
}

fn point(t: i64, s: &HistogramSample) -> (i64, f64, f64) {
    let f = s.to_float();
    (t, f.count, f.sum)
}

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histograms_are_stored_sealed_recovered_and_followed() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0 + 63 * MINUTE));
    let w = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();

    // `lat` has exponential histograms in both buckets, one out of order;
    // `size` custom buckets in the first; `mixed` floats then histograms.
    let lat: Vec<(i64, HistogramSample)> = (1..=5)
        .map(|k| (t0 + k * 10 * MINUTE + 1_000, expo(k as u64)))
        .chain([(t0 + HOUR + MINUTE, expo(7))])
        .collect();
    let in_order: Vec<_> = lat
        .iter()
        .filter(|(t, _)| *t != t0 + 30 * MINUTE + 1_000)
        .cloned()
        .collect();
    let size: Vec<(i64, HistogramSample)> =
        (1..=3).map(|k| (t0 + k * MINUTE, nhcb(k as f64))).collect();
    let mut mixed = series("mixed", vec![(t0 + 5 * MINUTE, expo(1))]);
    mixed.samples = vec![(t0 + MINUTE, 1.0), (t0 + 2 * MINUTE, 2.0)];
    let out = w
        .write(
            vec![series("lat", in_order), series("size", size.clone()), mixed],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.histograms, out.appended, out.rejected), (9, 2, 0));
    // The out-of-order one, a retry (duplicates) and a conflict.
    let out = w
        .write(
            vec![series(
                "lat",
                vec![lat[2].clone(), lat[0].clone(), (lat[1].0, expo(9))],
            )],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.histograms, out.rejected), (2, 1));
    let why = out.first_rejection.unwrap().1.to_string();
    assert!(why.contains("native histogram"), "{why}");

    let expected: Got = vec![
        (
            "lat".into(),
            lat.iter().map(|(t, s)| point(*t, s)).collect(),
            0,
        ),
        ("mixed".into(), vec![point(t0 + 5 * MINUTE, &expo(1))], 2),
        (
            "size".into(),
            size.iter().map(|(t, s)| point(*t, s)).collect(),
            0,
        ),
    ];
    let whole = (t0, t0 + 2 * HOUR);
    assert_eq!(read(&w, whole.0, whole.1).await, expected);
    // The buckets of a histogram chunk come back as written.
    let got = w.select(&by_job(), t0, t0 + 15 * MINUTE).await.unwrap();
    let first = &got
        .iter()
        .find(|s| s.labels[0].value == "lat")
        .unwrap()
        .histograms[0];
    assert_eq!(first.1.positive_buckets, vec![1.0, 1.0, 1.0]);
    assert_eq!(first.1.negative_buckets, vec![0.0]);
    assert_eq!(first.1.zero_count, 1.0);
    // Listed, head and sealed alike.
    let listed = w.series(&by_job(), whole.0, whole.1).await.unwrap();
    assert_eq!(listed.len(), 3);

    // Sealed: the first bucket from the store, the second from the head.
    clock.set(t0 + HOUR + 10 * MINUTE);
    w.seal_due_now().await.unwrap();
    assert_eq!(w.head().sealed_through(), Some(t0 / HOUR));
    assert_eq!(read(&w, whole.0, whole.1).await, expected);
    let listed = w.series(&by_job(), t0, t0 + HOUR - 1).await.unwrap();
    assert_eq!(
        listed.len(),
        3,
        "a histogram-only series is in the sealed postings"
    );
    let names = w
        .label_values("__name__", &by_job(), t0, t0 + HOUR - 1)
        .await
        .unwrap();
    assert_eq!(names, vec!["lat", "mixed", "size"]);

    // A histogram for the sealed bucket (a sender's backlog) is written
    // with its log record.
    let late = (t0 + 45 * MINUTE, nhcb(9.0));
    let out = w
        .write(
            vec![series("size", vec![late.clone()])],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.histograms, out.rejected), (1, 0));
    let mut expected = expected;
    expected[2].1.push(point(late.0, &late.1));
    assert_eq!(read(&w, whole.0, whole.1).await, expected);
    w.close().await.unwrap();

    // After a restart: the open bucket's from the log, the rest stored.
    let w = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(read(&w, whole.0, whole.1).await, expected);

    // A reader node follows the store and the log.
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
    assert_eq!(read(&reader, whole.0, whole.1).await, expected);
    let next = (t0 + HOUR + 2 * MINUTE, expo(8));
    w.write(vec![series("lat", vec![next.clone()])], Durability::Durable)
        .await
        .unwrap();
    expected[0].1.push(point(next.0, &next.1));
    let started = Instant::now();
    loop {
        let got = read(&reader, whole.0, whole.1).await;
        if got == expected {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the reader never saw it: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    reader.close().await.unwrap();
    w.close().await.unwrap();
}
