//! The histograms and sources the tests read: label sets, a float
//! histogram from its positive buckets, and Prometheus' `single_histogram`
//! and `incr_histogram` series.

use strata_codec::histogram::{FloatHistogram, Span};
use strata_codec::Label;
use strata_promql::MemSource;

/// A minute, in milliseconds.
pub(crate) const MIN: i64 = 60_000;

pub(crate) fn name(n: &str) -> Vec<Label> {
    vec![Label::new("__name__", n)]
}

pub(crate) fn labels(pairs: &[(&str, &str)]) -> Vec<Label> {
    pairs.iter().map(|(n, v)| Label::new(*n, *v)).collect()
}

/// A histogram with positive buckets from index `offset` (absolute counts).
pub(crate) fn hist(
    schema: i32,
    count: f64,
    sum: f64,
    offset: i32,
    buckets: &[f64],
) -> FloatHistogram {
    FloatHistogram {
        schema,
        zero_threshold: 0.001,
        count,
        sum,
        positive_spans: if buckets.is_empty() {
            Vec::new()
        } else {
            vec![Span::new(offset, buckets.len() as u32)]
        },
        positive_buckets: buckets.to_vec(),
        ..FloatHistogram::default()
    }
}

/// `single_histogram`: {{schema:0 sum:5 count:4 buckets:[1 2 1]}} at 0.
pub(crate) fn single() -> MemSource {
    let src = MemSource::new();
    src.append_histogram(
        &name("single_histogram"),
        0,
        hist(0, 4.0, 5.0, 0, &[1.0, 2.0, 1.0]),
    );
    src
}

/// `incr_histogram`: {{schema:0 sum:4 count:4 buckets:[1 2 1]}} +
/// {{sum:2 count:1 buckets:[1] offset:1}} every 5m, ten times.
pub(crate) fn incr() -> MemSource {
    let src = MemSource::new();
    for k in 0..=10 {
        let k_f = f64::from(k);
        src.append_histogram(
            &name("incr_histogram"),
            i64::from(k) * 5 * MIN,
            hist(0, 4.0 + k_f, 4.0 + 2.0 * k_f, 0, &[1.0, 2.0 + k_f, 1.0]),
        );
    }
    src
}
