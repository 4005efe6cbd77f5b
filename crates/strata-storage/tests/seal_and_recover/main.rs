//! Samples survive sealing and reopening, and read back bit for bit.
//!
//! The tests are here; beside them: the series they write and the samples
//! they expect (`data`), the reads that compare them (`reads`), and the
//! databases they open with their seals due or spread (`setup`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod data;
#[path = "../support/raw.rs"]
mod raw;
mod reads;
mod setup;

use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{Durability, IngestSeries, ManualClock, StorageSettings, Writer};

use data::{dataset, expected, many_series, series};
use reads::{eq, log_seqs, read_all};
use setup::{settings, spread_db, two_buckets_due, write_parts, HOUR};

#[tokio::test]
async fn seal_then_recover_round_trip() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    // SlateDB expires keys by the real clock, so the data must be recent.
    use strata_storage::Clock;
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let data = dataset(t0);
    let want = expected(&data);

    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    // Write in 10 requests of 60 samples per series, as a sender would.
    write_parts(&db, &data, 0..10).await;
    assert_eq!(read_all(&db).await, want, "head read");

    // Freezing the head's chunk tails into the sealed format changes no
    // sample, and a retried request still finds its samples as duplicates.
    // (Buckets of 240, 240 and 120 samples per series; each series
    // freezes at a threshold of its own between 80 and 120.)
    assert_eq!(
        db.head().freeze_tails(80),
        3 * 3,
        "one per series and bucket"
    );
    assert_eq!(read_all(&db).await, want, "frozen head read");
    let retry = data
        .iter()
        .map(|s| IngestSeries {
            labels: s.labels.clone(),
            samples: s.samples[100..160].to_vec(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    let out = db.write(retry, Durability::Applied).await.unwrap();
    assert_eq!((out.appended, out.duplicates, out.rejected), (0, 180, 0));

    // Two buckets are complete once the clock passes bucket end + grace.
    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR + 1));
    assert_eq!(read_all(&db).await, want, "sealed + head read");

    // A matcher that needs postings of sealed buckets.
    let api = db
        .select(
            &[
                eq("job", "api"),
                Matcher::new(MatchOp::RegexMatch, "__name__", "node_.*").unwrap(),
            ],
            t0,
            t0 + 3 * HOUR,
        )
        .await
        .unwrap();
    assert_eq!(api.len(), 1);
    assert_eq!(api[0].timestamps.len(), 600);
    let not_api = db
        .select(
            &[
                eq("__name__", "node_cpu_seconds_total"),
                Matcher::new(MatchOp::NotEqual, "job", "api").unwrap(),
            ],
            t0,
            t0 + 3 * HOUR,
        )
        .await
        .unwrap();
    assert_eq!(not_api.len(), 2);
    db.close().await.unwrap();

    // Each request went to one log record (seqs 0 to 9, four per bucket).
    // The seals deleted the records of the two sealed buckets: only those
    // of the open bucket are left.
    assert_eq!(log_seqs(&store).await, vec![8, 9]);

    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(read_all(&db).await, want, "after recovery");
    assert_eq!(
        db.stats()
            .samples_replayed
            .load(std::sync::atomic::Ordering::Relaxed),
        3 * 120
    );
    let names = db
        .label_values("job", &[], t0, t0 + 3 * HOUR)
        .await
        .unwrap();
    assert_eq!(names, vec!["api", "node"]);

    // Writes continue with the same series ids after recovery.
    let more = vec![series("node", 0, vec![(t0 + 3 * HOUR, 1.0)])];
    let out = db.write(more, Durability::Durable).await.unwrap();
    assert_eq!((out.appended, out.new_series), (1, 0));
    db.close().await.unwrap();
}

#[tokio::test]
async fn rejections_are_counted_and_named() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let clock = Arc::new(ManualClock::new(10 * HOUR));
    // A window of 0 keeps Prometheus' strict order.
    let strict = StorageSettings {
        out_of_order_window: Some(std::time::Duration::ZERO),
        ..settings()
    };
    let db = Writer::open(store, "db", strict, clock).await.unwrap();
    let s = |samples| vec![series("node", 1, samples)];
    db.write(s(vec![(10 * HOUR, 1.0)]), Durability::Applied)
        .await
        .unwrap();
    let out = db
        .write(
            s(vec![
                (10 * HOUR - 1, 1.0),
                (10 * HOUR, 1.0),
                (10 * HOUR, 2.0),
                (10 * HOUR + 1, 3.0),
            ]),
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.duplicates, out.rejected), (1, 1, 2));
    let (series, why) = out.first_rejection.unwrap();
    assert!(series.contains("host-1"), "{series}");
    assert!(why.to_string().contains("out of order"), "{why}");
    db.close().await.unwrap();
}

