//! A series' chunk of an ended bucket is closed as soon as the series has
//! a sample of the next bucket, not a freezer pass (30 s) later: its tail
//! frozen into its run and its box let go, while every sample still reads
//! back.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::head::FREEZE_MIN_SAMPLES;
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const SERIES: u32 = 2_000;
/// A sample every 15 s.
const STEP: i64 = 15_000;

fn series(i: u32, samples: Vec<(i64, f64)>) -> IngestSeries {
    IngestSeries {
        labels: vec![
            Label::new("__name__", "m"),
            Label::new("pod", format!("pod-{i}")),
        ],
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

/// `n` samples of series `i` every [`STEP`] from `from`.
fn samples(i: u32, from: i64, n: i64) -> Vec<(i64, f64)> {
    (0..n)
        .map(|k| {
            let t = from + k * STEP;
            (t, (t / 1000) as f64 + f64::from(i))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_chunk_closes_when_its_series_reaches_the_next_bucket() {
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(
        Arc::new(InMemory::new()),
        "db",
        StorageSettings::default(),
        clock.clone(),
    )
    .await
    .unwrap();
    let write = |f: &dyn Fn(u32) -> Vec<(i64, f64)>| {
        (0..SERIES)
            .map(|i| series(i, f(i)))
            .collect::<Vec<IngestSeries>>()
    };
    // Most of the first bucket, frozen as the freezer would; then a last
    // few minutes in the tails.
    let frozen = i64::from(FREEZE_MIN_SAMPLES) * 2;
    let tail = 20;
    let first = t0 + HOUR - (frozen + tail) * STEP;
    db.write(write(&|i| samples(i, first, frozen)), Durability::Applied)
        .await
        .unwrap();
    assert_eq!(db.head().freeze_tails(FREEZE_MIN_SAMPLES), SERIES as usize);
    db.write(
        write(&|i| samples(i, first + frozen * STEP, tail)),
        Durability::Applied,
    )
    .await
    .unwrap();
    let open = db.head().memory().chunks;

    // Every series reaches the next bucket.
    clock.set(t0 + HOUR + 10_000);
    db.write(write(&|i| samples(i, t0 + HOUR, 1)), Durability::Applied)
        .await
        .unwrap();
    // Each series' new chunk adds an entry (80 bytes) and a tail; closed,
    // the ended one lets go of its box (64) and its tail (20 samples).
    // Unclosed, the head would hold at least 80 bytes a series more.
    let n = SERIES as usize;
    let started = Instant::now();
    let mut chunks = db.head().memory().chunks;
    while chunks + n * 32 > open + n * 80 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "ended chunks not closed: {open} bytes before the next bucket, {chunks} after"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        chunks = db.head().memory().chunks;
    }
    eprintln!("head chunks: {open} bytes at the bucket's end, {chunks} once closed");

    // Every sample reads back, from both buckets.
    let all = Matcher::new(MatchOp::Equal, "__name__", "m").unwrap();
    let read = db.select(&[all], t0, t0 + 2 * HOUR).await.unwrap();
    assert_eq!(read.len(), SERIES as usize);
    for s in &read {
        let pod = s.labels.iter().find(|l| l.name == "pod").unwrap();
        let i: u32 = pod.value.trim_start_matches("pod-").parse().unwrap();
        let mut want = samples(i, first, frozen + tail);
        want.extend(samples(i, t0 + HOUR, 1));
        let got: Vec<(i64, f64)> = s
            .timestamps
            .iter()
            .copied()
            .zip(s.values.iter().copied())
            .collect();
        assert_eq!(got, want, "pod-{i}");
    }
    db.close().await.unwrap();
}
