//! The store's live keys counted by kind follow what the writer did: log
//! records while samples are only in the head, chunks, postings and
//! labels once a seal wrote them, and the log records it made obsolete
//! gone.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use strata_codec::Label;
use strata_storage::key_usage::KindUsage;
use strata_storage::{Clock, Durability, IngestSeries, ManualClock, StorageSettings, Writer};

const HOUR: i64 = 3_600_000;

fn kind<'a>(usage: &'a [KindUsage], name: &str) -> Option<&'a KindUsage> {
    usage.iter().find(|k| k.kind == name)
}

#[tokio::test]
async fn live_keys_by_kind_follow_the_seal() {
    // SlateDB expires keys by the real clock, so the data must be recent.
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let settings = StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    };
    let db = Writer::open(Arc::new(InMemory::new()), "db", settings, clock.clone())
        .await
        .unwrap();
    // 4 series, 2.5 hours at 15 s, in 5 requests of half an hour each.
    for part in 0..5i64 {
        let batch = (0..4)
            .map(|i| IngestSeries {
                labels: vec![
                    Label::new("__name__", "up"),
                    Label::new("instance", format!("host-{i}")),
                ],
                samples: (0..120)
                    .map(|k| (t0 + part * HOUR / 2 + k * 15_000, f64::from(i)))
                    .collect(),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
            .collect();
        db.write(batch, Durability::Applied).await.unwrap();
    }
    let before = db.key_usage().await.unwrap();
    assert_eq!(
        kind(&before, "log record").map(|k| k.keys),
        Some(5),
        "{before:?}"
    );
    assert!(kind(&before, "bucket chunk").is_none(), "{before:?}");
    assert!(kind(&before, "bucket postings").is_none(), "{before:?}");

    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    let after = db.key_usage().await.unwrap();
    let chunks = kind(&after, "bucket chunk").unwrap();
    assert_eq!(chunks.keys, 4 * 2, "a chunk per series and sealed bucket");
    // 2 × 120 samples of a constant, sealed: a few bytes each, not none.
    assert!(
        chunks.value_bytes > 0 && chunks.value_bytes < 8 * 240,
        "{chunks:?}"
    );
    assert_eq!(kind(&after, "series labels").map(|k| k.keys), Some(4));
    // Per bucket: `__name__=up`, four instances and the list of all.
    assert_eq!(
        kind(&after, "bucket postings").map(|k| k.keys),
        Some(2 * 6),
        "{after:?}"
    );
    // The records of the sealed buckets are deleted; the one of the open
    // bucket stays.
    assert_eq!(
        kind(&after, "log record").map(|k| k.keys),
        Some(1),
        "{after:?}"
    );
    assert!(after.iter().all(|k| k.kind != "other"), "{after:?}");
    db.close().await.unwrap();
}
