//! The databases the tests open: default settings without timed seal
//! checks, a database on a manual clock whose seals are spread, with two
//! buckets due, and writes in a sender's request sizes.

use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_storage::{Durability, IngestSeries, ManualClock, StorageSettings, Writer};

use crate::data::dataset;

pub(crate) const HOUR: i64 = 3_600_000;

pub(crate) fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

/// A new database whose seals are spread over `spread`, on a manual clock
/// at `t0`, the start of the hour three hours ago, holding `data(t0)`.
pub(crate) async fn spread_db(
    spread: Duration,
    data: impl Fn(i64) -> Vec<IngestSeries>,
) -> (Arc<dyn ObjectStore>, Writer, Arc<ManualClock>, i64) {
    use strata_storage::Clock;
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let settings = StorageSettings {
        seal_check_interval: Duration::from_millis(20),
        seal_spread: spread,
        ..StorageSettings::default()
    };
    let db = Writer::open(Arc::clone(&store), "db", settings, clock.clone())
        .await
        .unwrap();
    db.write(data(t0), Durability::Applied).await.unwrap();
    (store, db, clock, t0)
}

/// Writes `dataset(t0)` and moves the clock past the end of its first two
/// buckets plus grace, so the sealer finds both due.
pub(crate) async fn two_buckets_due(spread: Duration) -> (Arc<dyn ObjectStore>, Writer, i64) {
    let (store, db, clock, t0) = spread_db(spread, dataset).await;
    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    (store, db, t0)
}

/// Writes `data` in requests of 60 samples per series, as a sender would;
/// each must be appended whole.
pub(crate) async fn write_parts(db: &Writer, data: &[IngestSeries], parts: std::ops::Range<usize>) {
    for part in parts {
        let req = data
            .iter()
            .map(|s| IngestSeries {
                labels: s.labels.clone(),
                samples: s.samples[part * 60..(part + 1) * 60].to_vec(),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
            .collect();
        let out = db.write(req, Durability::Applied).await.unwrap();
        assert_eq!(out.appended, data.len() * 60);
    }
}
