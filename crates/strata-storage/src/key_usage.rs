//! What the store holds, by kind of key: the live keys and their bytes,
//! read in one scan. The bytes a bucket holds beyond these are SlateDB's
//! own: its write-ahead log, values deleted or overwritten that no merge
//! has dropped yet, the tables a merge replaced that its garbage
//! collector has not deleted yet, and manifests.

use std::collections::BTreeMap;

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys;
use crate::storage::Storage;

/// The live keys of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindUsage {
    /// What the keys hold (`docs/format.md`'s names).
    pub kind: &'static str,
    pub keys: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
}

/// The kinds by prefix byte, in the keyspace's order of description.
const KINDS: [(u8, &str); 13] = [
    (keys::LOG, "log record"),
    (keys::SERIES, "series labels"),
    (keys::SERIES_HASH, "series by label hash"),
    (keys::POSTINGS, "bucket postings"),
    (keys::CHUNK, "bucket chunk"),
    (keys::LATE, "bucket late marker"),
    (keys::BLOCK_CHUNK, "block chunk"),
    (keys::BLOCK_POSTINGS, "block postings"),
    (keys::BLOCK_LATE, "block late marker"),
    (keys::EXEMPLARS, "exemplars"),
    (keys::HISTOGRAMS, "native histograms"),
    (keys::META, "metadata"),
    (keys::TOMBSTONE, "deletion"),
];

impl Storage {
    /// Every live key, counted by kind, in the order of their prefixes
    /// (kinds with no key left out; keys of no known kind counted as
    /// "other"). Reads the whole keyspace once, past the block cache.
    pub async fn key_usage(&self) -> Result<Vec<KindUsage>, StorageError> {
        let mut by_prefix: BTreeMap<u8, KindUsage> = BTreeMap::new();
        let mut it = self.shared.backend.scan_as(.., ScanKind::Bulk).await?;
        while let Some(kv) = it.next().await? {
            let Some(&prefix) = kv.key.first() else {
                continue;
            };
            let u = by_prefix.entry(prefix).or_insert_with(|| KindUsage {
                kind: KINDS
                    .iter()
                    .find(|(p, _)| *p == prefix)
                    .map_or("other", |&(_, kind)| kind),
                ..KindUsage::default()
            });
            u.keys += 1;
            u.key_bytes += kv.key.len() as u64;
            u.value_bytes += kv.value.len() as u64;
        }
        let mut out: Vec<KindUsage> = Vec::new();
        for u in by_prefix.into_values() {
            match out.iter_mut().find(|o| o.kind == u.kind) {
                // Every prefix of no known kind counts as one "other".
                Some(o) => {
                    o.keys += u.keys;
                    o.key_bytes += u.key_bytes;
                    o.value_bytes += u.value_bytes;
                }
                None => out.push(u),
            }
        }
        Ok(out)
    }
}
