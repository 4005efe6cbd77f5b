//! What one role alone keeps. A writer: whether it was fenced, the spill
//! lock, the late pass's state, the count toward giving space back and the
//! metadata it stored. A reader node: when it last read the writer's log
//! to its end. The shared state holds one of the two.

use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::Arc;

use super::late::LateState;
use super::metadata::MetadataCache;
use super::reclaim::Reclaim;

/// The state of the role a database was opened in.
pub(crate) enum Role {
    Writer(Box<WriterState>),
    Reader(ReaderState),
}

/// What only a writer keeps.
pub(crate) struct WriterState {
    /// Set once a newer writer on the same path fenced this one.
    pub(crate) fenced: AtomicBool,
    /// Held by the spill pass while it writes a batch, and by the sealer to
    /// mark a bucket as being sealed.
    pub(crate) spill_lock: tokio::sync::Mutex<()>,
    /// Late samples: the late pass's lock, wake-up and sequence.
    pub(crate) late: Arc<LateState>,
    /// Bytes deleted or overwritten, and the merge asked for to give their
    /// space back.
    pub(crate) reclaim: Reclaim,
    /// Metric metadata this writer has stored.
    pub(crate) metadata: MetadataCache,
}

/// What only a reader node keeps.
#[derive(Default)]
pub(crate) struct ReaderState {
    /// When (ms since the epoch, by the database's clock) the last poll
    /// that read the writer's log to its end began; 0 before the first.
    pub(crate) followed_ms: AtomicI64,
}

impl WriterState {
    pub(crate) fn new(now_ms: i64, reclaim: Reclaim) -> Self {
        Self {
            fenced: AtomicBool::new(false),
            spill_lock: tokio::sync::Mutex::new(()),
            late: Arc::new(LateState::new(now_ms)),
            reclaim,
            metadata: MetadataCache::default(),
        }
    }
}
