//! Out-of-order and late samples of one series: samples older than what a
//! bucket's in-order chunk already holds, or in a bucket already sealed.
//!
//! They are kept beside the in-order chunk, sorted by time, one run per
//! bucket (as Prometheus' out-of-order head keeps them beside its chunks),
//! and merged in order wherever they are read. The seal of an open bucket
//! merges them into its chunk; those of a sealed bucket are written by the
//! late pass (`late.rs`) as late segments of that bucket and freed.

/// Who has taken an extra run to write it to the store. A run stays in
/// memory (and is read) until what took it has written it; samples that
/// arrive meanwhile start a new run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    No,
    /// The seal of its bucket: dropped when the bucket is marked sealed.
    Seal,
    /// The late pass: dropped once its segment is written.
    Late,
}

/// Sorted samples of one bucket, no timestamp twice.
pub(crate) struct ExtraRun {
    pub(crate) bucket: i64,
    pub(crate) taken: Taken,
    pub(crate) ts: Vec<i64>,
    pub(crate) vs: Vec<f64>,
}

impl ExtraRun {
    pub(crate) fn new(bucket: i64) -> Self {
        Self {
            bucket,
            taken: Taken::No,
            ts: Vec::new(),
            vs: Vec::new(),
        }
    }

    /// The value held at `t`, if any.
    pub(crate) fn value_at(&self, t: i64) -> Option<f64> {
        let i = self.ts.binary_search(&t).ok()?;
        self.vs.get(i).copied()
    }

    /// Inserts a sample whose timestamp the run does not hold.
    pub(crate) fn insert(&mut self, t: i64, v: f64) {
        if self.ts.last().is_none_or(|&last| last < t) {
            self.ts.push(t);
            self.vs.push(v);
            return;
        }
        let at = self.ts.partition_point(|&x| x < t);
        self.ts.insert(at, t);
        self.vs.insert(at.min(self.vs.len()), v);
    }

    pub(crate) fn len(&self) -> usize {
        self.ts.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ts.capacity() * 8 + self.vs.capacity() * 8
    }
}

/// The samples of `runs` in `[mint, maxt]`, merged in time order.
pub(crate) fn merged<'a>(
    runs: impl Iterator<Item = &'a ExtraRun>,
    mint: i64,
    maxt: i64,
) -> (Vec<i64>, Vec<f64>) {
    let mut pairs: Vec<(i64, f64)> = Vec::new();
    for r in runs {
        let from = r.ts.partition_point(|&t| t < mint);
        let to = r.ts.partition_point(|&t| t <= maxt);
        if let (Some(ts), Some(vs)) = (r.ts.get(from..to), r.vs.get(from..to)) {
            pairs.extend(ts.iter().copied().zip(vs.iter().copied()));
        }
    }
    // Runs of one series never hold a timestamp twice (inserts look at
    // every run of the bucket first), so a stable sort is the merge.
    pairs.sort_by_key(|&(t, _)| t);
    pairs.into_iter().unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_keep_order() {
        let mut r = ExtraRun::new(0);
        for t in [5, 1, 9, 3, 10] {
            r.insert(t, t as f64);
        }
        assert_eq!(r.ts, vec![1, 3, 5, 9, 10]);
        assert_eq!(r.vs, vec![1.0, 3.0, 5.0, 9.0, 10.0]);
        assert_eq!(r.value_at(9), Some(9.0));
        assert_eq!(r.value_at(4), None);
        let mut other = ExtraRun::new(0);
        other.insert(4, 4.0);
        let (ts, vs) = merged([&r, &other].into_iter(), 3, 9);
        assert_eq!(ts, vec![3, 4, 5, 9]);
        assert_eq!(vs, vec![3.0, 4.0, 5.0, 9.0]);
    }
}

/// A series' extra runs, and its native histograms (`hist.rs`): one
/// pointer, unallocated as nearly every series has neither (a `Vec` in
/// every series cost 8 bytes more, which moved a head series into the
/// allocator's next size class).
#[derive(Default)]
pub(crate) struct Extras(Option<Box<Beside>>);

/// What [`Extras`] points to when a series has any of it.
#[derive(Default)]
pub(crate) struct Beside {
    runs: Vec<ExtraRun>,
    hists: Vec<super::hist_bucket::HistBucket>,
}

impl Extras {
    fn beside(&mut self) -> &mut Beside {
        self.0.get_or_insert_with(Box::default)
    }

    /// Lets the allocation go once it holds nothing.
    fn tidy(&mut self) {
        if self
            .0
            .as_ref()
            .is_some_and(|b| b.runs.is_empty() && b.hists.is_empty())
        {
            self.0 = None;
        }
    }

    pub(crate) fn push(&mut self, run: ExtraRun) {
        let runs = &mut self.beside().runs;
        runs.reserve_exact(1);
        runs.push(run);
    }

    /// Keeps the runs `keep` accepts.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&ExtraRun) -> bool) {
        if let Some(b) = &mut self.0 {
            b.runs.retain(keep);
            super::alloc::fit(&mut b.runs);
        }
        self.tidy();
    }

    /// The series' native histograms by bucket, oldest first.
    pub(crate) fn hists(&self) -> &[super::hist_bucket::HistBucket] {
        self.0.as_ref().map_or(&[], |b| &b.hists)
    }

    /// Changes the series' native histograms through `f`.
    pub(crate) fn with_hists<R>(
        &mut self,
        f: impl FnOnce(&mut Vec<super::hist_bucket::HistBucket>) -> R,
    ) -> R {
        let r = f(&mut self.beside().hists);
        self.tidy();
        r
    }

    /// Heap bytes held, the runs' samples and the histograms included.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |b| {
            std::mem::size_of::<Beside>()
                + b.runs.capacity() * std::mem::size_of::<ExtraRun>()
                + b.runs.iter().map(ExtraRun::heap_bytes).sum::<usize>()
                + b.hists
                    .iter()
                    .map(super::hist_bucket::HistBucket::heap_bytes)
                    .sum::<usize>()
        })
    }
}

impl std::ops::Deref for Extras {
    type Target = [ExtraRun];
    fn deref(&self) -> &[ExtraRun] {
        self.0.as_ref().map_or(&[], |b| &b.runs)
    }
}

impl std::ops::DerefMut for Extras {
    fn deref_mut(&mut self) -> &mut [ExtraRun] {
        match &mut self.0 {
            Some(b) => &mut b.runs,
            None => &mut [],
        }
    }
}
