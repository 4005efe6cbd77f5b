//! The store's series indexes, as the head uses them: `S` (id → labels)
//! and `H` (label hash → ids).
//!
//! A series' `S` key is written with the first of its data that reaches
//! the store (its bucket's seal, a spill, or the late pass for samples of
//! a sealed bucket), and refreshed by the sealer before it expires. Until
//! then the log records carry the labels (recovery and readers learn them
//! there).
//!
//! Its `H` key is written when the series may leave the head: with the
//! data after which it holds nothing more (its last bucket's seal, or a
//! late pass). While the head holds a series, the head finds it by its
//! labels; the store's index is only asked for label sets the head does
//! not hold. A series that stays from one bucket to the next therefore
//! writes no `H` key at those seals: the first seal of a million new
//! series writes two million keys, not three (each an entry in SlateDB's
//! memtable, about 180 bytes of skip-list node however small the key).
//! `S` is written again beside it, so that the labels outlive the
//! series' last data (both expire a retention after they are written;
//! `S` refreshed half a retention ago would go first).
//!
//! The head drops a series once its buckets are all sealed. When its
//! labels come back in a write, the head does not know them; before a new
//! id is handed out, the store is asked whether it knows them (`H`, then
//! the `S` keys it lists, since hashes collide), with the head's cache of
//! dropped series in front. A series that comes back keeps its id, so its
//! sealed data and its new samples stay one series.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use strata_codec::LabelPairs;

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::head::{labels_hash, MemSeries, SeriesLabels};
use crate::packed_batch::Batch;
use crate::shared::Shared;
use crate::{keys, values};

/// Store reads one write request runs at a time, when it reads few.
const LOOKUP_CONCURRENCY: usize = 64;

/// What a write of a series' data means for its index keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// The head holds samples of the series beyond this write's: `S` if
    /// due (never written, or over half a retention ago), no `H`.
    Stays,
    /// The head holds nothing of the series beyond this write's, and may
    /// drop it once it is written: `S` and `H`.
    MayLeave,
}

impl Held {
    /// What writing series `s`'s data up to `bucket` means for it.
    pub(crate) fn after(s: &MemSeries, bucket: i64) -> Self {
        if s.holds_none_after(bucket) {
            Self::MayLeave
        } else {
            Self::Stays
        }
    }
}

/// Puts series `s`'s index keys into `batch` beside its data, as `held`
/// says. Notes `s` in `indexed` for [`written`] when its `S` key is put;
/// returns the keys' bytes.
pub(crate) fn put_if_due(
    inner: &Shared,
    batch: &mut Batch,
    s: &Arc<MemSeries>,
    now: i64,
    held: Held,
    indexed: &mut Vec<Arc<MemSeries>>,
) -> usize {
    let refresh_before = now.saturating_sub(inner.settings.retention_ms() / 2);
    if held == Held::Stays && s.keys_written_ms() >= refresh_before {
        return 0;
    }
    indexed.push(Arc::clone(s));
    let ttl = inner.series_ttl();
    let labels = values::encode_series(now, &s.labels);
    let mut bytes = labels.len() + keys::series_key(0).len();
    batch.put_with_options(keys::series_key(s.id), labels, &ttl);
    if held == Held::MayLeave {
        let hash = labels_hash(&s.labels);
        let ids = values::encode_postings(&inner.head.hash_ids(hash, s.id));
        bytes += ids.len() + keys::series_hash_key(0).len();
        batch.put_with_options(keys::series_hash_key(hash), ids, &ttl);
        inner.head.note_stored_hash(hash);
    }
    bytes
}

/// Notes that the write holding the `S` key of `series`, put at `now`,
/// succeeded (durably for a seal and the late pass; a spill's keys share
/// one batch with its segments, which recovery needs together): the
/// sealer then refreshes it only when it is about to expire. Not before: a
/// write that failed is made again, keys included.
pub(crate) fn written(series: &[Arc<MemSeries>], now: i64) {
    for s in series {
        s.note_keys_written(now);
    }
}

