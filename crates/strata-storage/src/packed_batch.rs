//! Write batches of many small keys, their bytes packed in one buffer.
//!
//! `slatedb::WriteBatch::put` copies each key and each value into an
//! allocation of its own, and the memtable's first clone of each (its skip
//! list keys an entry by a copy of the key, and the WAL holds the entry
//! too) adds a shared header beside it: four allocations an entry, each
//! rounded up to its size class, beside the skip list's node. For the
//! seal's keys (a million of 20 to 200 bytes at 1 M series: chunks, labels,
//! label hashes) that was about as much heap again as SlateDB counts for
//! its memtable, which it writes out only at `storage.memtable_bytes` by
//! its count. This batch copies the keys and values into one buffer and
//! hands SlateDB slices of it, which it clones without allocating; the
//! buffer goes once the last entry pointing into it does (the batch's
//! entries share a memtable and a WAL file).
//!
//! Deletes are passed on as they are: SlateDB takes a tombstone's key only
//! by copy.

use std::ops::Range;

use bytes::Bytes;
use slatedb::config::PutOptions;
use slatedb::WriteBatch;

enum Op {
    Put {
        key: Range<usize>,
        value: Range<usize>,
        options: PutOptions,
    },
    Delete {
        key: Range<usize>,
    },
}

/// A write batch whose puts' keys and values live in one buffer.
#[derive(Default)]
pub(crate) struct Batch {
    buf: Vec<u8>,
    ops: Vec<Op>,
}

impl Batch {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        start..self.buf.len()
    }

    /// Puts `key` with `value` and `options`; a later put or delete of the
    /// same key in the batch wins.
    pub(crate) fn put_with_options(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &PutOptions,
    ) {
        let key = self.push(key.as_ref());
        let value = self.push(value.as_ref());
        self.ops.push(Op::Put {
            key,
            value,
            options: options.clone(),
        });
    }

    /// Deletes `key`.
    pub(crate) fn delete(&mut self, key: impl AsRef<[u8]>) {
        let key = self.push(key.as_ref());
        self.ops.push(Op::Delete { key });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The batch for SlateDB: its puts' keys and values slices of one
    /// buffer of exactly their bytes.
    pub(crate) fn into_write_batch(mut self) -> WriteBatch {
        crate::head::fit(&mut self.buf);
        let buf = Bytes::from(self.buf);
        let mut batch = WriteBatch::new();
        for op in self.ops {
            match op {
                Op::Put {
                    key,
                    value,
                    options,
                } => batch.put_bytes_with_options(buf.slice(key), buf.slice(value), &options),
                Op::Delete { key } => batch.delete(buf.slice(key)),
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn puts_and_deletes_reach_the_store_as_written() {
        let store: std::sync::Arc<dyn object_store::ObjectStore> =
            std::sync::Arc::new(object_store::memory::InMemory::new());
        let db = slatedb::Db::open("packed", store).await.unwrap();
        let mut seed = WriteBatch::new();
        seed.put(b"gone", b"x");
        seed.put(b"kept", b"old");
        db.write(seed).await.unwrap();

        let mut batch = Batch::new();
        assert!(batch.is_empty());
        let none = PutOptions::default();
        batch.put_with_options(b"a", b"1", &none);
        batch.put_with_options(b"b", vec![7u8; 300], &none);
        batch.delete(b"gone");
        batch.put_with_options(b"kept", b"new", &none);
        // The later of two ops on one key wins, as in SlateDB's own batch.
        batch.put_with_options(b"c", b"first", &none);
        batch.delete(b"c");
        batch.put_with_options(b"d", b"", &none);
        assert!(!batch.is_empty());
        db.write(batch.into_write_batch()).await.unwrap();

        let get = |k: &'static [u8]| {
            let db = &db;
            async move { db.get(k).await.unwrap().map(|b| b.to_vec()) }
        };
        assert_eq!(get(b"a").await, Some(b"1".to_vec()));
        assert_eq!(get(b"b").await, Some(vec![7u8; 300]));
        assert_eq!(get(b"gone").await, None);
        assert_eq!(get(b"kept").await, Some(b"new".to_vec()));
        assert_eq!(get(b"c").await, None);
        assert_eq!(get(b"d").await, Some(Vec::new()));
        db.close().await.unwrap();
    }
}
