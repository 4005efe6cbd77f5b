//! Chunks a seal has written and the head has let go before the seal ends.
//!
//! A seal spreads its writes over `seal_spread` (ten minutes by default),
//! after `seal_grace`. Holding every series' chunk of the bucket until the
//! checkpoint kept two buckets in memory for that whole time, the largest
//! peak of the hour. Once a batch of chunk keys is durable, the head drops
//! those series' chunks of the bucket and notes the series here:
//! - a read of the bucket takes those series' samples from the store
//!   (`HeadRead::released`) until the checkpoint marks the bucket sealed;
//! - a seal of the bucket run again after a failure lists them in the
//!   bucket's postings without writing their chunks again (the head no
//!   longer holds them; the store does).
//!
//! A set of bits by series id, sized when the seal first releases a chunk:
//! every series a seal walks exists when it begins, so its id is below the
//! size. A bit is set before the chunk is dropped, under the series' lock,
//! so a read that finds the chunk gone finds the bit set. A set is made
//! only while no read's pass over the head runs (a pass holds the list of
//! sets for reading): a pass that took the list before the set was made
//! would find neither chunk nor bit.

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Released {
    pub(crate) bucket: i64,
    bits: Box<[AtomicU64]>,
}

impl Released {
    /// An empty set for `bucket`, for ids below `ids`.
    pub(crate) fn new(bucket: i64, ids: u64) -> Self {
        let words = usize::try_from(ids.div_ceil(64)).unwrap_or(usize::MAX);
        Self {
            bucket,
            bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Notes series `id`; false (and nothing noted) if it is beyond the
    /// set's size.
    pub(crate) fn insert(&self, id: u64) -> bool {
        let Some(word) = self.word(id) else {
            return false;
        };
        word.fetch_or(1 << (id % 64), Ordering::Release);
        true
    }

    pub(crate) fn contains(&self, id: u64) -> bool {
        self.word(id)
            .is_some_and(|w| w.load(Ordering::Acquire) & (1 << (id % 64)) != 0)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
    }

    fn word(&self, id: u64) -> Option<&AtomicU64> {
        self.bits.get(usize::try_from(id / 64).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_ids_within_its_size_only() {
        let r = Released::new(7, 130);
        assert!(!r.contains(0));
        assert!(r.insert(0) && r.insert(63) && r.insert(64) && r.insert(129));
        for id in [0, 63, 64, 129] {
            assert!(r.contains(id), "{id}");
        }
        for id in [1, 62, 65, 128] {
            assert!(!r.contains(id), "{id}");
        }
        // 130 ids take three words: 191 is the last id they can hold.
        assert!(r.insert(191));
        assert!(!r.insert(192) && !r.contains(192));
        assert_eq!(r.heap_bytes(), 24);
    }
}
