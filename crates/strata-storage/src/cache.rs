//! The in-memory cache of SlateDB's blocks, indexes and filters, sized by
//! us rather than by SlateDB's defaults, and measured.
//!
//! As SlateDB does by default, data blocks and the metadata (indexes,
//! filters, table statistics) go to two caches, so a scan of many blocks
//! cannot evict the filters every point read needs. We keep a handle on
//! each to report how full it is: the cache fills as the store is read and
//! stays at its capacity, a part of the process' memory that is not the
//! head's.

use std::sync::Arc;

use slatedb::db_cache::foyer::FoyerCache;
use slatedb::db_cache::{CachedEntry, CachedKey, DbCache, SplitCache};

/// Share of the cache given to indexes, filters and statistics.
const META_SHARE: u64 = 4;

type Part = foyer::Cache<CachedKey, CachedEntry>;

/// Bytes held in the cache, by part, and its capacity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    pub blocks_bytes: u64,
    pub meta_bytes: u64,
    pub capacity_bytes: u64,
}

/// Handles on the cache's parts, to read their usage.
pub(crate) struct MemoryCache {
    blocks: Part,
    meta: Part,
    capacity: u64,
}

impl MemoryCache {
    /// A cache of `capacity` bytes in all: a quarter for metadata, the rest
    /// for data blocks. Returns it as SlateDB takes it, and the handles.
    pub(crate) fn new(capacity: u64) -> (Arc<dyn DbCache>, Self) {
        let meta_capacity = (capacity / META_SHARE).max(1);
        let blocks_capacity = capacity.saturating_sub(meta_capacity).max(1);
        let (blocks, meta) = (part(blocks_capacity), part(meta_capacity));
        let split = SplitCache::new()
            .with_block_cache(Some(Arc::new(FoyerCache::new_with_cache(blocks.clone()))))
            .with_meta_cache(Some(Arc::new(FoyerCache::new_with_cache(meta.clone()))))
            .build();
        (
            Arc::new(split),
            Self {
                blocks,
                meta,
                capacity,
            },
        )
    }

    pub(crate) fn usage(&self) -> CacheUsage {
        CacheUsage {
            blocks_bytes: self.blocks.usage() as u64,
            meta_bytes: self.meta.usage() as u64,
            capacity_bytes: self.capacity,
        }
    }
}

/// One part, weighed in bytes, sharded by the machine's threads as
/// SlateDB's own foyer cache is, but with shards of at least 16 MiB: each
/// shard evicts on its own, and one smaller than a block would hold it
/// over its share. Evicted by S3-FIFO rather than foyer's default LRU: a
/// long-range query reads more blocks than the cache holds, in the same
/// order each time, and under LRU each block is evicted just before it is
/// read again; S3-FIFO keeps the blocks read twice and lets one-off reads
/// pass through a small queue.
fn part(capacity: u64) -> Part {
    let threads = strata_codec::threads::available();
    let shards = usize::try_from(capacity >> 24)
        .unwrap_or(usize::MAX)
        .clamp(1, threads);
    foyer::CacheBuilder::new(usize::try_from(capacity).unwrap_or(usize::MAX))
        .with_weighter(|_, v: &CachedEntry| v.size())
        .with_shards(shards)
        .with_eviction_config(foyer::S3FifoConfig::default())
        .build()
}
