//! The state one open database shares between its handles ([`Storage`],
//! [`Writer`]) and its background work (coordinator, sealer, spill, late
//! pass, log follower).
//!
//! [`Storage`]: crate::Storage
//! [`Writer`]: crate::Writer

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use slatedb::config::{PutOptions, Ttl};
use slatedb_common::metrics::DefaultMetricsRecorder;

use crate::error::StorageError;
use crate::instrumented::ObjectStoreCounters;
use crate::settings::StorageSettings;
use crate::stats::StorageStats;
use crate::{backend, cache, head, late, metadata, Clock};

pub(crate) struct Shared {
    pub(crate) backend: backend::Backend,
    pub(crate) head: head::Head,
    pub(crate) settings: StorageSettings,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) stats: StorageStats,
    pub(crate) fenced: AtomicBool,
    pub(crate) object_store: Arc<ObjectStoreCounters>,
    pub(crate) slatedb_metrics: Arc<DefaultMetricsRecorder>,
    /// SlateDB's in-memory block cache, to report how full it is.
    pub(crate) memory_cache: cache::MemoryCache,
    /// Held by the spill pass while it writes a batch, and by the sealer to
    /// mark a bucket as being sealed.
    pub(crate) spill_lock: tokio::sync::Mutex<()>,
    /// Late samples: the late pass's lock, wake-up and sequence.
    pub(crate) late: Arc<late::LateState>,
    /// Which sealed buckets compacted blocks hold (`compact.rs`).
    pub(crate) compacted: parking_lot::RwLock<crate::compact::Compacted>,
    /// Bytes deleted or overwritten, and the merge asked for to give
    /// their space back (a writer's).
    pub(crate) reclaim: crate::reclaim::Reclaim,
    /// Metric metadata a writer has stored.
    pub(crate) metadata: metadata::MetadataCache,
    /// On a reader node: when (ms since the epoch, by `clock`) the last
    /// poll that read the writer's log to its end began; 0 before the
    /// first.
    pub(crate) followed_ms: std::sync::atomic::AtomicI64,
    /// Dropped with this state, which ends the freezer's wait at once.
    pub(crate) _freezer_stop: std::sync::mpsc::Sender<()>,
}

impl Shared {
    /// Records that this writer was fenced, if that is what `e` says, and
    /// hands `e` back.
    pub(crate) fn note_fenced(&self, e: StorageError) -> StorageError {
        if matches!(e, StorageError::Fenced(_)) && !self.fenced.swap(true, Ordering::AcqRel) {
            tracing::error!("this writer has been fenced by a newer writer on the same path");
        }
        e
    }

    /// The expiry of a bucket's or block's sealed data (chunks, segments,
    /// postings): its end plus the retention, so the whole span expires at
    /// once.
    pub(crate) fn span_ttl(&self, span: impl Into<crate::keys::Span>) -> PutOptions {
        let end = self
            .span_buckets(span.into())
            .1
            .saturating_mul(self.settings.bucket_ms());
        PutOptions {
            ttl: Ttl::ExpireAtMillis(end.saturating_add(self.settings.retention_ms())),
        }
    }

    pub(crate) fn series_ttl(&self) -> PutOptions {
        PutOptions {
            ttl: Ttl::ExpireAfterMillis(
                u64::try_from(self.settings.retention_ms()).unwrap_or(u64::MAX),
            ),
        }
    }
}

impl Shared {
    /// Whether a newer writer fenced this one.
    pub(crate) fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Acquire)
    }
}
