//! Deleted data (`delete_series`): series matchers and a time range whose
//! samples every read leaves out, as plain data (`tombstones.rs` stores
//! and loads them).

use std::sync::Arc;

use parking_lot::RwLock;
use strata_codec::{Label, Matcher, Series};

/// One deletion: the samples in `[mint, maxt]` (ms, inclusive) of every
/// series all `matchers` match.
#[derive(Clone, Debug)]
pub struct Tombstone {
    pub matchers: Vec<Matcher>,
    pub mint: i64,
    pub maxt: i64,
}

impl Tombstone {
    /// Whether the deletion is of the series labelled `labels`.
    pub fn names(&self, labels: &[Label]) -> bool {
        self.matchers.iter().all(|m| m.matches_labels(labels))
    }
}

/// The deletions a database knows, shared with every read.
#[derive(Default)]
pub(crate) struct Tombstones {
    list: RwLock<Arc<[Tombstone]>>,
}

impl Tombstones {
    pub(crate) fn get(&self) -> Arc<[Tombstone]> {
        Arc::clone(&self.list.read())
    }

    pub(crate) fn set(&self, list: Vec<Tombstone>) {
        *self.list.write() = list.into();
    }

    /// Adds `t` to the list, under the lock: two deletions at once both
    /// stay.
    pub(crate) fn push(&self, t: Tombstone) {
        let mut list = self.list.write();
        let mut grown = list.to_vec();
        grown.push(t);
        *list = grown.into();
    }
}

/// `series` without the samples `list` deletes; `None` when none is left.
pub(crate) fn apply(list: &[Tombstone], mut series: Series) -> Option<Series> {
    let mut hit = list.iter().filter(|t| t.names(&series.labels)).peekable();
    if hit.peek().is_none() {
        return Some(series);
    }
    let ranges: Vec<(i64, i64)> = hit.map(|t| (t.mint, t.maxt)).collect();
    let deleted = |t: i64| ranges.iter().any(|&(a, b)| a <= t && t <= b);
    if series.timestamps.iter().any(|&t| deleted(t)) {
        let (ts, vs): (Vec<i64>, Vec<f64>) = series
            .timestamps
            .iter()
            .zip(&series.values)
            .filter(|(t, _)| !deleted(**t))
            .unzip();
        series.timestamps = ts;
        series.values = vs;
    }
    series.histograms.retain(|(t, _)| !deleted(*t));
    (!series.timestamps.is_empty() || !series.histograms.is_empty()).then_some(series)
}
