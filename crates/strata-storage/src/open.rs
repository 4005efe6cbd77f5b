//! Opening a database, as the writer or as a reader node: the steps both
//! share (settings checked, object store instrumented, head recovered,
//! freezer started) in one place, the SlateDB handle and the task that
//! keeps the head current (coordinator or log follower) per role.

use std::sync::Arc;

use slatedb_common::metrics::{DefaultMetricsRecorder, MetricsRecorder};
use tokio::sync::mpsc;

use crate::backend::{Backend, Handle};
use crate::background::{start_freezer, start_late_pass};
use crate::cache::MemoryCache;
use crate::error::StorageError;
use crate::follower_store::{FollowerStore, Quiet};
use crate::instrumented::{InstrumentedStore, ObjectStoreCounters};
use crate::recovery::{self, Recovered};
use crate::resend::ResendingStore;
use crate::settings::{ReaderSettings, StorageSettings};
use crate::shared::Shared;
use crate::slatedb_options::{is_local_folder, slatedb_settings, GarbageTarget, TABLE_BLOCK_SIZE};
use crate::state::reclaim::Reclaim;
use crate::state::role::{ReaderState, Role, WriterState};
use crate::stats::{self, StorageStats};
use crate::storage::Follower;
use crate::storage::Storage;
use crate::worker::compaction_runtime;
use crate::writer::Writer;
use crate::{coordinator, keys, tailer};
use strata_codec::clock::Clock;

type Store = Arc<dyn object_store::ObjectStore>;

/// Where the task that keeps a recovered head current takes over.
struct Resume {
    follower: recovery::LogFollower,
    frozen_through: i64,
    replay_from: u64,
}

/// What opening a database takes in either role.
struct Opening {
    path: String,
    /// The caller's store under the request counters, its requests sent
    /// again when unanswered (`resend`).
    store: Store,
    settings: StorageSettings,
    clock: Arc<dyn Clock>,
    counters: Arc<ObjectStoreCounters>,
    metrics: Arc<DefaultMetricsRecorder>,
}

impl Opening {
    fn new(
        store: Store,
        path: &str,
        settings: StorageSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        settings.validate().map_err(StorageError::Invalid)?;
        let counters = Arc::new(ObjectStoreCounters::default());
        Ok(Self {
            path: path.to_owned(),
            // Above the counters, so each try sent is counted.
            store: Arc::new(ResendingStore::new(Arc::new(InstrumentedStore::new(
                store,
                Arc::clone(&counters),
            )))),
            settings,
            clock,
            counters,
            metrics: Arc::new(DefaultMetricsRecorder::new()),
        })
    }

    fn recorder(&self) -> Arc<dyn MetricsRecorder> {
        Arc::clone(&self.metrics) as Arc<dyn MetricsRecorder>
    }

    /// Recovers the head through `handle` and starts the freezer: the
    /// state both roles then share.
    async fn recover(
        self,
        handle: Handle,
        memory_cache: MemoryCache,
    ) -> Result<(Arc<Shared>, Resume), StorageError> {
        let role = match handle {
            Handle::Writer(_) => Role::Writer(Box::new(WriterState::new(
                self.clock.now_ms(),
                Reclaim::new(&self.path, Arc::clone(&self.store)),
            ))),
            Handle::Reader(_) => Role::Reader(ReaderState::default()),
        };
        let backend = Backend::new(handle, self.settings.read_timeout);
        let Recovered {
            head,
            follower,
            frozen_through,
            samples_replayed,
            replay_from,
        } = recovery::recover(&backend, &self.settings).await?;
        let compacted = crate::compact::read_compacted(&backend).await?;
        let (freezer_stop, freezer_stopped) = std::sync::mpsc::channel();
        let shared = Arc::new(Shared {
            backend,
            slatedb_metrics: self.metrics,
            memory_cache,
            head,
            settings: self.settings,
            clock: self.clock,
            stats: StorageStats::default(),
            object_store: self.counters,
            compacted: parking_lot::RwLock::new(compacted),
            role,
            tombstones: Default::default(),
            _freezer_stop: freezer_stop,
        });
        crate::tombstones::load(&shared).await?;
        stats::add(&shared.stats.samples_replayed, samples_replayed);
        start_freezer(&shared, samples_replayed > 0, freezer_stopped);
        Ok((
            shared,
            Resume {
                follower,
                frozen_through,
                replay_from,
            },
        ))
    }
}

impl Writer {
    /// Opens (or creates) the database at `path` in `store` as its writer
    /// and recovers the head: checkpoint, forward index, then the log
    /// after it. A writer already on the path is fenced.
    pub async fn open(
        store: Store,
        path: &str,
        settings: StorageSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        let opening = Opening::new(store, path, settings, clock)?;
        let local_folder = is_local_folder(opening.store.as_ref());
        let mut slate = slatedb_settings(&opening.settings, local_folder);
        let mut builder = slatedb::Db::builder(opening.path.clone(), Arc::clone(&opening.store));
        if let (Some(runtime), Some(options)) =
            (compaction_runtime(), slate.compactor_options.take())
        {
            builder = builder.with_compactor_builder(
                slatedb::CompactorBuilder::new(opening.path.clone(), Arc::clone(&opening.store))
                    .with_options(options)
                    .with_sst_block_size(TABLE_BLOCK_SIZE)
                    .with_block_transformer(table_blocks(&opening.settings))
                    .with_runtime(runtime),
            );
        }
        builder = builder
            .with_sst_block_size(TABLE_BLOCK_SIZE)
            .with_block_transformer(table_blocks(&opening.settings));
        let (db_cache, memory_cache) = MemoryCache::new(opening.settings.memory_cache_bytes);
        let db = builder
            .with_settings(slate)
            .with_db_cache(db_cache, 0)
            .with_block_cache_policy(flush_cache_policy())
            .with_metrics_recorder(opening.recorder())
            .build()
            .await?;
        let collect_on_close = GarbageTarget {
            path: opening.path.clone(),
            store: Arc::clone(&opening.store),
            local_folder,
        };
        let (shared, recovered) = opening
            .recover(Handle::Writer(db.clone()), memory_cache)
            .await?;
        let (hashes, built) =
            recovery::load_series_hashes(&db, &shared.backend, &shared.head, &shared.series_ttl())
                .await?;
        if built && hashes > 0 {
            tracing::info!(
                label_sets = hashes,
                "indexed the series of a store written before the labels index"
            );
        }
        start_late_pass(&shared);
        let (tx, rx) = mpsc::channel(shared.settings.queue_capacity);
        let coordinator = coordinator::Coordinator::new(
            Arc::clone(&shared),
            db,
            recovered.follower.next_seq,
            recovered.follower.open_buckets,
            recovered.frozen_through,
            recovered.replay_from,
        );
        let task = tokio::spawn(coordinator.run(rx));
        let storage = Arc::new(Storage::new(shared, None));
        Ok(Writer::new(storage, tx, task, collect_on_close))
    }
}