/// For each label set the head does not hold, the id the store knows it
/// by, if any. The cache of dropped series answers first; a hash the
/// filter of stored hashes has never seen is new; the rest are read from
/// the store, all of a request's `H` keys, then the `S` keys they list,
/// each in key order (one scan with a seek per key when there are many: a
/// sender back after an outage brings all its series at once).
pub(crate) async fn stored_ids<L: LabelPairs + Sync + ?Sized>(
    inner: &Shared,
    sets: &[&L],
) -> Result<Vec<Option<u64>>, StorageError> {
    let mut found = vec![None; sets.len()];
    let head = &inner.head;
    let recent = head.recent();
    // (hash, set) of the sets to look up in the store.
    let mut ask: Vec<(u64, usize)> = Vec::new();
    for (i, labels) in sets.iter().enumerate() {
        let hash = labels_hash(*labels);
        if let Some(id) = recent.id(hash) {
            if recent.labels(id).is_some_and(|l| l.eq_pairs(*labels)) {
                if let Some(slot) = found.get_mut(i) {
                    *slot = Some(id);
                }
                continue;
            }
        }
        if head.may_be_stored(hash) {
            ask.push((hash, i));
        }
    }
    if ask.is_empty() {
        return Ok(found);
    }
    ask.sort_unstable();
    let mut hashes: Vec<u64> = ask.iter().map(|&(h, _)| h).collect();
    hashes.dedup();
    let hash_keys: Vec<[u8; 9]> = hashes.iter().map(|&h| keys::series_hash_key(h)).collect();
    let listed = read_keys(inner, &hash_keys).await?;
    let mut ids_of: rustc_hash::FxHashMap<u64, Vec<u64>> = Default::default();
    for (&hash, value) in hashes.iter().zip(listed) {
        if let Some(v) = value {
            let mut ids = Vec::new();
            values::decode_postings(&v, &mut ids)?;
            ids_of.insert(hash, ids);
        }
    }
    // Labels of every id listed: the cache's, else the `S` keys'.
    let mut labels_of: rustc_hash::FxHashMap<u64, Arc<SeriesLabels>> = Default::default();
    let mut missing: Vec<u64> = Vec::new();
    for &id in ids_of.values().flatten() {
        match recent.labels(id) {
            Some(l) => {
                labels_of.insert(id, l);
            }
            None => missing.push(id),
        }
    }
    missing.sort_unstable();
    missing.dedup();
    let series_keys: Vec<[u8; 9]> = missing.iter().map(|&id| keys::series_key(id)).collect();
    for (&id, value) in missing.iter().zip(read_keys(inner, &series_keys).await?) {
        if let Some(v) = value {
            let (_, labels) = values::decode_series(&v)?;
            labels_of.insert(id, Arc::new(SeriesLabels::new(&labels[..])));
        }
    }
    for (hash, i) in ask {
        let (Some(ids), Some(labels)) = (ids_of.get(&hash), sets.get(i)) else {
            continue;
        };
        let id = ids
            .iter()
            .copied()
            .find(|id| labels_of.get(id).is_some_and(|l| l.eq_pairs(*labels)));
        match (id, found.get_mut(i)) {
            (Some(id), Some(slot)) => *slot = Some(id),
            (None, _) => head.note_shared_hash(hash, ids),
            _ => {}
        }
    }
    Ok(found)
}

/// Reads at most this many keys one `get` each; more by one scan.
const GETS_UP_TO: usize = 16;

/// The values of `wanted` (sorted keys), `None` where absent.
async fn read_keys(
    inner: &Shared,
    wanted: &[[u8; 9]],
) -> Result<Vec<Option<bytes::Bytes>>, StorageError> {
    let backend = &inner.backend;
    let (Some(lo), Some(hi)) = (wanted.first(), wanted.last()) else {
        return Ok(Vec::new());
    };
    if wanted.len() <= GETS_UP_TO {
        return futures::stream::iter(wanted.iter().copied())
            .map(|k| async move { backend.get(&k).await })
            .buffered(LOOKUP_CONCURRENCY)
            .try_collect()
            .await;
    }
    let mut it = backend
        .scan_as(lo.to_vec()..keys::prefix_end(hi), ScanKind::Short)
        .await?;
    let mut out = Vec::with_capacity(wanted.len());
    // The entry after the last key looked for, never sought past: the
    // iterator only moves forward.
    let mut ahead: Option<slatedb::KeyValue> = None;
    let mut ended = false;
    for k in wanted {
        let behind = ahead
            .as_ref()
            .is_none_or(|kv| kv.key.as_ref() < k.as_slice());
        if behind && !ended {
            it.seek(k).await?;
            ahead = it.next().await?;
            ended = ahead.is_none();
        }
        out.push(match &ahead {
            Some(kv) if kv.key.as_ref() == k.as_slice() => Some(kv.value.clone()),
            _ => None,
        });
    }
    Ok(out)
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
