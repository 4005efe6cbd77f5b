//! What a seal does to the head: the sealed watermark and the one of the
//! seal under way, the chunks a seal has written released, and the series
//! left with nothing in the head dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::delta::Head;
use super::index::labels_hash;
use super::released::Released;
use super::series::MemSeries;
use super::NONE_SEALED;

impl Head {
    pub fn sealed_through(&self) -> Option<i64> {
        match self.sealed_through.load(Ordering::Acquire) {
            NONE_SEALED => None,
            b => Some(b),
        }
    }

    /// The newest bucket whose seal has begun.
    pub(crate) fn sealing_through(&self) -> i64 {
        self.sealing_through.load(Ordering::Acquire)
    }

    /// Notes that the seal of `bucket` has begun: the spill pass leaves its
    /// chunks alone from now on.
    pub(crate) fn begin_seal(&self, bucket: i64) {
        self.sealing_through.fetch_max(bucket, Ordering::AcqRel);
    }

    /// Marks `bucket` (and every older one) sealed, then frees their
    /// chunks, and drops the series left with nothing else in the head.
    /// Readers that saw the old value re-read those buckets from the store.
    /// Returns how many series were dropped.
    pub fn mark_sealed(&self, bucket: i64) -> usize {
        self.sealed_through.fetch_max(bucket, Ordering::AcqRel);
        self.begin_seal(bucket);
        // After `sealed_through`: a read that no longer finds a released
        // series reads the bucket from the store as a sealed one.
        self.released.write().retain(|r| r.bucket > bucket);
        let mut freed = 0;
        let mut idle = Vec::new();
        for s in self.all_series() {
            freed += s.drop_through(bucket);
            if s.is_idle() {
                idle.push(s);
            }
        }
        self.extra_freed(freed);
        self.drop_idle(idle)
    }

    /// The seal of `bucket` has written the chunks of `series` (durably):
    /// drops them from the head, noting each series as released (see
    /// `released.rs`).
    pub(crate) fn release_sealed(&self, bucket: i64, series: &[Arc<MemSeries>]) {
        if series.is_empty() {
            return;
        }
        let set = {
            let mut sets = self.released.write();
            match sets.iter().find(|r| r.bucket == bucket) {
                Some(r) => Arc::clone(r),
                None => {
                    let r = Arc::new(Released::new(bucket, self.next_series_id()));
                    sets.push(Arc::clone(&r));
                    r
                }
            }
        };
        let mut freed = 0;
        for s in series {
            // A series beyond the set's size (none: the seal walks the
            // series there were when it began) keeps its chunk until the
            // checkpoint.
            if set.insert(s.id) {
                freed += s.release(bucket);
            }
        }
        self.extra_freed(freed);
    }

    /// The series of `bucket` whose chunks a seal has written and released,
    /// if any were.
    pub(crate) fn released_set(&self, bucket: i64) -> Option<Arc<Released>> {
        self.released
            .read()
            .iter()
            .find(|r| r.bucket == bucket)
            .cloned()
    }

    /// Drops every series with nothing but its labels in the head (after
    /// recovery, a series whose replayed samples were all spilled or
    /// sealed); returns how many.
    pub(crate) fn drop_all_idle(&self) -> usize {
        let idle = self
            .all_series()
            .into_iter()
            .filter(|s| s.is_idle())
            .collect();
        self.drop_idle(idle)
    }

    /// Takes the series of `idle` that are still idle out of the index,
    /// marks them dropped and keeps their labels in the recent cache.
    fn drop_idle(&self, idle: Vec<Arc<MemSeries>>) -> usize {
        if idle.is_empty() {
            return 0;
        }
        let mut gone = Vec::with_capacity(idle.len());
        {
            let mut idx = self.index.write();
            for s in idle {
                let st = s.state.lock();
                let held = idx.by_id.get(s.id).is_some_and(|h| Arc::ptr_eq(h, &s));
                // A sample may have come in since the caller looked.
                if !held
                    || s.dropped.load(Ordering::Relaxed)
                    || !st.chunks.is_empty()
                    || !st.extras.is_empty()
                    || !st.extras.hists().is_empty()
                {
                    continue;
                }
                s.dropped.store(true, Ordering::Relaxed);
                drop(st);
                gone.push(s);
            }
            idx.remove(&gone);
        }
        for s in &gone {
            self.recent
                .insert(s.id, labels_hash(&s.labels), s.labels.clone());
        }
        self.dropped.fetch_add(gone.len() as u64, Ordering::Relaxed);
        gone.len()
    }
}
