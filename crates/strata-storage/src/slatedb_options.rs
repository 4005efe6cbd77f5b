//! How Strata configures SlateDB: a writer's settings (flush interval,
//! compression, compaction, garbage collection) and the last collection a
//! cleanly closed writer runs.

use std::sync::Arc;

use crate::settings::StorageSettings;

/// The size of the blocks SlateDB writes its tables in (the unit it
/// compresses, caches and reads). Its default of 4 KiB is smaller than one
/// series' day in a block (about 8 KiB a minute apart), so a long-range
/// scan read, decompressed and cached a block per value: with 64 KiB, 30
/// days of 2,000 series read 1.2 to 1.6 times faster with zstd
/// (`docs/benchmarks.md`, "Long ranges"). The writer's compactor writes
/// the same; tables written before keep their blocks.
pub(crate) const TABLE_BLOCK_SIZE: slatedb::SstBlockSize = slatedb::SstBlockSize::Block64Kib;

/// A writer's database, for one last garbage collection after it closes.
pub(crate) struct GarbageTarget {
    pub(crate) path: String,
    pub(crate) store: Arc<dyn object_store::ObjectStore>,
    pub(crate) local_folder: bool,
}

impl GarbageTarget {
    /// Deletes what a cleanly closed writer leaves for SlateDB's collector:
    /// WAL files its final flush put into tables, and tables compactions
    /// replaced. The background collector keeps them at least five minutes
    /// (a reader node may still be reading one; such a read fails and is
    /// retried at its next poll), so without this a stopped writer leaves
    /// its last minutes of WAL beside the tables holding the same data.
    /// Files the manifest still refers to are never deleted.
    pub(crate) async fn collect_now(&self) {
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
pub(crate) fn is_local_folder(store: &dyn object_store::ObjectStore) -> bool {
    store.to_string().contains("LocalFileSystem(")
}

/// SlateDB's settings for a writer with these storage settings, on a local
/// folder or not.
pub(crate) fn slatedb_settings(
    settings: &StorageSettings,
    local_folder: bool,
) -> slatedb::Settings {
    use slatedb::config::{
        CompactionWorkerOptions, CompactorOptions, GarbageCollectorDirectoryOptions,
        GarbageCollectorOptions,
    };
    let codec = settings.compression.codec();
    // The embedded compaction worker must write tables as the writer does.
    // The tables a compaction replaced are kept (by a checkpoint of the
    // manifest before it) as long as the buckets a block replaced: for
    // reads that began before, on the writer or a reader node. At least a
    // minute, for SlateDB's own reads.
    //
    // One compaction at a time, in one piece, reading 1 MiB ahead per
    // input table. SlateDB's defaults (four compactions, each split in up
    // to four, each input table read four 2 MiB requests ahead) suit a
    // machine with many cores. In a same-run A/B at 333 k series (2
    // cores), the writer with the defaults peaked 107 MiB higher (one
    // step, its cause not traced), with the same CPU and write latency
    // (`docs/benchmarks.md`, "This round: compaction's read-ahead").
    let compactor = CompactorOptions {
        worker: Some(CompactionWorkerOptions {
            compression_codec: codec,
            max_concurrent_compactions: 1,
            max_subcompactions: 1,
            max_fetch_tasks: 1,
            bytes_to_fetch: 1 << 20,
            ..CompactionWorkerOptions::default()
        }),
        checkpoint_lifetime: settings
            .compaction_delete_delay
            .max(std::time::Duration::from_secs(60)),
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
        l0_sst_size_bytes: usize::try_from(settings.memtable_bytes).unwrap_or(usize::MAX),
        max_unflushed_bytes: usize::try_from(settings.max_unflushed_bytes).unwrap_or(usize::MAX),
        compression_codec: codec,
        compactor_options: Some(compactor),
        garbage_collector_options: Some(gc),
        ..slatedb::Settings::default()
    }
}
