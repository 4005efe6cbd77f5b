//! Strata's storage engine on SlateDB: the keyspace, the in-memory head,
//! the write coordinator, the sealer, recovery and the read API.
//!
//! ```text
//!  write(labels, samples) ──resolve series (caller's task)──▶ coordinator queue
//!  coordinator: append to head ─▶ one `L` record (+ new `S` keys) ─▶ SlateDB
//!  spill pass (every 30 s): long frozen runs ─▶ `C` segments, freed from the head
//!  sealer (bucket end + grace): head bucket ─▶ `C` chunks + `I` postings + `M`
//!  open: `M` checkpoint ─▶ load `S` ─▶ replay `L` after the checkpoint
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

mod backend;
mod cache;
pub mod clock;
mod coordinator;
pub mod error;
pub mod faults;
mod follower_store;
pub mod head;
pub mod instrumented;
pub mod keys;
mod late;
mod merge;
pub mod metadata;
mod object_store_url;
mod postings;
mod read;
mod recovery;
mod sealer;
pub mod settings;
pub mod slatedb_metrics;
mod spill;
pub mod stats;
mod tailer;
pub mod values;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use parking_lot::Mutex;
use slatedb::config::{PutOptions, Ttl};
use slatedb::Db;
use slatedb_common::metrics::{DefaultMetricsRecorder, MetricsRecorder};
use strata_codec::{Label, LabelPairs};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub use cache::CacheUsage;
pub use clock::{Clock, ManualClock, SystemClock};
pub use coordinator::{render_labels, ResolvedSeries, WriteOutcome};
pub use error::StorageError;
pub use faults::{Fault, Faults, FaultyStore, Op, When};
pub use head::{tenant_of, Rejection, TENANT_LABEL};
pub use instrumented::{InstrumentedStore, ObjectStoreCounters, ObjectStoreStats};
pub use late::{BucketLayout, FoldPass, LatePass};
pub use object_store_url::{
    check_object_store, open_object_store, ObjectStoreLocation, S3Settings, CHECK_TIMEOUT,
};
pub use read::SeriesData;
pub use settings::{Compression, ReaderSettings, StorageSettings};
pub use spill::SpillPass;
pub use stats::{Histogram, StorageStats};

use coordinator::Command;
use follower_store::{FollowerStore, Quiet};

/// When a write is answered; in configuration `"applied"` or `"durable"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Once applied to the head and appended to SlateDB's WAL buffer; a
    /// crash loses at most one flush interval.
    #[default]
    Applied,
    /// Once SlateDB reports the WAL flushed to the object store.
    Durable,
}

/// Limits on what one write may add; the defaults limit nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteLimits {
    /// Most active series (with samples in a bucket not yet sealed) the
    /// tenant of a series may have before a new series of it is rejected;
    /// 0 = no limit. Series already active keep ingesting.
    pub max_active_series: usize,
    /// Samples later than now plus this many milliseconds are rejected.
    pub max_future_ms: Option<i64>,
}

/// The samples of one series to write; labels sorted with unique names,
/// owned or borrowed from a decoded request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestSeries<L = Vec<Label>> {
    pub labels: L,
    pub samples: Vec<(i64, f64)>,
}

pub(crate) struct Inner {
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
    /// Where a writer's garbage is collected once more after a clean close;
    /// `None` on a reader.
    pub(crate) collect_on_close: Option<GarbageTarget>,
    /// Held by the spill pass while it writes a batch, and by the sealer to
    /// mark a bucket as being sealed.
    pub(crate) spill_lock: tokio::sync::Mutex<()>,
    /// Late samples: the late pass's lock, wake-up and sequence.
    pub(crate) late: Arc<late::LateState>,
    /// Metric metadata a writer has stored.
    pub(crate) metadata: metadata::MetadataCache,
}

impl Inner {
    /// Records that this writer was fenced, if that is what `e` says, and
    /// hands `e` back.
    pub(crate) fn note_fenced(&self, e: StorageError) -> StorageError {
        if matches!(e, StorageError::Fenced(_)) && !self.fenced.swap(true, Ordering::AcqRel) {
            tracing::error!("this writer has been fenced by a newer writer on the same path");
        }
        e
    }

