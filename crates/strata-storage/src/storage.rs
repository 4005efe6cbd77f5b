//! The read handle of an open database: what queries, status pages and
//! metrics need, on the writer (through [`Writer`]) and on a reader node,
//! which also follows the writer's log.
//!
//! [`Writer`]: crate::writer::Writer

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::cache::CacheUsage;
use crate::error::StorageError;
use crate::instrumented::ObjectStoreStats;
use crate::settings::StorageSettings;
use crate::shared::Shared;
use crate::stats::StorageStats;
use crate::{head, metadata, slatedb_metrics};

/// An open Strata database on one object-store path, read-only: the
/// writer's own (see [`crate::writer::Writer::storage`]) or a reader node's.
pub struct Storage {
    pub(crate) shared: Arc<Shared>,
    /// A reader node's log follower, until close.
    follower: Mutex<Option<Follower>>,
}

/// A reader node's log-following task and the switch that stops it.
pub(crate) struct Follower {
    pub(crate) task: JoinHandle<()>,
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
}

impl Storage {
    pub(crate) fn new(shared: Arc<Shared>, follower: Option<Follower>) -> Self {
        Self {
            shared,
            follower: Mutex::new(follower),
        }
    }

    /// A handle on `shared` for the background passes.
    pub(crate) fn view(shared: Arc<Shared>) -> Self {
        Self::new(shared, None)
    }

    /// Whether this is a read-only reader node's database.
    pub fn is_reader(&self) -> bool {
        self.shared.backend.writer().is_none()
    }

    /// On a reader node: stops following the log and closes SlateDB's
    /// reader. A writer's database is closed by [`crate::writer::Writer::close`];
    /// on its read handle this does nothing.
    pub async fn close(&self) -> Result<(), StorageError> {
        if !self.is_reader() {
            return Ok(());
        }
        let follower = self.follower.lock().take();
        if let Some(f) = follower {
            let _ = f.stop.send(true);
            let _ = f.task.await;
        }
        self.shared.backend.close().await
    }

    /// Bytes compaction deleted or overwrote since the last merge of
    /// SlateDB's tables was asked for (0 on a reader node).
    pub fn reclaimable_bytes(&self) -> u64 {
        self.shared.writing().map_or(0, |w| w.reclaim.counted())
    }

    pub fn stats(&self) -> &StorageStats {
        &self.shared.stats
    }

    pub fn head(&self) -> &head::Head {
        &self.shared.head
    }

    pub fn settings(&self) -> &StorageSettings {
        &self.shared.settings
    }

    /// Now, by this database's clock (ms since the epoch).
    pub fn now_ms(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// Whether a newer writer fenced this one.
    pub fn is_fenced(&self) -> bool {
        self.shared.is_fenced()
    }

    /// On a reader node: when (ms since the epoch) it last read the
    /// writer's log to its end, so how far it may lag behind the writer;
    /// `None` on a writer and before the first read.
    pub fn followed_at_ms(&self) -> Option<i64> {
        let reader = self.shared.reading()?;
        let ms = reader
            .followed_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        (ms > 0).then_some(ms)
    }

    /// Requests and errors against the object store so far.
    pub fn object_store_stats(&self) -> ObjectStoreStats {
        self.shared.object_store.snapshot()
    }

    /// The metric metadata stored for `tenant`: one metric, or all, in
    /// name order.
    pub async fn metadata(
        &self,
        tenant: &str,
        metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<metadata::MetadataEntry>)>, StorageError> {
        metadata::read(&self.shared, tenant, metric).await
    }

    /// How long every object-store request has failed, and the last
    /// failure; `None` while the store answers.
    pub fn object_store_failing_for(&self) -> Option<(std::time::Duration, String)> {
        self.shared.object_store.health.failing_for()
    }

    /// How full SlateDB's in-memory block cache is.
    pub fn cache_usage(&self) -> CacheUsage {
        self.shared.memory_cache.usage()
    }

    /// SlateDB's own metrics (WAL flushes, caches, object-store cache hits,
    /// compaction) in the Prometheus text format, named `slatedb_*`.
    pub fn slatedb_metrics_text(&self) -> String {
        slatedb_metrics::render(&self.shared.slatedb_metrics.snapshot())
    }
}
