//! What the writer counts toward giving space back: bytes deleted or
//! overwritten, and the merge asked for (`reclaim.rs` does the work).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use slatedb::admin::Admin;
use slatedb::compactor::Compaction;

pub(crate) struct Reclaim {
    pub(crate) admin: Admin,
    /// Bytes deleted or overwritten since the last merge was asked for.
    pub(crate) dead: AtomicU64,
    /// The merge asked for and the bytes it was asked for, until it is
    /// done.
    pub(crate) asked: tokio::sync::Mutex<Option<(Compaction, u64)>>,
}

impl Reclaim {
    pub(crate) fn new(path: &str, store: Arc<dyn object_store::ObjectStore>) -> Self {
        Self {
            admin: Admin::builder(path.to_owned(), store).build(),
            dead: AtomicU64::new(0),
            asked: tokio::sync::Mutex::new(None),
        }
    }

    /// Counts `bytes` of values deleted or overwritten.
    pub(crate) fn note(&self, bytes: usize) {
        self.dead.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes counted since the last merge was asked for.
    pub(crate) fn counted(&self) -> u64 {
        self.dead.load(Ordering::Relaxed)
    }
}
