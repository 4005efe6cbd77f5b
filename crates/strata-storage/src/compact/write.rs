//! What a compaction pass counts, and the write batches it writes its
//! keys in.

use slatedb::WriteBatch;

use crate::error::StorageError;

/// Series per write batch of a block's chunks.
pub(super) const SERIES_PER_BATCH: usize = 512;

/// Keys per write batch of postings and deletions.
const KEYS_PER_BATCH: usize = 1024;

/// What one compaction pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactPass {
    pub blocks: usize,
    /// Series chunks written to blocks.
    pub series: usize,
    /// Samples in them.
    pub samples: usize,
    /// Bytes of those chunks.
    pub bytes: usize,
    /// Keys of compacted buckets deleted.
    pub keys_deleted: usize,
    /// Whether a merge of SlateDB's tables was asked for to give their
    /// space back.
    pub reclaim: crate::reclaim::ReclaimStep,
}

impl CompactPass {
    pub(super) fn add(&mut self, other: &CompactPass) {
        self.blocks += other.blocks;
        self.series += other.series;
        self.samples += other.samples;
        self.bytes += other.bytes;
        self.keys_deleted += other.keys_deleted;
    }
}

/// Write batches of at most [`KEYS_PER_BATCH`] keys, each durable before
/// the next is written.
pub(super) struct Batches<'a> {
    db: &'a slatedb::Db,
    pub(super) batch: WriteBatch,
    keys: usize,
}

impl<'a> Batches<'a> {
    pub(super) fn new(db: &'a slatedb::Db) -> Self {
        Self {
            db,
            batch: WriteBatch::new(),
            keys: 0,
        }
    }

    /// Counts a key just added to `batch`; writes the batch once full.
    pub(super) async fn added(&mut self) -> Result<(), StorageError> {
        self.keys += 1;
        if self.keys % KEYS_PER_BATCH == 0 {
            let batch = std::mem::take(&mut self.batch);
            self.db.write(batch).await?.await_durable().await?;
        }
        Ok(())
    }

    /// Writes what is left; the number of keys written in all.
    pub(super) async fn finish(self) -> Result<usize, StorageError> {
        if self.keys % KEYS_PER_BATCH != 0 {
            self.db.write(self.batch).await?.await_durable().await?;
        }
        Ok(self.keys)
    }
}
