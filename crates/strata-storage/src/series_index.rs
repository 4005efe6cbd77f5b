//! The store's series indexes, as the head uses them: `S` (id → labels)
//! and `H` (label hash → ids), written together when a series is first
//! logged and refreshed together by the sealer before they expire.
//!
//! The head drops a series once its buckets are all sealed. When its
//! labels come back in a write, the head does not know them; before a new
//! id is handed out, the store is asked whether it knows them (`H`, then
//! the `S` keys it lists, since hashes collide), with the head's cache of
//! dropped series in front. A series that comes back keeps its id, so its
//! sealed data and its new samples stay one series.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use slatedb::WriteBatch;
use strata_codec::LabelPairs;

use crate::error::StorageError;
use crate::head::{labels_hash, MemSeries, SeriesLabels};
use crate::shared::Shared;
use crate::{keys, values};

/// Store lookups one write request runs at a time: the first scrape of a
/// large target brings thousands of series the head does not know.
const LOOKUP_CONCURRENCY: usize = 64;

/// Puts series `s`'s `S` and `H` keys into `batch`, written at `now`;
/// returns their bytes.
pub(crate) fn put(inner: &Shared, batch: &mut WriteBatch, s: &MemSeries, now: i64) -> usize {
    let ttl = inner.series_ttl();
    let hash = labels_hash(&s.labels);
    let labels = values::encode_series(now, &s.labels);
    let ids = values::encode_postings(&inner.head.hash_ids(hash, s.id));
    let bytes = labels.len() + ids.len() + 2 * keys::series_key(0).len();
    batch.put_with_options(keys::series_key(s.id), labels, &ttl);
    batch.put_with_options(keys::series_hash_key(hash), ids, &ttl);
    s.series_key_written_ms.store(now, Ordering::Relaxed);
    bytes
}

/// For each label set the head does not hold, the id the store knows it
/// by, if any.
pub(crate) async fn stored_ids<L: LabelPairs + Sync + ?Sized>(
    inner: &Shared,
    sets: &[&L],
) -> Result<Vec<Option<u64>>, StorageError> {
    if inner.head.knows_all() {
        return Ok(vec![None; sets.len()]);
    }
    // By index: a closure over `&&L` would make the future's `Send`
    // depend on a lifetime the compiler cannot name.
    futures::stream::iter(0..sets.len())
        .map(move |i| stored_id(inner, sets.get(i).copied()))
        .buffered(LOOKUP_CONCURRENCY)
        .try_collect()
        .await
}

async fn stored_id<L: LabelPairs + Sync + ?Sized>(
    inner: &Shared,
    labels: Option<&L>,
) -> Result<Option<u64>, StorageError> {
    let Some(labels) = labels else {
        return Ok(None);
    };
    let recent = inner.head.recent();
    let hash = labels_hash(labels);
    if let Some(id) = recent.id(hash) {
        if recent.labels(id).is_some_and(|l| l.eq_pairs(labels)) {
            return Ok(Some(id));
        }
    }
    let Some(listed) = inner.backend.get(&keys::series_hash_key(hash)).await? else {
        return Ok(None);
    };
    let mut ids = Vec::new();
    values::decode_postings(&listed, &mut ids)?;
    for &id in &ids {
        if stored_labels(inner, id)
            .await?
            .is_some_and(|l| l.eq_pairs(labels))
        {
            return Ok(Some(id));
        }
    }
    if !ids.is_empty() {
        inner.head.note_shared_hash(hash, &ids);
    }
    Ok(None)
}

/// Labels of series `id`, which the head does not hold: from its cache of
/// dropped series, else from the `S` key (and then cached).
pub(crate) async fn stored_labels(
    inner: &Shared,
    id: u64,
) -> Result<Option<Arc<SeriesLabels>>, StorageError> {
    let recent = inner.head.recent();
    if let Some(l) = recent.labels(id) {
        return Ok(Some(l));
    }
    let Some(v) = inner.backend.get(&keys::series_key(id)).await? else {
        return Ok(None);
    };
    let (_, labels) = values::decode_series(&v)?;
    let l = Arc::new(SeriesLabels::new(&labels[..]));
    recent.insert_labels(id, Arc::clone(&l));
    Ok(Some(l))
}
