//! `delete_series` leaves a deletion's samples out of every read: from a
//! day block, from sealed buckets and from the head, on the writer at
//! once, on a reader node within its next look at the deletions, and
//! after a restart; other series and other times are left whole.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, Storage, StorageSettings,
    SystemClock, Writer, TOMBSTONE_POLL,
};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        flush_interval: Duration::from_millis(10),
        block_duration: Duration::from_secs(6 * 3600),
        ..StorageSettings::default()
    }
}

fn labels(job: &str) -> Vec<Label> {
    vec![
        Label::new("__name__", "up"),
        Label::new("instance", "h1"),
        Label::new("job", job),
    ]
}

fn matcher(op: MatchOp, name: &str, value: &str) -> Matcher {
    Matcher::new(op, name, value).unwrap()
}

/// Every sample of `job`'s series in `[mint, maxt]`.
async fn samples(db: &Storage, job: &str, mint: i64, maxt: i64) -> Vec<(i64, f64)> {
    let found = db
        .select(&[matcher(MatchOp::Equal, "job", job)], mint, maxt)
        .await
        .unwrap();
    assert!(found.len() <= 1, "{found:?}");
    found
        .first()
        .map(|s| s.timestamps.iter().copied().zip(s.values.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_hides_its_samples_in_blocks_buckets_and_the_head_everywhere() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    // Ten hours a minute apart, the first six in a block of their own.
    let first = ((now / HOUR - 10) / 6 * 6) * HOUR;
    let clock = Arc::new(ManualClock::new(now));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let times: Vec<i64> = (first..now - MINUTE).step_by(MINUTE as usize).collect();
    for job in ["a", "b"] {
        let req = vec![IngestSeries {
            labels: labels(job),
            samples: times.iter().map(|&t| (t, (t / MINUTE) as f64)).collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        }];
        db.write(req, Durability::Applied).await.unwrap();
    }
    db.seal_due_now().await.unwrap();
    let pass = db.compact_now(true).await.unwrap();
    assert!(pass.blocks >= 1, "{pass:?}");
    let sealed = db.head().sealed_through().unwrap();
    assert!(
        (sealed + 1) * HOUR > first + 6 * HOUR,
        "a sealed bucket after the block"
    );
    let whole = samples(db.storage(), "a", first, now).await;
    assert_eq!(whole.len(), times.len());

    let reader_settings = ReaderSettings {
        poll_interval: Duration::from_millis(20),
        ..ReaderSettings::default()
    };
    let reader = Storage::open_reader(
        Arc::clone(&store),
        "db",
        settings(),
        reader_settings,
        clock.clone(),
    )
    .await
    .unwrap();

    // From inside the block to the head's open bucket.
    let (mint, maxt) = (first + 2 * HOUR, now - 5 * MINUTE);
    db.delete_series(
        &[
            matcher(MatchOp::Equal, "__name__", "up"),
            matcher(MatchOp::RegexMatch, "job", "a|c"),
        ],
        mint,
        maxt,
    )
    .await
    .unwrap();
    let kept = |list: &[(i64, f64)]| -> Vec<(i64, f64)> {
        list.iter()
            .copied()
            .filter(|&(t, _)| t < mint || t > maxt)
            .collect()
    };
    let want = kept(&whole);
    assert!(want.len() < whole.len() && !want.is_empty());
    // The writer, at once: block, buckets and head alike.
    assert_eq!(samples(db.storage(), "a", first, now).await, want);
    assert_eq!(samples(db.storage(), "b", first, now).await, whole);
    // A range wholly deleted holds no series.
    assert!(samples(db.storage(), "a", mint, maxt).await.is_empty());

    // The reader node, within its next look at the deletions.
    let deadline = Instant::now() + TOMBSTONE_POLL + Duration::from_secs(20);
    while samples(&reader, "a", first, now).await != want {
        assert!(
            Instant::now() < deadline,
            "the reader node still reads deleted samples"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(samples(&reader, "b", first, now).await, whole);
    reader.close().await.unwrap();

    // Samples written after the deletion, in its range, are deleted too (as
    // Prometheus' tombstones cover their whole range); later ones are not.
    let late = IngestSeries {
        labels: labels("a"),
        samples: vec![(maxt - 30_000, 1.0), (now - 2 * MINUTE + 1, 2.0)],
        exemplars: Vec::new(),
        histograms: Vec::new(),
    };
    db.write(vec![late], Durability::Applied).await.unwrap();
    let mut after = want.clone();
    after.push((now - 2 * MINUTE + 1, 2.0));
    after.sort_by_key(|&(t, _)| t);
    assert_eq!(samples(db.storage(), "a", first, now).await, after);

    // After a restart.
    db.close().await.unwrap();
    drop(db);
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(samples(db.storage(), "a", first, now).await, after);
    assert_eq!(samples(db.storage(), "b", first, now).await, whole);
    db.close().await.unwrap();
}
