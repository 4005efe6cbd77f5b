//! Series read from the store: those log records name that the head does
//! not hold (`S` keys), and the label hashes of the labels index (`H`
//! keys), built once for a store written before it.

use futures::{StreamExt, TryStreamExt};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::backend::{Backend, ScanKind};
use crate::error::StorageError;
use crate::head::Head;
use crate::keys;
use crate::values;

/// The `M` key that says every `S` key has its `H` key (stores written
/// before the labels index have none until the writer adds them).
const SERIES_HASH_INDEXED: &[u8] = b"Mseries_hash_indexed";

/// Series resolved from their `S` keys at a time.
const SERIES_GETS_AHEAD: usize = 64;

/// Adds the series of `ids` the head does not hold, from their `S` keys;
/// returns those found (a series whose key has expired is gone with its
/// data).
pub(crate) async fn fetch_series(
    db: &Backend,
    head: &Head,
    ids: &[u64],
) -> Result<FxHashSet<u64>, StorageError> {
    let found: Vec<Option<u64>> = futures::stream::iter(ids.iter().copied())
        .map(|id| async move {
            if head.series_by_id(id).is_some() {
                return Ok(Some(id));
            }
            let Some(v) = db.get(&keys::series_key(id)).await? else {
                return Ok::<_, StorageError>(None);
            };
            let (written, labels) = values::decode_series(&v)?;
            head.insert_recovered(id, labels, written);
            Ok(Some(id))
        })
        .buffer_unordered(SERIES_GETS_AHEAD)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// Notes every label hash of the store's labels index (`H` keys) in the
/// head's filter, so a label set whose hash it has never seen skips the
/// store. A store written before the labels index gets one first: an `H`
/// key for every `S` key, once. Returns the hashes noted and whether the
/// index was built.
pub(crate) async fn load_series_hashes(
    db: &slatedb::Db,
    backend: &Backend,
    head: &Head,
    series_ttl: &slatedb::config::PutOptions,
) -> Result<(usize, bool), StorageError> {
    if backend.get(SERIES_HASH_INDEXED).await?.is_some() {
        let mut it = backend
            .scan_as(
                vec![keys::SERIES_HASH]..vec![keys::SERIES_HASH + 1],
                ScanKind::Bulk,
            )
            .await?;
        let mut n = 0;
        while let Some(kv) = it.next().await? {
            if let Some(hash) = keys::series_hash(&kv.key) {
                head.note_stored_hash(hash);
                n += 1;
            }
        }
        return Ok((n, false));
    }
    let mut by_hash: FxHashMap<u64, Vec<u64>> = FxHashMap::default();
    let mut it = backend
        .scan_as(vec![keys::SERIES]..vec![keys::SERIES + 1], ScanKind::Bulk)
        .await?;
    while let Some(kv) = it.next().await? {
        let Some(id) = keys::series_id(&kv.key) else {
            continue;
        };
        let (_, labels) = values::decode_series(&kv.value)?;
        by_hash
            .entry(crate::head::labels_hash(&labels[..]))
            .or_default()
            .push(id);
    }
    let n = by_hash.len();
    let mut batch = slatedb::WriteBatch::new();
    for (i, (hash, mut ids)) in by_hash.into_iter().enumerate() {
        ids.sort_unstable();
        batch.put_with_options(
            keys::series_hash_key(hash),
            values::encode_postings(&ids),
            series_ttl,
        );
        head.note_stored_hash(hash);
        if i % 4096 == 4095 {
            db.write(std::mem::take(&mut batch)).await?;
        }
    }
    batch.put(SERIES_HASH_INDEXED, []);
    db.write(batch).await?.await_durable().await?;
    Ok((n, true))
}
