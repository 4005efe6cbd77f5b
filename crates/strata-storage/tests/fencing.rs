//! Two writers on one path: the newer one fences the older, whose writes
//! then fail with `StorageError::Fenced`, and everything acknowledged as
//! Durable before that is readable from the newer one.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    open_object_store, Clock, Durability, IngestSeries, Storage, StorageError, StorageSettings,
    SystemClock, Writer,
};

/// How long the older writer may take to notice it was fenced: its next
/// WAL flush finds the newer writer's fence object.
const NOTICE_WITHIN: Duration = Duration::from_secs(10);

fn settings() -> StorageSettings {
    StorageSettings {
        flush_interval: Duration::from_millis(100),
        ..StorageSettings::default()
    }
}

fn write_of(writer: &str, t: i64, v: f64) -> Vec<IngestSeries> {
    (0..10)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "fence_test"),
                Label::new("i", i.to_string()),
                Label::new("writer", writer),
            ],
            samples: vec![(t, v + f64::from(i))],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

async fn samples_of(db: &Storage, writer: &str) -> Vec<(i64, f64)> {
    let found = db
        .select(
            &[
                Matcher::new(MatchOp::Equal, "__name__", "fence_test").unwrap(),
                Matcher::new(MatchOp::Equal, "writer", writer).unwrap(),
                Matcher::new(MatchOp::Equal, "i", "0").unwrap(),
            ],
            0,
            i64::MAX / 2,
        )
        .await
        .unwrap();
    found
        .into_iter()
        .flat_map(|s| s.timestamps.into_iter().zip(s.values))
        .collect()
}

/// `first` is the durability of the older writer's first write after the
/// newer one opened: a Durable one learns of the fence while awaiting its
/// flush, an Applied one is acknowledged and a later write fails.
async fn newer_writer_fences_older(store: Arc<dyn ObjectStore>, path: &str, first: Durability) {
    let clock = Arc::new(SystemClock);
    let t0 = clock.now_ms();
    let old = Writer::open(Arc::clone(&store), path, settings(), clock.clone())
        .await
        .unwrap();
    for k in 0..5 {
        old.write(write_of("old", t0 + k, k as f64), Durability::Durable)
            .await
            .unwrap();
    }
    // An Applied write the older writer has flushed before the newer opens.
    old.write(write_of("old", t0 + 5, 5.0), Durability::Applied)
        .await
        .unwrap();
    old.flush().await.unwrap();
    assert!(!old.is_fenced());

    let new = Writer::open(Arc::clone(&store), path, settings(), clock.clone())
        .await
        .unwrap();
    let want_old: Vec<(i64, f64)> = (0..6).map(|k| (t0 + k, k as f64)).collect();
    assert_eq!(
        samples_of(&new, "old").await,
        want_old,
        "recovered from the log"
    );

    // The older writer keeps writing until it notices. Applied writes may
    // still be acknowledged until its next WAL flush meets the fence; they
    // are lost, as any Applied write in a crash's last flush interval.
    let started = Instant::now();
    let mut k = 6;
    let err = loop {
        assert!(
            started.elapsed() < NOTICE_WITHIN,
            "the older writer did not notice the fence within {NOTICE_WITHIN:?}"
        );
        let durability = match (first, k % 2) {
            (Durability::Durable, 0) | (Durability::Applied, 1) => Durability::Durable,
            _ => Durability::Applied,
        };
        match old
            .write(write_of("old", t0 + k, k as f64), durability)
            .await
        {
            Ok(_) => assert_eq!(durability, Durability::Applied, "a Durable write succeeded"),
            Err(e) => break e,
        }
        k += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "{first:?} first: older writer fenced after {:?} ({} writes acknowledged): {err}",
        started.elapsed(),
        k - 6
    );
    assert!(matches!(err, StorageError::Fenced(_)), "{err:?}");
    assert!(old.is_fenced(), "is_fenced() after a Fenced error");
    let again = old
        .write(write_of("old", t0 + 1000, 0.0), Durability::Applied)
        .await;
    assert!(matches!(again, Err(StorageError::Fenced(_))), "{again:?}");

    // The newer writer is unaffected and sees only what the older one
    // made durable before it opened.
    for k in 0..3 {
        new.write(write_of("new", t0 + k, -(k as f64)), Durability::Durable)
            .await
            .unwrap();
    }
    assert!(!new.is_fenced());
    assert_eq!(samples_of(&new, "old").await, want_old);
    let want_new: Vec<(i64, f64)> = (0..3).map(|k| (t0 + k, -(k as f64))).collect();
    assert_eq!(samples_of(&new, "new").await, want_new);
    old.close().await.unwrap();
    new.close().await.unwrap();

    // And a third opening finds the same.
    let third = Writer::open(store, path, settings(), clock).await.unwrap();
    assert_eq!(samples_of(&third, "old").await, want_old);
    assert_eq!(samples_of(&third, "new").await, want_new);
    third.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_while_awaiting_durability() {
    newer_writer_fences_older(Arc::new(InMemory::new()), "db", Durability::Durable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_after_applied_writes() {
    newer_writer_fences_older(Arc::new(InMemory::new()), "db", Durability::Applied).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_on_a_local_folder() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let loc = open_object_store(&url, &Default::default()).unwrap();
    newer_writer_fences_older(loc.store, &loc.path, Durability::Durable).await;
}
