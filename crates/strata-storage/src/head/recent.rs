//! Series dropped from the head, for a while: their labels by id, for
//! reads of sealed data that name them, and their id by label hash, for a
//! series that comes back. Bounded in bytes and evicted by S3-FIFO, so a
//! churning cluster's dropped series cost a fixed amount of memory; what
//! it no longer holds is read from the store (`S` and `H` keys).

use std::sync::Arc;

use super::labels::SeriesLabels;

/// Bytes of labels the cache holds by default: about 200,000 series of a
/// node exporter's.
pub(crate) const DEFAULT_BYTES: usize = 32 << 20;

/// What an entry of either map costs besides its labels: foyer's record,
/// the key, the `Arc`.
const ENTRY_BYTES: usize = 96;

pub(crate) struct RecentSeries {
    labels: foyer::Cache<u64, Arc<SeriesLabels>>,
    ids: foyer::Cache<u64, u64>,
}

impl RecentSeries {
    /// A cache of about `bytes`: most for labels, an eighth for ids.
    pub(crate) fn new(bytes: usize) -> Self {
        let ids_bytes = (bytes / 8).max(ENTRY_BYTES);
        let labels_bytes = bytes.saturating_sub(ids_bytes).max(ENTRY_BYTES);
        Self {
            labels: foyer::CacheBuilder::new(labels_bytes)
                .with_weighter(|_, v: &Arc<SeriesLabels>| v.heap_bytes() + ENTRY_BYTES)
                .with_shards(strata_codec::threads::available())
                .with_eviction_config(foyer::S3FifoConfig::default())
                .build(),
            ids: foyer::CacheBuilder::new(ids_bytes)
                .with_weighter(|_, _: &u64| ENTRY_BYTES)
                .with_shards(strata_codec::threads::available())
                .with_eviction_config(foyer::S3FifoConfig::default())
                .build(),
        }
    }

    /// Keeps a dropped series' labels and id.
    pub(crate) fn insert(&self, id: u64, hash: u64, labels: SeriesLabels) {
        self.labels.insert(id, Arc::new(labels));
        self.ids.insert(hash, id);
    }

    /// Keeps labels read from the store.
    pub(crate) fn insert_labels(&self, id: u64, labels: Arc<SeriesLabels>) {
        self.labels.insert(id, labels);
    }

    pub(crate) fn labels(&self, id: u64) -> Option<Arc<SeriesLabels>> {
        self.labels.get(&id).map(|e| Arc::clone(e.value()))
    }

    /// The id of the dropped series whose labels hashed to `hash`, if the
    /// cache still has it (compare the labels: hashes collide).
    pub(crate) fn id(&self, hash: u64) -> Option<u64> {
        self.ids.get(&hash).map(|e| *e.value())
    }

    /// Bytes held, as the cache weighs them.
    pub(crate) fn usage(&self) -> usize {
        self.labels.usage() + self.ids.usage()
    }
}