/// Many series in a sealed bucket are read by one seeking scan; a sparse
/// selection must still find exactly its series.
#[tokio::test]
async fn sealed_scan_selects_exactly() {
    use strata_storage::Clock;
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(store, "db", settings(), clock.clone())
        .await
        .unwrap();
    // Enough series that a select of most of them reads the bucket with
    // one scan per core, each over a share of them.
    let data: Vec<IngestSeries> = (0..2000)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "m"),
                Label::new("i", i.to_string()),
                Label::new("parity", if i % 3 == 0 { "three" } else { "other" }),
            ],
            samples: vec![(t0 + i, i as f64)],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    db.write(data, Durability::Applied).await.unwrap();
    clock.set(t0 + HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR));

    let sel = |m: Vec<Matcher>| {
        let db = &db;
        async move { db.select(&m, t0, t0 + HOUR).await.unwrap() }
    };
    let threes = sel(vec![eq("__name__", "m"), eq("parity", "three")]).await;
    assert_eq!(threes.len(), 667);
    for s in &threes {
        let i: i64 = strata_codec::labels::get(&s.labels, "i").parse().unwrap();
        assert_eq!(i % 3, 0);
        assert_eq!(s.timestamps, vec![t0 + i]);
        assert_eq!(s.values, vec![i as f64]);
    }
    let all = sel(vec![eq("__name__", "m")]).await;
    assert_eq!(all.len(), 2000);
    let mut seen: Vec<i64> = all
        .iter()
        .map(|s| {
            let i: i64 = strata_codec::labels::get(&s.labels, "i").parse().unwrap();
            assert_eq!(
                (s.timestamps.as_slice(), s.values.as_slice()),
                (&[t0 + i][..], &[i as f64][..])
            );
            i
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..2000).collect::<Vec<i64>>());
    let few = sel(vec![Matcher::new(MatchOp::RegexMatch, "i", "7|77").unwrap()]).await;
    assert_eq!(few.len(), 2);
    db.close().await.unwrap();
}

#[tokio::test]
async fn a_backlog_is_sealed_at_once_and_the_last_bucket_spread() {
    let spread = Duration::from_millis(3000);
    let (_store, db, t0) = two_buckets_due(spread).await;
    let started = std::time::Instant::now();
    let wait_for = |bucket: i64| {
        let db = &db;
        async move {
            while db.head().sealed_through() < Some(bucket) {
                assert!(started.elapsed() < Duration::from_secs(60), "never sealed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            started.elapsed()
        }
    };
    // The first bucket has another due behind it: no pacing.
    let first = wait_for(t0 / HOUR).await;
    assert!(first < spread, "{first:?}");
    // The last one is paced, but it is one batch: nothing to spread.
    let last = wait_for(t0 / HOUR + 1).await;
    assert!(last < spread, "{last:?}");
    assert_eq!(read_all(&db).await, expected(&dataset(t0)));
    db.close().await.unwrap();
}

/// A backlog of due buckets (history sent after an outage, an import) is
/// sealed one bucket after another, each as soon as the one before is done,
/// not one per seal check: a week of hours no longer takes a week of checks.
#[tokio::test]
async fn a_backlog_seals_bucket_after_bucket_without_waiting_for_checks() {
    use strata_storage::Clock;
    let check = Duration::from_secs(3);
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 8 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let settings = StorageSettings {
        seal_check_interval: check,
        ..StorageSettings::default()
    };
    let db = Writer::open(Arc::new(InMemory::new()), "db", settings, clock.clone())
        .await
        .unwrap();
    let hours = 6;
    let data: Vec<IngestSeries> = (0..20)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "backlog"),
                Label::new("i", i.to_string()),
            ],
            samples: (0..hours * 60)
                .map(|m| (t0 + m * 60_000, (i * 1000 + m) as f64))
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    db.write(data.clone(), Durability::Applied).await.unwrap();
    clock.set(t0 + hours * HOUR + 6 * 60_000);
    let started = std::time::Instant::now();
    while db.head().sealed_through() < Some(t0 / HOUR + hours - 1) {
        assert!(started.elapsed() < Duration::from_secs(60), "never sealed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    println!("{hours} due buckets sealed in {took:?} (seal check every {check:?})");
    // One bucket per check would take at least five more checks.
    assert!(took < 3 * check, "{took:?}");
    let read = db
        .select(&[eq("__name__", "backlog")], i64::MIN / 2, i64::MAX / 2)
        .await
        .unwrap();
    let got: usize = read.iter().map(|s| s.timestamps.len()).sum();
    assert_eq!((read.len(), got), (20, 20 * 360));
    db.close().await.unwrap();
}

/// A bucket of many batches is spread; once the next bucket comes due
/// while it is being sealed, the rest is written at once (the next one is
/// then spread in turn).
#[tokio::test]
async fn a_spread_seal_hurries_when_the_next_bucket_comes_due() {
    let many = |t0| many_series(t0, 3_000);
    let (_store, db, clock, t0) = spread_db(Duration::from_secs(1800), many).await;
    let data = many(t0);
    // Only the first bucket is due: it is spread over 30 minutes.
    clock.set(t0 + HOUR + 6 * 60_000);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        db.head().sealed_through(),
        None,
        "a spread seal of many batches"
    );
    // The second bucket comes due.
    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    let started = std::time::Instant::now();
    while db.head().sealed_through() < Some(t0 / HOUR) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still spreading after the next bucket came due"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "seal_and_recover: a spread seal finished {:?} after the next bucket came due",
        started.elapsed()
    );
    assert_eq!(read_all(&db).await, expected(&data));
    db.close().await.unwrap();
}

