//! The head's series by id: pages of [`PAGE`] consecutive ids, a page
//! allocated while any of its ids is held.
//!
//! Ids are handed out in order, so the series a head holds fill their
//! pages: about 10 bytes a series (a page is one 128-byte allocation,
//! its map slot 25 bytes for 16 series), where a `BTreeMap` took about 34
//! (sequential inserts leave its leaves a little over half full). A page
//! holding a single series, one that came back with an old id among
//! series long dropped, costs about 160 bytes: few series do that.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::series::MemSeries;

/// Ids a page holds: 16 pointers fill the allocator's 128-byte class.
const PAGE: u64 = 16;

type Page = [Option<Arc<MemSeries>>; PAGE as usize];

#[derive(Default)]
pub(super) struct ById {
    /// Page number (id / [`PAGE`]) → how many of its slots are held, and
    /// the slots.
    pages: FxHashMap<u64, (u32, Box<Page>)>,
    len: usize,
}

fn split(id: u64) -> (u64, usize) {
    // The remainder is below PAGE, so the cast cannot truncate.
    (id / PAGE, (id % PAGE) as usize)
}

impl ById {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, id: u64) -> Option<&Arc<MemSeries>> {
        let (page, slot) = split(id);
        self.pages.get(&page)?.1.get(slot)?.as_ref()
    }

    pub(super) fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    /// Puts `series` under its id, in place of any series held there.
    pub(super) fn insert(&mut self, series: Arc<MemSeries>) {
        let (page, slot) = split(series.id);
        let (held, slots) = self
            .pages
            .entry(page)
            .or_insert_with(|| (0, Box::new([const { None }; PAGE as usize])));
        if let Some(s) = slots.get_mut(slot) {
            if s.replace(series).is_none() {
                *held += 1;
                self.len += 1;
            }
        }
    }

    /// Takes the series held under `id` out; a page left empty is freed.
    pub(super) fn remove(&mut self, id: u64) -> Option<Arc<MemSeries>> {
        let (page, slot) = split(id);
        let (held, slots) = self.pages.get_mut(&page)?;
        let gone = slots.get_mut(slot)?.take()?;
        *held -= 1;
        self.len -= 1;
        if *held == 0 {
            self.pages.remove(&page);
        }
        Some(gone)
    }

    /// Every series, ascending by id.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<MemSeries>> {
        let mut pages: Vec<(u64, &Page)> =
            self.pages.iter().map(|(&p, (_, s))| (p, &**s)).collect();
        pages.sort_unstable_by_key(|&(p, _)| p);
        pages.into_iter().flat_map(|(_, s)| s.iter().flatten())
    }

    /// Heap bytes held: each page's allocation and its map slot.
    pub(super) fn heap_bytes(&self) -> usize {
        let slot = 8 + std::mem::size_of::<(u32, Box<Page>)>() + 1;
        self.pages.len() * std::mem::size_of::<Page>() + self.pages.capacity() * slot
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::head::{SeriesLabels, NOT_WRITTEN};
    use std::sync::atomic::AtomicUsize;

    fn series(id: u64) -> Arc<MemSeries> {
        let labels = [strata_codec::Label::new("id", id.to_string())];
        Arc::new(MemSeries::new(
            id,
            SeriesLabels::new(&labels[..]),
            false,
            NOT_WRITTEN,
            Arc::new(AtomicUsize::new(0)),
        ))
    }

    #[test]
    fn holds_series_by_id_in_order_and_frees_empty_pages() {
        let mut m = ById::default();
        // Out of order, across pages, with a page of one far away.
        for id in [40, 3, 17, 16, 2, 1_000_000, 31, 0] {
            m.insert(series(id));
        }
        assert_eq!(m.len(), 8);
        let ids: Vec<u64> = m.values().map(|s| s.id).collect();
        assert_eq!(ids, [0, 2, 3, 16, 17, 31, 40, 1_000_000]);
        assert_eq!(m.get(17).map(|s| s.id), Some(17));
        assert!(m.get(18).is_none());
        assert!(!m.contains(1));

        // Replacing keeps the count.
        m.insert(series(17));
        assert_eq!(m.len(), 8);

        let before = m.pages.len();
        assert_eq!(m.remove(1_000_000).map(|s| s.id), Some(1_000_000));
        assert!(m.remove(1_000_000).is_none());
        assert_eq!(m.pages.len(), before - 1, "a page left empty is freed");
        for id in [16, 17] {
            m.remove(id);
        }
        // 31 still holds the page of 16 to 31.
        assert_eq!(m.pages.len(), before - 1);
        m.remove(31);
        assert_eq!(m.pages.len(), before - 2);
        let ids: Vec<u64> = m.values().map(|s| s.id).collect();
        assert_eq!(ids, [0, 2, 3, 40]);
        assert_eq!(m.len(), 4);
    }
}
