//! A block's chunk and part keys as SlateDB holds them: read raw, and
//! rewritten the way an earlier build laid a block's parts out.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::raw;

/// Every chunk and part key of the block starting at hour `block_hour`.
fn block_chunk_keys(block_hour: i64) -> std::ops::Range<Vec<u8>> {
    use strata_storage::keys;
    let prefix = keys::chunk_prefix(keys::Span::Block(block_hour));
    let end = keys::prefix_end(&prefix);
    prefix..end
}

/// The `B` keys of the block starting at hour `block_hour`: per series its
/// value's part ranges (`None` for a value of another form), and how many
/// part keys of their own it has.
pub(crate) async fn block_keys(
    store: &Arc<dyn ObjectStore>,
    block_hour: i64,
) -> std::collections::BTreeMap<u64, (Option<Vec<(i64, i64)>>, usize)> {
    use strata_storage::keys;
    let reader = raw::reader(store).await;
    let mut it = reader.scan(block_chunk_keys(block_hour)).await.unwrap();
    let mut out = std::collections::BTreeMap::new();
    while let Some(kv) = it.next().await.unwrap() {
        let id = keys::chunk_series(&kv.key).unwrap();
        let entry = out.entry(id).or_insert((None, 0));
        match kv.key.len() {
            keys::CHUNK_KEY_LEN => {
                entry.0 = strata_storage::values::decode_parts(&kv.value)
                    .unwrap()
                    .map(|parts| parts.into_iter().map(|(range, _)| range).collect());
            }
            keys::SEGMENT_KEY_LEN => entry.1 += 1,
            _ => {}
        }
    }
    reader.close().await.unwrap();
    out
}

/// Rewrites every series' value of the block starting at hour
/// `block_hour` as a build that kept a block's parts apart while it filled
/// wrote it: each part under a key of its own, the value their list.
pub(crate) async fn parts_apart(store: &Arc<dyn ObjectStore>, block_hour: i64) {
    use strata_storage::{keys, values};
    let db = raw::writer(store).await;
    let mut values_of = Vec::new();
    let mut it = db.scan(block_chunk_keys(block_hour)).await.unwrap();
    while let Some(kv) = it.next().await.unwrap() {
        if kv.key.len() == keys::CHUNK_KEY_LEN {
            values_of.push((keys::chunk_series(&kv.key).unwrap(), kv.value));
        }
    }
    drop(it);
    for (id, value) in values_of {
        let parts = values::decode_parts(&value).unwrap().unwrap();
        let mut batch = slatedb::WriteBatch::new();
        let mut listed = Vec::new();
        for ((first, last), at) in parts {
            let key = keys::segment_key(keys::Span::Block(block_hour), id, first, last);
            batch.put(key, &value[at]);
            listed.push((first, last));
        }
        batch.put(
            keys::chunk_key(keys::Span::Block(block_hour), id),
            values::encode_segmented(&listed, &[]),
        );
        db.write(batch).await.unwrap();
    }
    db.close().await.unwrap();
}