    /// The expiry of a bucket's sealed data (chunks, segments, postings):
    /// the bucket's end plus the retention, so the whole bucket expires at
    /// once.
    pub(crate) fn bucket_ttl(&self, bucket: i64) -> PutOptions {
        let end = bucket
            .saturating_add(1)
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

/// How often the head's chunk tails are looked at for freezing and
/// spilling.
const FREEZE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// Starts the background pass that freezes long head-chunk tails into the
/// compact sealed format (see `head::HeadChunk`) and, on a writer, spills
/// long frozen runs to the store (see `spill`), on a thread of low
/// priority, until the storage is dropped.
fn start_freezer(inner: &Arc<Inner>, replayed: bool) {
    let weak = Arc::downgrade(inner);
    let runtime = tokio::runtime::Handle::try_current().ok();
    let started = std::thread::Builder::new()
        .name("strata-freezer".into())
        .spawn(move || {
            sealer::lower_priority();
            // After a replay the first pass runs at once: a head just
            // replayed from the log is all Gorilla chunks.
            if !replayed {
                std::thread::sleep(FREEZE_INTERVAL);
            }
            loop {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let frozen = inner.head.freeze_tails(head::FREEZE_MIN_SAMPLES);
                tracing::debug!(frozen, "froze head chunk tails");
                if let Some(runtime) = &runtime {
                    match spill::spill_pass(&inner, runtime) {
                        Ok(pass) if pass.segments > 0 => tracing::debug!(
                            segments = pass.segments,
                            bytes = pass.bytes,
                            "spilled head segments"
                        ),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(
                            error = %e,
                            "cannot spill head segments; they stay in memory"
                        ),
                    }
                }
                drop(inner);
                std::thread::sleep(FREEZE_INTERVAL);
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start the head freezer; the head stays in Gorilla chunks");
    }
}

/// Starts the writer's late pass: writes the head's late samples (of sealed
/// buckets) to the store every [`late::LATE_INTERVAL`] while it holds any,
/// at once when it holds many, and folds quiet buckets' late segments into
/// their chunks every [`late::FOLD_INTERVAL`]; on a thread of low
/// priority, until the storage is dropped.
fn start_late_pass(inner: &Arc<Inner>) {
    if inner.backend.writer().is_none() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(inner);
    let state = Arc::clone(&inner.late);
    let started = std::thread::Builder::new()
        .name("strata-late".into())
        .spawn(move || {
            sealer::lower_priority();
            let mut last_fold = std::time::Instant::now();
            loop {
                state.wait(late::LATE_INTERVAL);
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let Some(db) = inner.backend.writer() else {
                    return;
                };
                if inner.head.extra_samples() > 0 {
                    if let Err(e) = runtime.block_on(late::flush(&inner, db)) {
                        tracing::warn!(error = %e, "cannot write late samples; they stay in memory");
                    }
                }
                if last_fold.elapsed() >= late::FOLD_INTERVAL {
                    last_fold = std::time::Instant::now();
                    let view = Storage::view(Arc::clone(&inner));
                    if let Err(e) = runtime.block_on(late::fold(&view, false)) {
                        tracing::warn!(error = %e, "cannot fold late segments; will retry");
                    }
                }
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start the late pass; late samples stay in memory until a seal");
    }
}

/// Timestamps and values of one series, ascending.
type Samples = (Vec<i64>, Vec<f64>);

/// A writer's database, for one last garbage collection after it closes.
pub(crate) struct GarbageTarget {
    path: String,
    store: Arc<dyn object_store::ObjectStore>,
    local_folder: bool,
}

impl GarbageTarget {
    /// Deletes what a cleanly closed writer leaves for SlateDB's collector:
    /// WAL files its final flush put into tables, and tables compactions
    /// replaced. The background collector keeps them at least five minutes
    /// (a reader node may still be reading one; such a read fails and is
    /// retried at its next poll), so without this a stopped writer leaves
    /// its last minutes of WAL beside the tables holding the same data.
    /// Files the manifest still refers to are never deleted.
    async fn collect_now(&self) {
        use slatedb::config::{GarbageCollectorDirectoryOptions, GarbageCollectorOptions};
        let now = Some(GarbageCollectorDirectoryOptions {
            interval: None,
            min_age: std::time::Duration::ZERO,
            dry_run: false,
        });
        let gc = slatedb::GarbageCollectorBuilder::new(self.path.clone(), Arc::clone(&self.store))
            .with_options(GarbageCollectorOptions {
                manifest_options: None,
                wal_options: now,
                wal_fence_options: None,
                compacted_options: now,
                compactions_options: None,
                boundary_files_enabled: !self.local_folder,
                ..GarbageCollectorOptions::default()
            })
            .build();
        gc.run_gc_once().await;
    }
}

/// Whether `store` is a local folder, seen through any wrappers (each names
/// the store it wraps).
fn is_local_folder(store: &dyn object_store::ObjectStore) -> bool {
    store.to_string().contains("LocalFileSystem(")
}

/// The runtime SlateDB's compactions run on: one thread at the sealer's
/// lower priority, shared by every database the process opens. On the
/// request runtime a compaction's merge held a worker for as long as each
/// step ran, and requests queued behind it (the coordinator's included)
/// waited; at a lower priority it takes the CPU ingest leaves.
fn compaction_runtime() -> Option<tokio::runtime::Handle> {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("strata-compactor")
                .on_thread_start(sealer::lower_priority)
                .enable_all()
                .build()
                .map_err(|e| {
                    tracing::warn!(error = %e, "no runtime of its own for compaction; it shares the request runtime");
                })
                .ok()
        })
        .as_ref()
        .map(|r| r.handle().clone())
}

/// SlateDB's settings for a writer with these storage settings, on a local
/// folder or not.
fn slatedb_settings(settings: &StorageSettings, local_folder: bool) -> slatedb::Settings {
    use slatedb::config::{
        CompactionWorkerOptions, CompactorOptions, GarbageCollectorDirectoryOptions,
        GarbageCollectorOptions,
    };
    let codec = settings.compression.codec();
    // The embedded compaction worker must write tables as the writer does.
    let compactor = CompactorOptions {
        worker: Some(CompactionWorkerOptions {
            compression_codec: codec,
            ..CompactionWorkerOptions::default()
        }),
        ..CompactorOptions::default()
    };
    // Collect obsolete WAL files and compacted tables every minute rather
    // than every ten, so disk use follows the data; files stay at least the
    // default five minutes for reader nodes still using them.
    let every_minute = Some(GarbageCollectorDirectoryOptions {
        interval: Some(std::time::Duration::from_secs(60)),
        ..GarbageCollectorDirectoryOptions::default()
    });
    let gc = GarbageCollectorOptions {
        wal_options: every_minute,
        compacted_options: every_minute,
        // A local folder cannot overwrite a file conditionally, which the
        // boundary files of manifest and compaction-state collection need;
        // with them, that collection fails with an error every time.
        boundary_files_enabled: !local_folder,
        ..GarbageCollectorOptions::default()
    };
    slatedb::Settings {
        flush_interval: Some(settings.flush_interval),
        compression_codec: codec,
        compactor_options: Some(compactor),
        garbage_collector_options: Some(gc),
        ..slatedb::Settings::default()
    }
}

/// An open Strata database on one object-store path: the writer, or a
/// read-only reader node following the writer's log.
pub struct Storage {
    inner: Arc<Inner>,
    /// The coordinator's queue; `None` on a reader.
    tx: Option<mpsc::Sender<Command>>,
    /// The coordinator (writer) or log tailer (reader) task.
    task: Mutex<Option<JoinHandle<()>>>,
    stop_tailer: Option<tokio::sync::watch::Sender<bool>>,
}

impl Storage {
    /// Opens (or creates) the database at `path` in `store` and recovers
    /// the head: checkpoint, forward index, then the log after it.
    pub async fn open(
        store: Arc<dyn object_store::ObjectStore>,
        path: &str,
        settings: StorageSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        settings.validate().map_err(StorageError::Invalid)?;
        let counters = Arc::new(ObjectStoreCounters::default());
        let store: Arc<dyn object_store::ObjectStore> =
            Arc::new(InstrumentedStore::new(store, Arc::clone(&counters)));
        let local_folder = is_local_folder(store.as_ref());
        let mut slate = slatedb_settings(&settings, local_folder);
        let collect_on_close = Some(GarbageTarget {
            path: path.to_owned(),
            store: Arc::clone(&store),
            local_folder,
        });
        let metrics = Arc::new(DefaultMetricsRecorder::new());
        let mut builder = Db::builder(path.to_owned(), Arc::clone(&store));
        if let (Some(runtime), Some(options)) =
            (compaction_runtime(), slate.compactor_options.take())
        {
            builder = builder.with_compactor_builder(
                slatedb::CompactorBuilder::new(path.to_owned(), Arc::clone(&store))
                    .with_options(options)
                    .with_runtime(runtime),
            );
        }
        let (db_cache, memory_cache) = cache::MemoryCache::new(settings.memory_cache_bytes);
        let db = builder
            .with_settings(slate)
            .with_db_cache(db_cache, 0)
            .with_metrics_recorder(Arc::clone(&metrics) as Arc<dyn MetricsRecorder>)
            .build()
            .await?;
        let backend =
            backend::Backend::new(backend::Handle::Writer(db.clone()), settings.read_timeout);
        let recovered = recovery::recover(&backend, &settings).await?;
        let now = clock.now_ms();
        let inner = Arc::new(Inner {
            backend,
            slatedb_metrics: metrics,
            memory_cache,
            head: recovered.head,
            settings,
            clock,
            stats: StorageStats::default(),
            fenced: AtomicBool::new(false),
            collect_on_close,
            object_store: counters,
            spill_lock: tokio::sync::Mutex::new(()),
            late: Arc::new(late::LateState::new(now)),
            metadata: metadata::MetadataCache::default(),
        });
        add_replayed(&inner, recovered.samples_replayed);
        start_freezer(&inner, recovered.samples_replayed > 0);
        start_late_pass(&inner);
        let (tx, rx) = mpsc::channel(inner.settings.queue_capacity);
        let coordinator = coordinator::Coordinator::new(
            Arc::clone(&inner),
            db,
            recovered.follower.next_seq,
            recovered.follower.open_buckets,
            recovered.frozen_through,
            recovered.replay_from,
        );
        let handle = tokio::spawn(coordinator.run(rx));
        Ok(Self {
            inner,
            tx: Some(tx),
            task: Mutex::new(Some(handle)),
            stop_tailer: None,
        })
    }

    /// Opens the database at `path` read-only, as a reader node: SlateDB's
    /// `DbReader` (it writes nothing to the store), a head rebuilt from the
    /// log and kept fresh by following it, and a block cache in memory and
    /// on local disk.
    pub async fn open_reader(
        store: Arc<dyn object_store::ObjectStore>,
        path: &str,
        settings: StorageSettings,
        reader: ReaderSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        settings.validate().map_err(StorageError::Invalid)?;
        reader.validate().map_err(StorageError::Invalid)?;
        let counters = Arc::new(ObjectStoreCounters::default());
        let store: Arc<dyn object_store::ObjectStore> =
            Arc::new(InstrumentedStore::new(store, Arc::clone(&counters)));
        let store: Arc<dyn object_store::ObjectStore> = Arc::new(FollowerStore::new(
            store,
            path,
            Quiet::new(reader.poll_interval, reader.idle_poll_interval),
        ));
        let metrics = Arc::new(DefaultMetricsRecorder::new());
        let mut options = slatedb::config::DbReaderOptions {
            manifest_poll_interval: reader.poll_interval,
            // Bounded retries: during an object-store outage a query that
            // needs uncached data answers 503 soon instead of hanging.
            object_store_max_retries: Some(3),
            ..slatedb::config::DbReaderOptions::default()
        };
        if let Some(dir) = &reader.cache_dir {
            std::fs::create_dir_all(dir).map_err(|e| {
                StorageError::Invalid(format!(
                    "reader.cache_dir: cannot create {}: {e}",
                    dir.display()
                ))
            })?;
            options.object_store_cache_options.root_folder = Some(dir.clone());
            options.object_store_cache_options.max_cache_size_bytes = Some(reader.disk_cache_bytes);
        }
        let (db_cache, memory_cache) = cache::MemoryCache::new(reader.memory_cache_bytes);
        let db = slatedb::DbReader::builder(path.to_owned(), store)
            .with_options(options)
            .with_reader_mode(slatedb::DbReaderMode::FollowLatest)
            .with_db_cache(db_cache, 0)
            .with_metrics_recorder(Arc::clone(&metrics) as Arc<dyn MetricsRecorder>)
            .build()
            .await?;
        let backend =
            backend::Backend::new(backend::Handle::Reader(Box::new(db)), settings.read_timeout);
        let recovered = recovery::recover(&backend, &settings).await?;
        let now = clock.now_ms();
        let inner = Arc::new(Inner {
            backend,
            slatedb_metrics: metrics,
            memory_cache,
            head: recovered.head,
            settings,
            clock,
            stats: StorageStats::default(),
            fenced: AtomicBool::new(false),
            collect_on_close: None,
            object_store: counters,
            spill_lock: tokio::sync::Mutex::new(()),
            late: Arc::new(late::LateState::new(now)),
            metadata: metadata::MetadataCache::default(),
        });
        add_replayed(&inner, recovered.samples_replayed);
        start_freezer(&inner, recovered.samples_replayed > 0);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let handle = tokio::spawn(tailer::follow(
            Arc::clone(&inner),
            recovered.follower,
            reader.poll_interval,
            stopped,
        ));
        Ok(Self {
            inner,
            tx: None,
            task: Mutex::new(Some(handle)),
            stop_tailer: Some(stop),
        })
    }

    /// A read-only view of `inner` for the background passes.
    fn view(inner: Arc<Inner>) -> Self {
        Self {
            inner,
            tx: None,
            task: Mutex::new(None),
            stop_tailer: None,
        }
    }

    /// Writes the head's late samples (of sealed buckets) to the store now
    /// as late segments, and frees them.
    pub async fn flush_late_now(&self) -> Result<LatePass, StorageError> {
        let db = self.inner.backend.writer().ok_or(StorageError::ReadOnly)?;
        late::flush(&self.inner, db).await
    }

    /// Folds the late segments of every sealed bucket into its chunks now.
    pub async fn fold_late_now(&self) -> Result<FoldPass, StorageError> {
        if self.inner.backend.writer().is_none() {
            return Err(StorageError::ReadOnly);
        }
        late::fold(self, true).await
    }

    /// Whether this is a read-only reader node.
    pub fn is_reader(&self) -> bool {
        self.tx.is_none()
    }

    fn sender(&self) -> Result<&mpsc::Sender<Command>, StorageError> {
        self.tx.as_ref().ok_or(StorageError::ReadOnly)
    }

    /// Writes series samples and answers at the requested durability. The
    /// outcome counts appended, duplicate and rejected samples; rejected
    /// samples do not fail the call.
    ///
    /// Waits at most `write_timeout`, then fails as unavailable: SlateDB
    /// retries a failing object store without end, so a Durable write (or
    /// any write SlateDB holds back) would otherwise wait for the store to
    /// heal. Samples of a write that timed out may still be logged and
    /// become durable; a retry finds them as duplicates.
    pub async fn write<L: LabelPairs + Send>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
    ) -> Result<WriteOutcome, StorageError> {
        self.write_with(series, durability, WriteLimits::default())
            .await
    }

    /// [`Storage::write`] under `limits`: samples too far in the future and
    /// the samples of series past the tenant's active-series limit are
    /// rejected (counted in the outcome), the rest written. Bounded by
    /// `write_timeout` as [`Storage::write`] is.
    pub async fn write_with<L: LabelPairs + Send>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
        limits: WriteLimits,
    ) -> Result<WriteOutcome, StorageError> {
        let limit = self.inner.settings.write_timeout;
        match tokio::time::timeout(limit, self.write_unbounded(series, durability, limits)).await {
            Ok(r) => r,
            Err(_) => {
                stats::add(&self.inner.stats.write_errors, 1);
                Err(StorageError::Unavailable(format!(
                    "write not {} within {limit:?}: the object store is failing or slow; \
                     its samples may still become durable once it answers",
                    match durability {
                        Durability::Applied => "applied",
                        Durability::Durable => "durable",
                    }
                )))
            }
        }
    }

    async fn write_unbounded<L: LabelPairs + Send>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
        limits: WriteLimits,
    ) -> Result<WriteOutcome, StorageError> {
        if self.inner.fenced.load(Ordering::Acquire) {
            return Err(StorageError::Fenced(
                "a newer writer holds this path".into(),
            ));
        }
        let now = self.inner.clock.now_ms();
        let head = &self.inner.head;
        let mut refused = WriteOutcome::default();
        let mut refuse = |labels: &L, n: usize, why: Rejection| {
            refused.rejected += n;
            if refused.first_rejection.is_none() {
                refused.first_rejection = Some((render_labels(&labels.to_labels()), why));
            }
        };
        let max_t = limits.max_future_ms.map(|f| now.saturating_add(f));
        // Series this request activates, per tenant, on top of the count.
        let mut activated: rustc_hash::FxHashMap<String, usize> = Default::default();
        let mut new_series = 0;
        let mut kept = Vec::with_capacity(series.len());
        for mut s in series {
            if let Some(max_t) = max_t {
                let before = s.samples.len();
                if let Some(&(t, _)) = s.samples.iter().find(|&&(t, _)| t > max_t) {
                    s.samples.retain(|&(t, _)| t <= max_t);
                    refuse(
                        &s.labels,
                        before - s.samples.len(),
                        Rejection::TooFarInFuture { t, max_t },
                    );
                }
            }
            if !s.samples.is_empty() {
                kept.push(s);
            }
        }
        let known = head.get_many(kept.iter().map(|s| &s.labels));
        let mut resolved = Vec::with_capacity(kept.len());
        let mut fresh = Vec::with_capacity(kept.len());
        let mut samples = Vec::with_capacity(kept.iter().map(|s| s.samples.len()).sum());
        for (s, known) in kept.iter().zip(known) {
            let limit = limits.max_active_series;
            if limit > 0 && !known.as_ref().is_some_and(|m| m.is_active()) {
                let tenant = head::tenant_of(&s.labels);
                let extra = activated.entry(tenant.to_owned()).or_default();
                if head.active_series(tenant) + *extra >= limit {
                    let n = s.samples.len();
                    refuse(&s.labels, n, Rejection::ActiveSeriesLimit { limit });
                    continue;
                }
                *extra += 1;
            }
            let (m, created) = match known {
                Some(m) => (m, false),
                None => head.get_or_create(&s.labels, now),
            };
            new_series += usize::from(created);
            fresh.push(created);
            let at = samples.len();
            samples.extend_from_slice(&s.samples);
            resolved.push(ResolvedSeries {
                series: m,
                samples: at..samples.len(),
            });
        }
        drop(kept);
        let bucket_ms = self.inner.settings.bucket_ms();
        if let (Some(sealed), Some(_)) =
            (head.sealed_through(), self.inner.settings.late_window_ms())
        {
            let sealed_end = sealed.saturating_add(1).saturating_mul(bucket_ms);
            if samples.iter().any(|&(t, _)| t < sealed_end) {
                let (series, kept) = self
                    .drop_stored(resolved, &fresh, samples, sealed_end, &mut refused)
                    .await?;
                resolved = series;
                samples = kept;
                // Late samples wait while the head holds many: the late
                // pass writes them out (bounded by write_timeout).
                while head.extra_samples() > late::LATE_MAX_SAMPLES {
                    self.inner.late.note_added(head.extra_samples());
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
        stats::add(&self.inner.stats.series_created, new_series);
        stats::add(&self.inner.stats.samples_rejected, refused.rejected);
        stats::add(&self.inner.stats.samples_duplicate, refused.duplicates);
        let tx = self.sender()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Command::Write {
            series: resolved,
            samples,
            new_series,
            reply,
        })
        .await
        .map_err(|_| StorageError::Closed)?;
        let (mut outcome, handle) = rx
            .await
            .map_err(|_| StorageError::Closed)?
            .map_err(|e| self.inner.note_fenced(e))?;
        outcome.rejected += refused.rejected;
        outcome.duplicates += refused.duplicates;
        if refused.first_rejection.is_some() {
            outcome.first_rejection = refused.first_rejection;
        }
        if durability == Durability::Durable {
            if let Some(h) = handle {
                let started = std::time::Instant::now();
                h.await_durable()
                    .await
                    .map_err(|e| self.inner.note_fenced(StorageError::from(e)))?;
                self.inner.stats.durable_wait.observe(started.elapsed());
            }
        }
        Ok(outcome)
    }

    /// Takes out of a write the samples of sealed buckets (before
    /// `sealed_end`) that the store already holds: the same value is a
    /// duplicate (a sender re-sending its backlog, an import run twice),
    /// another value a conflict. Reads the series' stored samples of each
    /// such bucket, on the request's own task; series new to the head have
    /// none.
    async fn drop_stored(
        &self,
        series: Vec<ResolvedSeries>,
        fresh: &[bool],
        samples: Vec<(i64, f64)>,
        sealed_end: i64,
        refused: &mut WriteOutcome,
    ) -> Result<(Vec<ResolvedSeries>, Vec<(i64, f64)>), StorageError> {
        let bucket_ms = self.inner.settings.bucket_ms();
        // (series index, bucket) of every stored bucket to look at.
        let mut wanted: Vec<(usize, i64)> = Vec::new();
        for (i, rs) in series.iter().enumerate() {
            if fresh.get(i).copied().unwrap_or(true) {
                continue;
            }
            let mut last = None;
            for &(t, _) in samples.get(rs.samples.clone()).unwrap_or_default() {
                let b = t.div_euclid(bucket_ms);
                if t < sealed_end && last != Some(b) {
                    last = Some(b);
                    wanted.push((i, b));
                }
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        // A series holds data in a sealed bucket only if the bucket's
        // postings or late markers list it: one read per bucket instead of
        // one per series finds that history sent for the first time (a
        // backfill, an import) has nothing to compare with.
        let mut buckets: Vec<i64> = wanted.iter().map(|&(_, b)| b).collect();
        buckets.sort_unstable();
        buckets.dedup();
        let listed: Vec<(i64, Vec<u64>)> = futures::stream::iter(buckets)
            .map(|b| async move {
                let mut ids = self.late_ids(b).await?;
                if let Some(v) = self.inner.backend.get(&keys::all_postings_key(b)).await? {
                    values::decode_postings(&v, &mut ids)?;
                }
                ids.sort_unstable();
                Ok::<_, StorageError>((b, ids))
            })
            .buffered(8)
            .try_collect()
            .await?;
        let listed: rustc_hash::FxHashMap<i64, Vec<u64>> = listed.into_iter().collect();
        wanted.retain(|&(i, b)| {
            let id = series.get(i).map_or(0, |rs| rs.series.id);
            listed
                .get(&b)
                .is_some_and(|ids| ids.binary_search(&id).is_ok())
        });
        let stored: Vec<((usize, i64), Option<Samples>)> = futures::stream::iter(wanted)
            .map(|(i, b)| {
                let id = series.get(i).map_or(0, |rs| rs.series.id);
                async move {
                    let got = match self.series_bucket(b, id).await? {
                        Some(sb) => Some(sb.samples(i64::MIN, i64::MAX)?),
                        None => None,
                    };
                    Ok::<_, StorageError>(((i, b), got))
                }
            })
            .buffered(16)
            .try_collect()
            .await?;
        if stored.iter().all(|(_, got)| got.is_none()) {
            return Ok((series, samples));
        }
        let stored: rustc_hash::FxHashMap<(usize, i64), Samples> = stored
            .into_iter()
            .filter_map(|(k, got)| Some((k, got?)))
            .collect();
        let mut kept = Vec::with_capacity(samples.len());
        let mut out = Vec::with_capacity(series.len());
        for (i, rs) in series.into_iter().enumerate() {
            let at = kept.len();
            for &(t, v) in samples.get(rs.samples.clone()).unwrap_or_default() {
                let held = stored
                    .get(&(i, t.div_euclid(bucket_ms)))
                    .and_then(|(ts, vs)| vs.get(ts.binary_search(&t).ok()?).copied());
                match held {
                    None => kept.push((t, v)),
                    Some(h) if h.to_bits() == v.to_bits() => refused.duplicates += 1,
                    Some(h) => {
                        refused.rejected += 1;
                        if refused.first_rejection.is_none() {
                            refused.first_rejection = Some((
                                render_labels(&rs.series.labels),
                                Rejection::Conflicting {
                                    t,
                                    value: v,
                                    existing: h,
                                },
                            ));
                        }
                    }
                }
            }
            if kept.len() > at {
                out.push(ResolvedSeries {
                    series: rs.series,
                    samples: at..kept.len(),
                });
            }
        }
        Ok((out, kept))
    }

    /// Seals every bucket that is due now, and waits for it.
    pub async fn seal_due_now(&self) -> Result<(), StorageError> {
        let (done, rx) = oneshot::channel();
        self.sender()?
            .send(Command::SealNow(done))
            .await
            .map_err(|_| StorageError::Closed)?;
        rx.await.map_err(|_| StorageError::Closed)?
    }

    /// Runs the head's background pass now: freezes chunk tails, then (on
    /// a writer) spills long frozen runs to the store and frees them.
    pub async fn freeze_and_spill_now(&self) -> Result<SpillPass, StorageError> {
        let inner = Arc::clone(&self.inner);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            inner.head.freeze_tails(head::FREEZE_MIN_SAMPLES);
            spill::spill_pass(&inner, &runtime)
        })
        .await
        .map_err(|e| StorageError::Unavailable(format!("spill pass: {e}")))?
    }

    /// Flushes SlateDB's WAL to the object store now.
    pub async fn flush(&self) -> Result<(), StorageError> {
        match self.inner.backend.writer() {
            Some(db) => Ok(db.flush().await?),
            None => Err(StorageError::ReadOnly),
        }
    }

    /// Stops taking writes, finishes queued ones and any seal under way,
    /// then flushes and closes SlateDB.
    pub async fn close(&self) -> Result<(), StorageError> {
        let handle = self.task.lock().take();
        if let Some(handle) = handle {
            if let Some(tx) = &self.tx {
                let (done, rx) = oneshot::channel();
                if tx.send(Command::Shutdown(done)).await.is_ok() {
                    let _ = rx.await;
                }
            }
            if let Some(stop) = &self.stop_tailer {
                let _ = stop.send(true);
            }
            let _ = handle.await;
        }
        if self.inner.fenced.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(db) = self.inner.backend.writer() {
            // The log would replay them too; written now, the next start
            // has less to replay.
            if let Err(e) = late::flush(&self.inner, db).await {
                tracing::warn!(error = %e, "cannot write late samples at close; the log keeps them");
            }
        }
        self.inner.backend.close().await?;
        if let Some(target) = &self.inner.collect_on_close {
            target.collect_now().await;
        }
        Ok(())
    }

    pub fn stats(&self) -> &StorageStats {
        &self.inner.stats
    }

    pub fn head(&self) -> &head::Head {
        &self.inner.head
    }

    pub fn settings(&self) -> &StorageSettings {
        &self.inner.settings
    }

    /// Whether a newer writer fenced this one.
    pub fn is_fenced(&self) -> bool {
        self.inner.fenced.load(Ordering::Acquire)
    }

    /// Requests and errors against the object store so far.
    pub fn object_store_stats(&self) -> ObjectStoreStats {
        self.inner.object_store.snapshot()
    }

    /// Stores metric metadata for `tenant` (`""` without tenants); only
    /// metrics whose entries changed are written. Returns how many were.
    pub async fn record_metadata(
        &self,
        tenant: &str,
        entries: &[(String, metadata::MetadataEntry)],
    ) -> Result<usize, StorageError> {
        metadata::record(&self.inner, tenant, entries).await
    }

    /// The metric metadata stored for `tenant`: one metric, or all, in
    /// name order.
    pub async fn metadata(
        &self,
        tenant: &str,
        metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<metadata::MetadataEntry>)>, StorageError> {
        metadata::read(&self.inner, tenant, metric).await
    }

    /// How long every object-store request has failed, and the last
    /// failure; `None` while the store answers.
    pub fn object_store_failing_for(&self) -> Option<(std::time::Duration, String)> {
        self.inner.object_store.health.failing_for()
    }

    /// How full SlateDB's in-memory block cache is.
    pub fn cache_usage(&self) -> CacheUsage {
        self.inner.memory_cache.usage()
    }

    /// Requests waiting in the coordinator's queue.
    pub fn queue_depth(&self) -> usize {
        self.tx
            .as_ref()
            .map_or(0, |tx| self.inner.settings.queue_capacity - tx.capacity())
    }

    /// SlateDB's own metrics (WAL flushes, caches, object-store cache hits,
    /// compaction) in the Prometheus text format, named `slatedb_*`.
    pub fn slatedb_metrics_text(&self) -> String {
        slatedb_metrics::render(&self.inner.slatedb_metrics.snapshot())
    }
}

fn add_replayed(inner: &Inner, n: usize) {
    stats::add(&inner.stats.samples_replayed, n);
}
