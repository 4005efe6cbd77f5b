//! Comparisons of floats and buckets, equal up to a relative 1e-12.

use strata_codec::histogram::Span;

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()) || (a.is_nan() && b.is_nan())
}

pub(crate) fn assert_close(got: f64, want: f64, what: &str) {
    assert!(close(got, want), "{what}: got {got}, want {want}");
}

/// The populated buckets of one side as (index, count).
pub(crate) fn populated(spans: &[Span], buckets: &[f64]) -> Vec<(i32, f64)> {
    strata_promql::float_histogram::sparse(spans, buckets)
        .into_iter()
        .filter(|(_, c)| *c != 0.0)
        .collect()
}

pub(crate) fn assert_buckets(got: &[(i32, f64)], want: &[(i32, f64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for ((gi, gc), (wi, wc)) in got.iter().zip(want) {
        assert_eq!(gi, wi, "{what}: {got:?} vs {want:?}");
        assert_close(*gc, *wc, what);
    }
}
