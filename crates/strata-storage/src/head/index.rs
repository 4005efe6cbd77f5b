//! The series index: series by label hash (collisions kept beside), by
//! id, and the in-memory postings.

use std::hash::{Hash, Hasher};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use strata_codec::LabelPairs;

use super::by_id;
use super::ids::IdList;
use super::series::MemSeries;

/// Hashes a label set; equal sets hash equal, collisions are resolved by
/// comparing the labels.
pub fn labels_hash(labels: &(impl LabelPairs + ?Sized)) -> u64 {
    let mut h = FxHasher::default();
    for (name, value) in labels.pairs() {
        name.hash(&mut h);
        value.hash(&mut h);
    }
    h.finish()
}

#[derive(Default)]
pub(super) struct SeriesIndex {
    /// The first series with each label hash: one probe and one label
    /// comparison per lookup.
    pub(super) by_hash: FxHashMap<u64, Arc<MemSeries>>,
    /// Further series whose labels hash like an earlier one's.
    pub(super) collisions: FxHashMap<u64, Vec<Arc<MemSeries>>>,
    pub(super) by_id: by_id::ById,
    /// name -> value -> ids, each id list ascending.
    pub(super) postings: FxHashMap<Box<str>, FxHashMap<Box<str>, IdList>>,
    /// tenant -> its active series.
    pub(super) active: FxHashMap<Box<str>, Arc<AtomicUsize>>,
}

impl SeriesIndex {
    pub(super) fn active_counter(&mut self, tenant: &str) -> Arc<AtomicUsize> {
        if let Some(c) = self.active.get(tenant) {
            return Arc::clone(c);
        }
        let c = Arc::new(AtomicUsize::new(0));
        self.active.insert(tenant.into(), Arc::clone(&c));
        c
    }

    pub(super) fn insert(&mut self, hash: u64, series: Arc<MemSeries>) {
        for (name, value) in series.labels.pairs() {
            // Look up before inserting: `entry` would allocate both keys for
            // every label of every new series, nearly all already there.
            if !self.postings.contains_key(name) {
                self.postings.insert(name.into(), FxHashMap::default());
            }
            let Some(values) = self.postings.get_mut(name) else {
                continue;
            };
            if !values.contains_key(value) {
                values.insert(value.into(), IdList::default());
            }
            if let Some(ids) = values.get_mut(value) {
                ids.push(series.id);
            }
        }
        self.by_id.insert(Arc::clone(&series));
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(series);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collisions.entry(hash).or_default().push(series);
            }
        }
    }

    /// Takes `gone` out of the maps and postings. Each postings list that
    /// names one of them is walked once, however many of its series go.
    pub(super) fn remove(&mut self, gone: &[Arc<MemSeries>]) {
        let ids: FxHashSet<u64> = gone.iter().map(|s| s.id).collect();
        let mut lists: FxHashSet<(&str, &str)> = FxHashSet::default();
        for s in gone {
            self.by_id.remove(s.id);
            let hash = labels_hash(&s.labels);
            let first = self.by_hash.get(&hash).is_some_and(|f| Arc::ptr_eq(f, s));
            if let Some(others) = self.collisions.get_mut(&hash) {
                others.retain(|o| !Arc::ptr_eq(o, s));
                if first {
                    if let Some(next) = others.pop() {
                        self.by_hash.insert(hash, next);
                    }
                }
                if others.is_empty() {
                    self.collisions.remove(&hash);
                }
            }
            if first && self.by_hash.get(&hash).is_some_and(|f| Arc::ptr_eq(f, s)) {
                self.by_hash.remove(&hash);
            }
            lists.extend(s.labels.pairs());
        }
        for (name, value) in lists {
            let Some(values) = self.postings.get_mut(name) else {
                continue;
            };
            if let Some(list) = values.get_mut(value) {
                list.retain(|id| !ids.contains(&id));
                if list.is_empty() {
                    values.remove(value);
                }
            }
            if values.is_empty() {
                self.postings.remove(name);
            }
        }
    }
}

/// Asks for the cache line at `p`: a hint, which never faults.
#[inline]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        #[allow(unsafe_code)]
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault, whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub(super) fn find(
    idx: &SeriesIndex,
    hash: u64,
    labels: &(impl LabelPairs + ?Sized),
) -> Option<Arc<MemSeries>> {
    let first = idx.by_hash.get(&hash)?;
    if first.labels.eq_pairs(labels) {
        return Some(Arc::clone(first));
    }
    idx.collisions
        .get(&hash)?
        .iter()
        .find(|s| s.labels.eq_pairs(labels))
        .cloned()
}
