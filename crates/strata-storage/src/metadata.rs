//! Metric metadata (type, help, unit) as senders report it, per tenant:
//! one `M` key per tenant and metric name, holding the distinct entries
//! seen for it, newest last. Prometheus resends every metric's metadata
//! each minute; the writer remembers what it stored and writes a key only
//! when a metric's entries change.

use rustc_hash::FxHashMap;

use crate::error::StorageError;
use crate::keys;
use crate::shared::Shared;
pub use crate::state::metadata::MetadataEntry;

/// Most distinct entries kept per metric (targets that disagree about a
/// metric's help, say); the oldest goes first.
pub const MAX_ENTRIES: usize = 10;

/// Keeps `entries` for `tenant` (`""` without tenants): each metric's new
/// entries are added to what is stored, and written if anything changed.
/// Returns how many metrics were written.
pub(crate) async fn record(
    inner: &Shared,
    tenant: &str,
    entries: &[(String, MetadataEntry)],
) -> Result<usize, StorageError> {
    let db = inner.backend.writer().ok_or(StorageError::ReadOnly)?;
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
    let mut changed: FxHashMap<&str, Vec<MetadataEntry>> = FxHashMap::default();
    for (metric, entry) in entries {
        let key = (tenant.to_owned(), metric.clone());
        let known = writer.metadata.stored.lock().get(&key).cloned();
        let mut list = match changed.remove(metric.as_str()) {
            Some(list) => list,
            None => match known {
                Some(list) => list,
                None => read_one(inner, tenant, metric).await?,
            },
        };
        if !list.contains(entry) {
            if list.len() == MAX_ENTRIES {
                list.remove(0);
            }
            list.push(entry.clone());
            changed.insert(metric, list);
        } else {
            writer.metadata.stored.lock().insert(key, list);
        }
    }
    let n = changed.len();
    for (metric, list) in changed {
        db.put(keys::metadata_key(tenant, metric), encode(&list))
            .await
            .map_err(|e| inner.note_fenced(e.into()))?;
        writer
            .metadata
            .stored
            .lock()
            .insert((tenant.to_owned(), metric.to_owned()), list);
    }
    Ok(n)
}

async fn read_one(
    inner: &Shared,
    tenant: &str,
    metric: &str,
) -> Result<Vec<MetadataEntry>, StorageError> {
    match inner
        .backend
        .get(&keys::metadata_key(tenant, metric))
        .await?
    {
        Some(v) => decode(&v),
        None => Ok(Vec::new()),
    }
}

/// The stored metadata of `tenant`: one metric, or all, in name order.
pub(crate) async fn read(
    inner: &Shared,
    tenant: &str,
    metric: Option<&str>,
) -> Result<Vec<(String, Vec<MetadataEntry>)>, StorageError> {
    if let Some(metric) = metric {
        let list = read_one(inner, tenant, metric).await?;
        return Ok(if list.is_empty() {
            Vec::new()
        } else {
            vec![(metric.to_owned(), list)]
        });
    }
    let prefix = keys::metadata_key(tenant, "");
    // Metric names are UTF-8, which never holds 0xFF.
    let mut end = prefix.clone();
    end.push(0xFF);
    let mut it = inner.backend.scan(prefix.clone()..end).await?;
    let mut out = Vec::new();
    while let Some(kv) = it.next().await? {
        let Some(name) = kv.key.strip_prefix(prefix.as_slice()) else {
            continue;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        out.push((name.to_owned(), decode(&kv.value)?));
    }
    Ok(out)
}

/// `count varint`, then per entry `kind`, `help`, `unit`, each a varint
/// length and UTF-8 bytes.
fn encode(list: &[MetadataEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, list.len() as u64);
    for e in list {
        for s in [&e.kind, &e.help, &e.unit] {
            put_varint(&mut out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

fn decode(mut b: &[u8]) -> Result<Vec<MetadataEntry>, StorageError> {
    let bad = || StorageError::Corrupt("metadata value".into());
    let n = get_varint(&mut b).ok_or_else(bad)?;
    let mut out = Vec::with_capacity(n.min(MAX_ENTRIES as u64) as usize);
    for _ in 0..n {
        let mut field = || -> Option<String> {
            let len = usize::try_from(get_varint(&mut b)?).ok()?;
            let (s, rest) = (b.get(..len)?, b.get(len..)?);
            b = rest;
            String::from_utf8(s.to_vec()).ok()
        };
        let kind = field().ok_or_else(bad)?;
        let help = field().ok_or_else(bad)?;
        let unit = field().ok_or_else(bad)?;
        out.push(MetadataEntry { kind, help, unit });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let list = vec![
            MetadataEntry {
                kind: "counter".into(),
                help: "Requests served, by code.".into(),
                unit: String::new(),
            },
            MetadataEntry {
                kind: "gauge".into(),
                help: "ünïcode".into(),
                unit: "bytes".into(),
            },
        ];
        assert_eq!(decode(&encode(&list)).unwrap(), list);
        assert!(decode(&encode(&list)[..5]).is_err());
    }
}
