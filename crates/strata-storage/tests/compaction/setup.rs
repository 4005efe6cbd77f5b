//! What the compaction tests open: storage settings with blocks of six
//! hours, where a history starts, a reader node, and a writer on a store
//! in a folder (for the child process a test kills).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
use strata_storage::{
    open_object_store, ManualClock, ReaderSettings, Storage, StorageSettings, SystemClock, Writer,
};

pub(crate) const HOUR: i64 = 3_600_000;
/// Buckets per block in these tests: blocks of six hours.
pub(crate) const BLOCK_HOURS: i64 = 6;

pub(crate) fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        flush_interval: Duration::from_millis(10),
        block_duration: Duration::from_secs(BLOCK_HOURS as u64 * 3600),
        // Small spill threshold: some series spill segments before the seal.
        spill_min_samples: 8,
        ..StorageSettings::default()
    }
}

/// The start (ms) of the block holding the hour `hours_back` hours before
/// `now_ms`: where a test's history begins.
pub(crate) fn block_aligned(now_ms: i64, hours_back: i64) -> i64 {
    (now_ms / HOUR - hours_back) / BLOCK_HOURS * BLOCK_HOURS * HOUR
}

pub(crate) async fn open_reader(store: &Arc<dyn ObjectStore>, clock: &Arc<ManualClock>) -> Storage {
    let reader = ReaderSettings {
        poll_interval: Duration::from_millis(20),
        ..ReaderSettings::default()
    };
    Storage::open_reader(Arc::clone(store), "db", settings(), reader, clock.clone())
        .await
        .unwrap()
}

pub(crate) const CHILD_ENV: &str = "STRATA_COMPACTION_CHILD_DIR";

pub(crate) fn store_url(dir: &Path) -> String {
    format!("file://{}", dir.join("store").display())
}

/// A writer on the store in folder `dir`, on the wall clock.
pub(crate) async fn open_folder(dir: &Path) -> Writer {
    let loc = open_object_store(&store_url(dir), &Default::default()).unwrap();
    Writer::open(loc.store, &loc.path, settings(), Arc::new(SystemClock))
        .await
        .unwrap()
}
