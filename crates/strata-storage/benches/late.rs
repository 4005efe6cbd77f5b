//! Late samples, whole-engine: a week of history for 1,000 series written
//! into hours already sealed (in shuffled hour order) against the same
//! history written in order into open hours, on a local folder (the
//! embedded default). Prints the backfill rate, bytes per sample after the
//! fold against in-order sealing, and the latency of one hour's select
//! over late segments before and after the fold.
//!
//! `cargo bench -p strata-storage --bench late` (release build).
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "../tests/support/shuffle.rs"]
mod shuffle;
use shuffle::shuffled;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, Storage, StorageSettings, SystemClock, Writer,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HOUR: i64 = 3_600_000;
const SERIES: usize = 1000;
const HOURS: i64 = 168;
/// One sample a minute.
const PER_HOUR: i64 = 60;

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

fn hour_request(start: i64) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", if i % 2 == 0 { "c" } else { "g" }),
                Label::new("host", format!("h{}", i % 200)),
                Label::new("i", i.to_string()),
            ],
            samples: (0..PER_HOUR)
                .map(|k| {
                    let t = start + k * 60_000;
                    let v = if i % 2 == 0 {
                        (t / 1000) as f64 * (i % 5 + 1) as f64
                    } else {
                        ((t / 60_000) as f64 * 0.1 + i as f64).sin() * 50.0 + 50.0
                    };
                    (t, (v * 100.0).round() / 100.0)
                })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

async fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Writer {
    let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(dir).unwrap());
    Writer::open(store, "db", settings(), clock.clone())
        .await
        .unwrap()
}

async fn bytes_per_sample(db: &Storage, first: i64) -> f64 {
    let mut bytes = 0;
    for h in 0..HOURS {
        bytes += db.bucket_layout(first / HOUR + h).await.unwrap().bytes;
    }
    bytes as f64 / (SERIES as f64 * (HOURS * PER_HOUR) as f64)
}

/// Median of 5 selects of every series over one hour, in ms.
async fn select_ms(db: &Storage, hour: i64) -> f64 {
    let m = Matcher::new(MatchOp::Equal, "__name__", "c").unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let got = db
            .select(std::slice::from_ref(&m), hour, hour + HOUR - 1)
            .await
            .unwrap();
        assert_eq!(got.len(), SERIES / 2);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times[2]
}

#[tokio::main]
async fn main() {
    let now = SystemClock.now_ms();
    let first = now - now % HOUR - (HOURS + 2) * HOUR;
    let total = SERIES * (HOURS * PER_HOUR) as usize;

    // In order into open hours, then sealed.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(first));
    let db = open(dir.path(), &clock).await;
    let started = Instant::now();
    for h in 0..HOURS {
        clock.set(first + h * HOUR);
        db.write(hour_request(first + h * HOUR), Durability::Applied)
            .await
            .unwrap();
    }
    let ingest = started.elapsed();
    clock.set(now);
    let started = Instant::now();
    db.seal_due_now().await.unwrap();
    let seal = started.elapsed();
    let in_order_bps = bytes_per_sample(&db, first).await;
    let in_order_select = select_ms(&db, first + 100 * HOUR).await;
    db.close().await.unwrap();
    let db = open(dir.path(), &clock).await;
    let in_order_reopened = select_ms(&db, first + 100 * HOUR).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let in_order_settled = select_ms(&db, first + 100 * HOUR).await;
    db.close().await.unwrap();
    println!(
        "in order: {total} samples written in {:.2} s ({:.2} M samples/s), sealed in {:.2} s; \
         {in_order_bps:.3} bytes/sample; select of one hour {in_order_select:.2} ms, \
         {in_order_reopened:.2} ms after a restart, {in_order_settled:.2} ms 30 s later",
        ingest.as_secs_f64(),
        total as f64 / ingest.as_secs_f64() / 1e6,
        seal.as_secs_f64(),
    );

    // The same history into hours already sealed, in shuffled order.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let db = open(dir.path(), &clock).await;
    let marker = IngestSeries {
        labels: vec![Label::new("__name__", "marker")],
        samples: (0..HOURS).map(|h| (first + h * HOUR, 1.0)).collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    };
    db.write(vec![marker], Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    let started = Instant::now();
    for h in shuffled(HOURS) {
        let out = db
            .write(hour_request(first + h * HOUR), Durability::Applied)
            .await
            .unwrap();
        assert_eq!(out.rejected, 0, "{:?}", out.first_rejection);
    }
    db.flush_late_now().await.unwrap();
    let backfill = started.elapsed();
    let late_bps = bytes_per_sample(&db, first).await;
    let late_select = select_ms(&db, first + 100 * HOUR).await;
    let started = Instant::now();
    let fold = db.fold_late_now().await.unwrap();
    let folded_in = started.elapsed();
    let folded_bps = bytes_per_sample(&db, first).await;
    let folded_select = select_ms(&db, first + 100 * HOUR).await;
    db.close().await.unwrap();
    let db = open(dir.path(), &clock).await;
    let reopened_select = select_ms(&db, first + 100 * HOUR).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let folded_settled = select_ms(&db, first + 100 * HOUR).await;
    db.close().await.unwrap();
    println!(
        "backfill: {total} samples into sealed hours in {:.2} s ({:.2} M samples/s, written as late segments); \
         {late_bps:.3} bytes/sample before the fold; select of one hour {late_select:.2} ms",
        backfill.as_secs_f64(),
        total as f64 / backfill.as_secs_f64() / 1e6,
    );
    println!(
        "fold: {} buckets, {} series in {:.2} s; {folded_bps:.3} bytes/sample ({:+.1} % against in order); \
         select of one hour {folded_select:.2} ms, {reopened_select:.2} ms after a restart, {folded_settled:.2} ms 30 s later",
        fold.buckets,
        fold.series,
        folded_in.as_secs_f64(),
        (folded_bps / in_order_bps - 1.0) * 100.0,
    );
}
