//! One postings list of the head: series ids, sorted but for a tail of
//! recent out-of-order ids.
//!
//! New series get ascending ids and are appended. A series that comes back
//! keeps its old id, lower than most of the list's (a returning pod's
//! `job` and `__name__` lists hold every series since): inserted in place,
//! each would move the rest of a list that may hold a million ids. They
//! go to the tail instead, which is sorted into the rest once it is an
//! eighth of the list, and readers sort their copy while it is not.

#[derive(Default)]
pub(crate) struct IdList {
    ids: Vec<u64>,
    /// `ids[..sorted]` ascending, without repeats.
    sorted: usize,
}

/// Out-of-order ids a list takes before they are sorted in, at least.
const TAIL_MIN: usize = 64;

impl IdList {
    pub(crate) fn push(&mut self, id: u64) {
        let in_order = self.sorted == self.ids.len() && self.ids.last().is_none_or(|&l| l < id);
        self.ids.push(id);
        if in_order {
            self.sorted += 1;
        } else if self.ids.len() - self.sorted > (self.sorted / 8).max(TAIL_MIN) {
            self.settle();
        }
    }

    fn settle(&mut self) {
        self.ids.sort_unstable();
        self.ids.dedup();
        self.sorted = self.ids.len();
    }

    /// The ids, ascending.
    pub(crate) fn to_sorted(&self) -> Vec<u64> {
        let mut v = self.ids.clone();
        if self.sorted < v.len() {
            v.sort_unstable();
            v.dedup();
        }
        v
    }

    /// Keeps the ids `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let (mut at, mut sorted) = (0, 0);
        let before = self.sorted;
        self.ids.retain(|&id| {
            let k = keep(id);
            if k && at < before {
                sorted += 1;
            }
            at += 1;
            k
        });
        self.sorted = sorted;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 8
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
                prop_assert!(list.ids[..list.sorted].windows(2).all(|w| w[0] < w[1]));
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
        assert_eq!(list.sorted, 1000, "an eighth of 1,000 is 125: still a tail");
        for id in 100..126 {
            list.push(id);
        }
        assert_eq!(list.sorted, list.ids.len(), "sorted in");
        assert_eq!(
            list.to_sorted(),
            (0..126).chain(1000..2000).collect::<Vec<_>>()
        );
    }
}
