//! The head's exemplars: one ring for every series, oldest out first, as
//! Prometheus' circular exemplar storage keeps them.
//!
//! Bounded by `storage.max_exemplars` in all (Prometheus' setting of the
//! same name), whatever the number of series: exemplars are sparse (a
//! trace id on some samples of some series), and a bound per series would
//! cost every series a buffer. Each series' entries are indexed, so that a
//! sender's retry (an exemplar held already) is a no-op, and an exemplar
//! older than the series' newest by more than the out-of-order window is
//! refused, as Prometheus does.
//!
//! The ring is the head's part: the seal writes the exemplars of its
//! bucket to `E` keys, which keep them for the retention whatever the ring
//! has dropped since; a read merges both.

use std::collections::VecDeque;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use strata_codec::Exemplar;

pub use crate::settings::DEFAULT_MAX_EXEMPLARS;

/// What became of one exemplar offered to the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExemplarAdded {
    Stored,
    /// Held already (a sender's retry): nothing to do, and written as far
    /// as the sender is concerned (Prometheus counts it so).
    Duplicate,
    /// Older than the series' newest by more than the out-of-order window.
    OutOfOrder,
    /// The ring holds none (`max_exemplars` is 0).
    Disabled,
}

#[derive(Default)]
struct Ring {
    /// Oldest first; entry `i` has sequence number `first_seq + i`.
    entries: VecDeque<(u64, Exemplar)>,
    first_seq: u64,
    /// Each series' entries, by sequence number, oldest first, and the
    /// newest timestamp among them.
    by_series: FxHashMap<u64, (VecDeque<u64>, i64)>,
    capacity: usize,
}

pub struct ExemplarStore {
    ring: Mutex<Ring>,
}

impl Default for ExemplarStore {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EXEMPLARS)
    }
}

impl ExemplarStore {
    pub fn new(capacity: usize) -> Self {
        Self {
            ring: Mutex::new(Ring {
                capacity,
                ..Ring::default()
            }),
        }
    }

    /// Sets the bound, dropping the oldest exemplars over it.
    pub fn set_capacity(&self, capacity: usize) {
        let mut ring = self.ring.lock();
        ring.capacity = capacity;
        while ring.entries.len() > capacity {
            ring.pop_oldest();
        }
    }

    /// Offers series `series`' exemplar `e`; `window_ms` is how far before
    /// the series' newest one it may be.
    pub fn add(&self, series: u64, e: &Exemplar, window_ms: i64) -> ExemplarAdded {
        let mut ring = self.ring.lock();
        if ring.capacity == 0 {
            return ExemplarAdded::Disabled;
        }
        if let Some((seqs, newest_t)) = ring.by_series.get(&series) {
            let held = seqs
                .iter()
                .filter_map(|&seq| ring.entry(seq))
                .any(|held| held.same_as(e));
            if held {
                return ExemplarAdded::Duplicate;
            }
            if e.t < *newest_t && e.t <= newest_t.saturating_sub(window_ms) {
                return ExemplarAdded::OutOfOrder;
            }
        }
        if ring.entries.len() >= ring.capacity {
            ring.pop_oldest();
        }
        let seq = ring.first_seq + ring.entries.len() as u64;
        ring.entries.push_back((series, e.clone()));
        let (seqs, newest_t) = ring
            .by_series
            .entry(series)
            .or_insert_with(|| (VecDeque::new(), i64::MIN));
        seqs.push_back(seq);
        *newest_t = (*newest_t).max(e.t);
        ExemplarAdded::Stored
    }

    /// The exemplars in [start, end] of the series `wanted` accepts, by
    /// series, each list in time order.
    pub fn select(
        &self,
        start: i64,
        end: i64,
        wanted: impl Fn(u64) -> bool,
    ) -> FxHashMap<u64, Vec<Exemplar>> {
        let mut out: FxHashMap<u64, Vec<Exemplar>> = FxHashMap::default();
        {
            let ring = self.ring.lock();
            for (series, e) in &ring.entries {
                if e.t >= start && e.t <= end && wanted(*series) {
                    out.entry(*series).or_default().push(e.clone());
                }
            }
        }
        for list in out.values_mut() {
            list.sort_by_key(|e| e.t);
        }
        out
    }