#[tokio::test]
async fn close_hurries_a_spread_seal() {
    // A spread of 30 minutes over a bucket of several batches: close must
    // not wait it.
    let many = |t0| many_series(t0, 3_000);
    let (store, db, clock, t0) = spread_db(Duration::from_secs(1800), many).await;
    let data = many(t0);
    let due = t0 + HOUR + 6 * 60_000;
    clock.set(due);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(db.head().sealed_through(), None, "still spreading");
    let started = std::time::Instant::now();
    db.close().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));

    // The seal under way finished on close.
    let db = Writer::open(store, "db", settings(), Arc::new(ManualClock::new(due)))
        .await
        .unwrap();
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR));
    assert_eq!(read_all(&db).await, expected(&data));
    db.close().await.unwrap();
}

#[tokio::test]
async fn a_spilled_head_reads_recovers_and_seals_every_sample_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    use strata_storage::Clock;
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    // 20 series: more than a few, so reads of many segments and chunks
    // take the scan path; one series alone takes point reads.
    let data = many_series(t0, 20);
    let want = expected(&data);
    let settings = StorageSettings {
        // Each series spills at a threshold of its own between 160 and
        // 240 samples: all of a bucket's 240.
        spill_min_samples: 160,
        ..settings()
    };
    let api = || [eq("job", "api")];
    let db = Writer::open(Arc::clone(&store), "db", settings.clone(), clock.clone())
        .await
        .unwrap();

    // The first two buckets (240 samples per series each) are spilled.
    write_parts(&db, &data, 0..8).await;
    let before = db.head().memory_bytes();
    let pass = db.freeze_and_spill_now().await.unwrap();
    assert_eq!(pass.segments, 2 * 20, "{pass:?}");
    assert_eq!(db.stats().segments_spilled.load(Relaxed), 40);
    assert!(
        db.head().memory_bytes() < before / 2,
        "{} of {before}",
        db.head().memory_bytes()
    );
    let written: Vec<IngestSeries> = data
        .iter()
        .map(|s| IngestSeries {
            labels: s.labels.clone(),
            samples: s.samples[..480].to_vec(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    assert_eq!(read_all(&db).await, expected(&written), "spilled head read");
    // Nothing left to spill: a second pass writes nothing.
    assert_eq!(db.freeze_and_spill_now().await.unwrap().segments, 0);

    // A retry of spilled samples cannot be checked against the store from
    // the coordinator: they are kept beside the chunk, and reads (and the
    // seal) merge them with the segment holding the same samples, once.
    let retry = vec![IngestSeries {
        labels: data[3].labels.clone(),
        samples: data[3].samples[10..20].to_vec(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }];
    let out = db.write(retry, Durability::Applied).await.unwrap();
    assert_eq!((out.appended, out.duplicates, out.rejected), (10, 0, 0));
    assert_eq!(
        read_all(&db).await,
        expected(&written),
        "retried spilled samples read once"
    );
    write_parts(&db, &data, 8..10).await;
    assert_eq!(read_all(&db).await, want, "spilled and in-memory head read");
    let one = db
        .select(&api(), t0 + HOUR / 2, t0 + 2 * HOUR)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].timestamps.first(), Some(&(t0 + HOUR / 2)));
    assert_eq!(one[0].timestamps.len(), 361);
    db.close().await.unwrap();

    // Recovery finds the segments and replays only the samples after them.
    let db = Writer::open(Arc::clone(&store), "db", settings.clone(), clock.clone())
        .await
        .unwrap();
    // (and the ten retried samples kept beside the chunk, which no segment
    // holds).
    assert_eq!(db.stats().samples_replayed.load(Relaxed), 20 * 120 + 10);
    assert_eq!(read_all(&db).await, want, "after recovery");

    // Sealing writes each series' chunk key listing its segments.
    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR + 1));
    assert_eq!(read_all(&db).await, want, "sealed segments");
    let one = db
        .select(&api(), t0 + HOUR / 2, t0 + 2 * HOUR)
        .await
        .unwrap();
    assert_eq!(one[0].timestamps.len(), 361);
    db.close().await.unwrap();

    let db = Writer::open(Arc::clone(&store), "db", settings, clock.clone())
        .await
        .unwrap();
    assert_eq!(db.stats().samples_replayed.load(Relaxed), 20 * 120);
    assert_eq!(read_all(&db).await, want, "sealed, after recovery");
    db.close().await.unwrap();
}
