//! The keys of buckets blocks replaced, deleted once nothing reads them.

use super::write::Batches;
use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys;
use crate::shared::Shared;

/// Deletes every chunk, segment, postings and late-marker key of buckets
/// `[from, through)`; the number of keys.
pub(super) async fn delete_buckets(
    inner: &Shared,
    db: &slatedb::Db,
    from: i64,
    through: i64,
) -> Result<usize, StorageError> {
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
    let mut deleted = 0;
    let ranges = [
        (keys::chunk_prefix(from), keys::chunk_prefix(through)),
        (
            keys::postings_bucket_prefix(from),
            keys::postings_bucket_prefix(through),
        ),
        (keys::late_prefix(from), keys::late_prefix(through)),
    ];
    for (lo, hi) in ranges {
        let mut it = inner.backend.scan_as(lo..hi, ScanKind::Bulk).await?;
        let mut batches = Batches::new(db);
        while let Some(kv) = it.next().await? {
            writer.reclaim.note(kv.key.len() + kv.value.len());
            batches.batch.delete(kv.key);
            batches.added().await?;
        }
        deleted += batches.finish().await?;
    }
    Ok(deleted)
}
