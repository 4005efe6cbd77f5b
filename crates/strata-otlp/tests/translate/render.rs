//! The translated series rendered as sorted strings, for comparison.

use strata_codec::LabelPairs;

/// Every series as `name{labels} -> samples`, sorted, for comparison.
pub(crate) fn rendered(t: &strata_otlp::Translated) -> Vec<String> {
    let mut out: Vec<String> = t
        .write
        .series
        .iter()
        .map(|s| {
            let labels: Vec<String> = s.labels.pairs().map(|(n, v)| format!("{n}={v}")).collect();
            format!("{} {:?}", labels.join(","), s.samples)
        })
        .collect();
    out.sort();
    out
}