/// How every database of the store encodes and decodes table blocks.
fn table_blocks(settings: &StorageSettings) -> Arc<dyn slatedb::BlockTransformer> {
    Arc::new(crate::table_compression::TableBlocks::new(
        settings.compression,
    ))
}

/// What a writer's memtable flush puts in the block cache: the data blocks
/// of postings, late segments and metadata, and every index and filter.
/// SlateDB's default puts every data block there. Under ingest the flushed
/// blocks are log records, which only a recovery reads; series keys (`S`,
/// `H`), which only a series dropped from the head or coming back needs
/// (at 1 M new series these two filled 201 MB of the default 256 MiB with
/// blocks nothing read); and samples (`C`, `B`, `N`: the spills' segments,
/// the seal's chunks, day blocks, histograms), which a query reads only
/// for its series and time. Cached on flush, the spills and the seal of
/// 1 M series filled the cache to about 210 MB from the last third of
/// each bucket on, for queries that may never come. A query fills the
/// cache with what it reads, up to its size, as on a reader.
fn flush_cache_policy() -> slatedb::BlockCachePolicy {
    use slatedb::CacheTarget;
    const I: &[u8] = &[keys::POSTINGS];
    const L: &[u8] = &[keys::LOG];
    const M: &[u8] = &[keys::META];
    const N: &[u8] = &[keys::HISTOGRAMS];
    const P: &[u8] = &[keys::BLOCK_POSTINGS];
    const S: &[u8] = &[keys::SERIES];
    slatedb::BlockCachePolicy::default().with_flush_targets(&[
        CacheTarget::data(I..L), // I, J, K: postings and late segments
        CacheTarget::data(M..N), // M: metadata
        CacheTarget::data(P..S), // P: block postings
        CacheTarget::Index,
        CacheTarget::Filters,
    ])
}

/// The key tags [`flush_cache_policy`]'s ranges take for granted, in the
/// order they sort.
#[cfg(test)]
#[test]
fn flush_cache_ranges_hold_the_tags_they_name() {
    let cached = [
        keys::POSTINGS,
        keys::LATE,
        keys::BLOCK_LATE,
        keys::META,
        keys::BLOCK_POSTINGS,
    ];
    let not_cached = [
        keys::BLOCK_CHUNK,
        keys::CHUNK,
        keys::SERIES_HASH,
        keys::LOG,
        keys::SERIES,
        keys::EXEMPLARS,
        keys::HISTOGRAMS,
    ];
    let in_ranges = |t: u8| {
        (keys::POSTINGS..keys::LOG).contains(&t)
            || (keys::META..keys::HISTOGRAMS).contains(&t)
            || (keys::BLOCK_POSTINGS..keys::SERIES).contains(&t)
    };
    assert!(cached.iter().all(|&t| in_ranges(t)));
    assert!(not_cached.iter().all(|&t| !in_ranges(t)));
}

impl Storage {
    /// Opens the database at `path` read-only, as a reader node: SlateDB's
    /// `DbReader` (it writes nothing to the store), a head rebuilt from the
    /// log and kept fresh by following it, and a block cache in memory and
    /// on local disk.
    pub async fn open_reader(
        store: Store,
        path: &str,
        settings: StorageSettings,
        reader: ReaderSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        reader.validate().map_err(StorageError::Invalid)?;
        let opening = Opening::new(store, path, settings, clock)?;
        let store: Store = Arc::new(FollowerStore::new(
            Arc::clone(&opening.store),
            path,
            Quiet::new(reader.poll_interval, reader.idle_poll_interval),
        ));
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
            options.object_store_cache_options.part_size_bytes = reader.disk_cache_part_bytes;
        }
        let (db_cache, memory_cache) = MemoryCache::new(reader.memory_cache_bytes);
        let db = slatedb::DbReader::builder(opening.path.clone(), store)
            .with_options(options)
            .with_reader_mode(slatedb::DbReaderMode::FollowLatest)
            .with_block_transformer(table_blocks(&opening.settings))
            .with_db_cache(db_cache, 0)
            .with_metrics_recorder(opening.recorder())
            .build()
            .await?;
        let (shared, recovered) = opening
            .recover(Handle::Reader(Box::new(db)), memory_cache)
            .await?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(tailer::follow(
            Arc::clone(&shared),
            recovered.follower,
            reader.poll_interval,
            stopped,
        ));
        Ok(Storage::new(shared, Some(Follower { task, stop })))
    }
}