    /// Exemplars held now.
    pub fn len(&self) -> usize {
        self.ring.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Estimated bytes held, for `/metrics`.
    pub fn heap_bytes(&self) -> usize {
        let ring = self.ring.lock();
        let labels: usize = ring
            .entries
            .iter()
            .flat_map(|(_, e)| &e.labels)
            .map(|l| l.name.capacity() + l.value.capacity() + 48)
            .sum();
        ring.entries.capacity() * std::mem::size_of::<(u64, Exemplar)>()
            + labels
            + ring.by_series.capacity() * 57
    }
}

impl Ring {
    fn entry(&self, seq: u64) -> Option<&Exemplar> {
        let at = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        self.entries.get(at).map(|(_, e)| e)
    }

    fn pop_oldest(&mut self) {
        let Some((series, _)) = self.entries.pop_front() else {
            return;
        };
        // The oldest entry of all is its series' oldest.
        if let Some((seqs, _)) = self.by_series.get_mut(&series) {
            seqs.pop_front();
            if seqs.is_empty() {
                self.by_series.remove(&series);
            }
        }
        self.first_seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_codec::Label;

    fn ex(t: i64, v: f64, trace: &str) -> Exemplar {
        Exemplar {
            labels: vec![Label::new("trace_id", trace)],
            t,
            v,
        }
    }

    #[test]
    fn keeps_the_newest_up_to_its_bound() {
        let store = ExemplarStore::new(3);
        for t in 0..5 {
            assert_eq!(
                store.add(t as u64 % 2, &ex(t, 1.0, "a"), 0),
                ExemplarAdded::Stored
            );
        }
        assert_eq!(store.len(), 3);
        let all = store.select(i64::MIN, i64::MAX, |_| true);
        let ts = |s: u64| all[&s].iter().map(|e| e.t).collect::<Vec<_>>();
        assert_eq!(ts(0), vec![2, 4]);
        assert_eq!(ts(1), vec![3]);
        let only_1 = store.select(0, 10, |s| s == 1);
        assert_eq!(only_1.len(), 1);
        assert!(store.select(5, 10, |_| true).is_empty());
    }

    #[test]
    fn a_retry_is_a_no_op_and_old_exemplars_are_refused() {
        let store = ExemplarStore::new(10);
        assert_eq!(store.add(1, &ex(100, 1.0, "a"), 0), ExemplarAdded::Stored);
        assert_eq!(
            store.add(1, &ex(100, 1.0, "a"), 0),
            ExemplarAdded::Duplicate
        );
        assert_eq!(store.add(1, &ex(100, 2.0, "b"), 0), ExemplarAdded::Stored);
        assert_eq!(
            store.add(1, &ex(99, 1.0, "c"), 0),
            ExemplarAdded::OutOfOrder
        );
        // Within a window it is kept, and the newest stays the newest.
        assert_eq!(store.add(1, &ex(99, 1.0, "c"), 5), ExemplarAdded::Stored);
        assert_eq!(
            store.add(1, &ex(100, 2.0, "b"), 5),
            ExemplarAdded::Duplicate
        );
        // Other series are not compared with it.
        assert_eq!(store.add(2, &ex(1, 1.0, "a"), 0), ExemplarAdded::Stored);
        let got = store.select(0, 200, |s| s == 1);
        let ts: Vec<i64> = got[&1].iter().map(|e| e.t).collect();
        assert_eq!(ts, vec![99, 100, 100]);
    }

    #[test]
    fn a_series_whose_newest_was_dropped_takes_any_exemplar() {
        let store = ExemplarStore::new(1);
        assert_eq!(store.add(1, &ex(100, 1.0, "a"), 0), ExemplarAdded::Stored);
        assert_eq!(store.add(2, &ex(100, 1.0, "a"), 0), ExemplarAdded::Stored);
        assert_eq!(store.add(1, &ex(50, 1.0, "a"), 0), ExemplarAdded::Stored);
        assert_eq!(
            ExemplarStore::new(0).add(1, &ex(1, 1.0, "a"), 0),
            ExemplarAdded::Disabled
        );
        store.set_capacity(0);
        assert!(store.is_empty());
    }
}
