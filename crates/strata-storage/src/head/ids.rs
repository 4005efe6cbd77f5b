//! One postings list of the head: series ids, sorted but for a tail of
//! recent out-of-order ids.
//!
//! New series get ascending ids and are appended. A series that comes back
//! keeps its old id, lower than most of the list's (a returning pod's
//! `job` and `__name__` lists hold every series since): inserted in place,
//! each would move the rest of a list that may hold a million ids. They
//! go to the tail instead, which is sorted into the rest once it is an
//! eighth of the list, and readers sort their copy while it is not.
//! The sorted part is packed as deltas (see [`IdList`]).

use strata_codec::varint::{put_uvarint, Decbuf};

/// A list's ids packed as LEB128 deltas: a byte an id where series of a
/// target were created together (`instance`, `job`), two where a metric's
/// series are a target's worth apart (`__name__`), instead of the eight of
/// a `u64` (and the slack of a growing `Vec` on top). The head holds about
/// as many postings entries as labels, so this is most of its index.
#[derive(Default)]
pub(crate) struct IdList {
    /// Ascending ids without repeats, each the varint of its difference
    /// from the one before (the first from 0).
    packed: Vec<u8>,
    /// The last id in `packed` (0 while it is empty).
    last: u64,
    /// Ids that came out of order, unsorted: none on most lists, so boxed
    /// (8 bytes a list where a `Vec` would take 24).
    #[allow(clippy::box_collection)]
    tail: Option<Box<Vec<u64>>>,
}

/// Out-of-order ids a list takes before they are sorted in, at least.
const TAIL_MIN: usize = 64;

impl IdList {
    pub(crate) fn push(&mut self, id: u64) {
        let in_order = self.tail.is_none() && (self.packed.is_empty() || id > self.last);
        if in_order {
            put_uvarint(&mut self.packed, id - self.last);
            self.last = id;
            return;
        }
        let tail = self.tail.get_or_insert_with(Box::default);
        tail.push(id);
        // An eighth of the list, counted in its packed bytes (at least a
        // byte an id).
        if tail.len() > (self.packed.len() / 8).max(TAIL_MIN) {
            self.settle();
        }
    }

    /// The packed ids, ascending.
    fn packed_ids(&self) -> impl Iterator<Item = u64> + '_ {
        let mut r = Decbuf::new(&self.packed);
        let mut id = 0u64;
        std::iter::from_fn(move || {
            if r.remaining() == 0 {
                return None;
            }
            id = id.wrapping_add(r.uvarint());
            Some(id)
        })
    }

    /// Packs `ids` (ascending, no repeats) in place of the packed ids.
    fn pack(&mut self, ids: impl IntoIterator<Item = u64>) {
        let mut packed = Vec::new();
        let mut last = 0;
        for id in ids {
            put_uvarint(&mut packed, id - last);
            last = id;
        }
        super::alloc::fit(&mut packed);
        self.packed = packed;
        self.last = last;
    }

    fn settle(&mut self) {
        let ids = self.to_sorted();
        self.pack(ids);
        self.tail = None;
    }

    /// The ids, ascending.
    pub(crate) fn to_sorted(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.packed_ids().collect();
        if let Some(tail) = &self.tail {
            v.extend_from_slice(tail);
            v.sort_unstable();
            v.dedup();
        }
        v
    }

    /// Keeps the ids `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let kept: Vec<u64> = self.packed_ids().filter(|&id| keep(id)).collect();
        self.pack(kept);
        if let Some(t) = &mut self.tail {
            t.retain(|&id| keep(id));
            if t.is_empty() {
                self.tail = None;
            }
        }
    }

    /// Bytes of its ids as held: at least one an id, so at most about
    /// ten times their count; known without decoding them.
    pub(crate) fn packed_bytes(&self) -> usize {
        self.packed.len() + self.tail.as_ref().map_or(0, |t| t.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packed.is_empty() && self.tail.is_none()
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.packed.capacity()
            + self
                .tail
                .as_ref()
                .map_or(0, |t| std::mem::size_of::<Vec<u64>>() + t.capacity() * 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn reads_sorted_whatever_the_order(
            ops in proptest::collection::vec((0u64..2000, proptest::bool::ANY), 0..3000),
        ) {
            let mut list = IdList::default();
            let mut want = std::collections::BTreeSet::new();
            for (id, remove) in ops {
                if remove {
                    list.retain(|x| x != id);
                    want.remove(&id);
                } else if want.insert(id) {
                    list.push(id);
                }
                let packed: Vec<u64> = list.packed_ids().collect();
                prop_assert!(packed.windows(2).all(|w| w[0] < w[1]));
                prop_assert_eq!(list.is_empty(), want.is_empty());
            }
            prop_assert_eq!(list.to_sorted(), want.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn old_ids_wait_in_the_tail_then_sort_in() {
        let mut list = IdList::default();
        for id in 1000..2000 {
            list.push(id);
        }
        for id in 0..100 {
            list.push(id);
        }
        assert_eq!(list.packed_ids().count(), 1000);
        assert_eq!(
            list.tail.as_ref().map(|t| t.len()),
            Some(100),
            "still a tail"
        );
        for id in 100..126 {
            list.push(id);
        }
        assert!(list.tail.is_none(), "sorted in");
        assert_eq!(list.packed_ids().count(), 1126);
        assert_eq!(
            list.to_sorted(),
            (0..126).chain(1000..2000).collect::<Vec<_>>()
        );
    }
}
