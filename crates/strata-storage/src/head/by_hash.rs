//! The head's series by label-set hash: each series once, label sets
//! whose hashes collide side by side, told apart by their labels.
//!
//! A table of the series' pointers alone, 9 bytes a slot with its control
//! byte, where a map from hash to pointer took 17: a table's slots double
//! as it grows, so at a million series (2^21 slots) that is 19 MiB
//! instead of 36. The hash is not kept: a table that grows hashes each
//! series' labels again. It is split in [`SHARDS`] tables by bits of the
//! hash no table uses for its slots, so that each grows on its own, a
//! sixteenth of the series at a time under the index's lock (a single
//! table of a million series took about 0.2 s to grow, hashing labels
//! scattered over the heap).

use std::sync::Arc;

use hashbrown::HashTable;
use strata_codec::LabelPairs;

use super::{labels_hash, MemSeries};

const SHARDS: usize = 16;

#[derive(Default)]
pub(super) struct ByHash {
    shards: [HashTable<Arc<MemSeries>>; SHARDS],
}

/// The table of a hash: bits 32 to 35, which a table's slot (the low bits)
/// and tag (the top seven) leave alone below 2^32 slots.
fn shard(hash: u64) -> usize {
    // Masked to four bits: the cast cannot truncate.
    ((hash >> 32) & (SHARDS as u64 - 1)) as usize
}

fn rehash(s: &Arc<MemSeries>) -> u64 {
    labels_hash(&s.labels)
}

impl ByHash {
    fn table(&self, hash: u64) -> Option<&HashTable<Arc<MemSeries>>> {
        self.shards.get(shard(hash))
    }

    /// The series with these labels, whose hash is `hash`.
    pub(super) fn find(
        &self,
        hash: u64,
        labels: &(impl LabelPairs + ?Sized),
    ) -> Option<&Arc<MemSeries>> {
        self.table(hash)?.find(hash, |s| s.labels.eq_pairs(labels))
    }

    /// The first series whose hash may be `hash`, its labels not yet
    /// compared: nearly always the one a lookup finds, to fetch its memory
    /// ahead of the comparison.
    pub(super) fn first(&self, hash: u64) -> Option<&Arc<MemSeries>> {
        self.table(hash)?.iter_hash(hash).next()
    }

    /// Adds `series`, whose labels hash to `hash` and are not held yet.
    pub(super) fn insert(&mut self, hash: u64, series: Arc<MemSeries>) {
        if let Some(t) = self.shards.get_mut(shard(hash)) {
            t.insert_unique(hash, series, rehash);
        }
    }

    /// Takes `series`, held under `hash`, out.
    pub(super) fn remove(&mut self, hash: u64, series: &Arc<MemSeries>) {
        if let Some(t) = self.shards.get_mut(shard(hash)) {
            if let Ok(e) = t.find_entry(hash, |s| Arc::ptr_eq(s, series)) {
                e.remove();
            }
        }
    }

    /// The ids of the series other than `id` whose labels hash to `hash`.
    pub(super) fn ids_sharing(&self, hash: u64, id: u64) -> impl Iterator<Item = u64> + '_ {
        self.table(hash)
            .into_iter()
            .flat_map(move |t| t.iter_hash(hash))
            .filter(move |s| s.id != id && rehash(s) == hash)
            .map(|s| s.id)
    }

    /// Heap bytes held: a pointer and a control byte a slot.
    pub(super) fn heap_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|t| slots(t.capacity()) * (std::mem::size_of::<Arc<MemSeries>>() + 1))
            .sum()
    }
}

/// The slots of a table that holds up to `capacity` entries: a power of
/// two, filled to seven eighths at most (below 8, to all but one).
fn slots(capacity: usize) -> usize {
    match capacity {
        0 => 0,
        c if c < 8 => (c + 1).next_power_of_two(),
        c => (c / 7 * 8).next_power_of_two(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::head::{SeriesLabels, NOT_WRITTEN};
    use std::sync::atomic::AtomicUsize;
    use strata_codec::Label;

    fn series(id: u64, v: &str) -> (Vec<Label>, Arc<MemSeries>) {
        let labels = vec![Label::new("__name__", "m"), Label::new("k", v)];
        let s = Arc::new(MemSeries::new(
            id,
            SeriesLabels::new(&labels[..]),
            false,
            NOT_WRITTEN,
            Arc::new(AtomicUsize::new(0)),
        ));
        (labels, s)
    }

    #[test]
    fn finds_each_series_by_its_labels_through_growth_and_removal() {
        let mut m = ByHash::default();
        let all: Vec<_> = (0..5_000).map(|i| series(i, &i.to_string())).collect();
        for (l, s) in &all {
            m.insert(labels_hash(l), Arc::clone(s));
        }
        for (l, s) in &all {
            let h = labels_hash(l);
            assert!(Arc::ptr_eq(m.find(h, l).unwrap(), s));
            assert_eq!(m.ids_sharing(h, s.id).count(), 0);
        }
        let (l, s) = &all[17];
        m.remove(labels_hash(l), s);
        assert!(m.find(labels_hash(l), l).is_none());
        assert!(m.find(labels_hash(&all[18].0), &all[18].0).is_some());
        // Within a third of the estimate's worst case (half the slots used).
        assert!(m.heap_bytes() >= 5_000 * 9 && m.heap_bytes() <= 5_000 * 9 * 3);
    }

    #[test]
    fn series_whose_hashes_collide_are_told_apart() {
        let mut m = ByHash::default();
        let (la, a) = series(1, "a");
        let (lb, b) = series(2, "b");
        let h = labels_hash(&la);
        m.insert(h, Arc::clone(&a));
        // `b` held under `a`'s hash, as a colliding label set would be.
        m.insert(h, Arc::clone(&b));
        assert!(Arc::ptr_eq(m.find(h, &la).unwrap(), &a));
        assert!(Arc::ptr_eq(m.find(h, &lb).unwrap(), &b));
        m.remove(h, &a);
        assert!(m.find(h, &la).is_none());
        assert!(Arc::ptr_eq(m.find(h, &lb).unwrap(), &b));
        assert!(Arc::ptr_eq(m.first(h).unwrap(), &b));
    }

    #[test]
    fn slots_follow_the_tables_growth() {
        assert_eq!(slots(0), 0);
        assert_eq!(slots(3), 4);
        assert_eq!(slots(7), 8);
        assert_eq!(slots(14), 16);
        assert_eq!(slots(917_504), 1 << 20);
        let mut t: HashTable<u64> = HashTable::new();
        for i in 0..100_000u64 {
            t.insert_unique(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i, |&v| {
                v.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            });
        }
        assert_eq!(slots(t.capacity()), 131_072);
    }
}
