//! A recording rule's output.

use rustc_hash::FxHashSet;
use strata_codec::Label;

use super::sorted;
use crate::alerting::LabelSet;

/// A recording rule's output: each sample renamed and relabelled.
pub(super) fn record_samples(
    record: &str,
    labels: &LabelSet,
    vector: Vec<(Vec<Label>, f64)>,
    limit: usize,
) -> Result<Vec<(Vec<Label>, f64)>, String> {
    let mut out = Vec::with_capacity(vector.len());
    let mut seen = FxHashSet::default();
    for (sample_labels, v) in vector {
        let mut l: LabelSet = sample_labels
            .into_iter()
            .map(|l| (l.name, l.value))
            .collect();
        l.insert("__name__".into(), record.to_owned());
        for (n, v) in labels {
            l.insert(n.clone(), v.clone());
        }
        let l = sorted(l);
        if !seen.insert(l.clone()) {
            return Err(
                "vector contains metrics with the same labelset after applying rule labels".into(),
            );
        }
        out.push((l, v));
    }
    if limit > 0 && out.len() > limit {
        return Err(format!(
            "exceeded limit of {limit} with {} series",
            out.len()
        ));
    }
    Ok(out)
}
