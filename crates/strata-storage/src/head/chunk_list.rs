//! A series' chunks, one a bucket, oldest first: the newest bucket's held
//! in the series itself, the older ones (an ended bucket's, until its seal)
//! in a list beside it.
//!
//! A series holds one chunk most of the time and two from a bucket's end
//! to its seal. Kept in one list, a bucket's end moved every series'
//! 80-byte entry into a 160-byte block, and the 80-byte blocks left behind,
//! one a series among the others' allocations, stayed the allocator's free
//! room until the seal shrank the lists into them again: 76 MiB at a
//! million series for the whole seal. Held in the series, the newest chunk
//! does not move, and the ended bucket's goes into a block of its own,
//! freed with the others' at the seal.

use super::chunk::HeadChunk;

/// One chunk and its bucket.
pub(crate) type Entry = (i64, HeadChunk);

/// Bytes the newest chunk takes in the series (counted as chunk memory).
pub(crate) const INLINE_BYTES: usize = std::mem::size_of::<Option<Entry>>();

#[derive(Default)]
pub(crate) struct ChunkList {
    /// Chunks of buckets before the newest one's, oldest first.
    older: Vec<Entry>,
    /// The newest bucket's chunk; `None` only when there is no chunk.
    newest: Option<Entry>,
}

impl ChunkList {
    /// The chunks, oldest bucket first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.older.iter().chain(self.newest.as_ref())
    }

    /// The chunks, oldest bucket first.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> + '_ {
        self.older.iter_mut().chain(self.newest.as_mut())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.newest.is_none()
    }

    /// The chunk of `bucket`.
    pub(crate) fn get(&self, bucket: i64) -> Option<&HeadChunk> {
        match &self.newest {
            Some((b, c)) if *b == bucket => Some(c),
            _ => self
                .older
                .iter()
                .find(|(b, _)| *b == bucket)
                .map(|(_, c)| c),
        }
    }

    /// The chunk of `bucket`.
    pub(crate) fn get_mut(&mut self, bucket: i64) -> Option<&mut HeadChunk> {
        match &mut self.newest {
            Some((b, c)) if *b == bucket => Some(c),
            _ => self
                .older
                .iter_mut()
                .find(|(b, _)| *b == bucket)
                .map(|(_, c)| c),
        }
    }

    /// Adds `chunk` as the chunk of `bucket`, which has none, in bucket
    /// order. A later bucket's becomes the newest, the one before it moved
    /// to the list; an earlier one (a series running ahead) goes into the
    /// list. The list grows by one entry and no more: a `Vec` growing by
    /// itself would make room for four at its first push. Returns whether
    /// an earlier chunk was the newest until now.
    pub(crate) fn insert(&mut self, bucket: i64, chunk: HeadChunk) -> bool {
        match &self.newest {
            Some((b, _)) if *b > bucket => {
                let at = self.older.partition_point(|(b, _)| *b < bucket);
                self.older.reserve_exact(1);
                self.older.insert(at, (bucket, chunk));
                false
            }
            _ => match self.newest.replace((bucket, chunk)) {
                Some(before) => {
                    self.older.reserve_exact(1);
                    self.older.push(before);
                    true
                }
                None => false,
            },
        }
    }

    /// The newest chunk's bucket.
    pub(crate) fn newest_bucket(&self) -> Option<i64> {
        self.newest.as_ref().map(|(b, _)| *b)
    }

    /// Keeps the chunks of the buckets `keep` says, and lets the list's
    /// block go with the chunks it held.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(i64) -> bool) {
        self.older.retain(|(b, _)| keep(*b));
        if self.newest.as_ref().is_some_and(|(b, _)| !keep(*b)) {
            self.newest = self.older.pop();
        }
        super::fit(&mut self.older);
    }

    /// Heap bytes: the list's block and what each chunk holds (not the
    /// newest entry itself, which is in the series: [`INLINE_BYTES`]).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.older.capacity() * std::mem::size_of::<Entry>()
            + self.iter().map(|(_, c)| c.heap_bytes()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn buckets(l: &ChunkList) -> Vec<i64> {
        l.iter().map(|(b, _)| *b).collect()
    }

    #[test]
    fn the_newest_stays_in_place_and_the_rest_keep_bucket_order() {
        assert_eq!(INLINE_BYTES, std::mem::size_of::<Entry>());
        let mut l = ChunkList::default();
        assert!(l.is_empty());
        assert!(!l.insert(5, HeadChunk::default()));
        assert_eq!(l.older.capacity(), 0);
        l.get_mut(5).unwrap().append(5_000, 1.0);
        assert!(l.insert(6, HeadChunk::default()), "bucket 5's chunk ended");
        assert_eq!(l.newest_bucket(), Some(6));
        // The ended bucket's chunk moved to a list of exactly one entry.
        assert_eq!(l.older.capacity(), 1);
        assert_eq!(buckets(&l), vec![5, 6]);
        assert_eq!(l.get(5).unwrap().len(), 1);
        assert_eq!(l.get(6).unwrap().len(), 0);
        // A series running ahead: an earlier bucket's chunk, in order.
        assert!(!l.insert(3, HeadChunk::default()));
        assert_eq!(buckets(&l), vec![3, 5, 6]);
        assert_eq!(l.older.capacity(), 2);
        l.retain(|b| b > 3);
        assert_eq!(buckets(&l), vec![5, 6]);
        assert_eq!(l.older.capacity(), 1);
        l.retain(|b| b > 5);
        assert_eq!(buckets(&l), vec![6]);
        assert_eq!(l.older.capacity(), 0);
        // The newest dropped while an older one stays: that one is newest.
        l.insert(7, HeadChunk::default());
        l.retain(|b| b != 7);
        assert_eq!(buckets(&l), vec![6]);
        assert!(l.newest.is_some() && l.older.is_empty());
        l.retain(|_| false);
        assert!(l.is_empty());
        assert_eq!(l.heap_bytes(), 0);
    }
}
