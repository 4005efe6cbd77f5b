//! Comparing a histogram with the one before it: counter reset detection
//! and bitwise equality.

use strata_codec::histogram::{CounterResetHint, FloatHistogram};

use super::add::zero_count_for_larger_threshold;
use super::bounds::{bits_match, intersect_bounds, map_custom};
use super::exponential_bound;
use super::layout::{reduce_pairs, sparse};

/// Whether `h` follows a counter reset after `previous`, as Prometheus'
/// `DetectReset`.
pub fn detect_reset(h: &FloatHistogram, previous: &FloatHistogram) -> bool {
    match h.counter_reset_hint {
        CounterResetHint::Reset => return true,
        CounterResetHint::NotReset => return false,
        _ => {}
    }
    if h.count < previous.count {
        return true;
    }
    if h.uses_custom_buckets() {
        if !previous.uses_custom_buckets() {
            return true;
        }
        if !bits_match(&h.custom_values, &previous.custom_values) {
            let bounds = intersect_bounds(&h.custom_values, &previous.custom_values);
            let cur = map_custom(
                &sparse(&h.positive_spans, &h.positive_buckets),
                &h.custom_values,
                &bounds,
            );
            let prev = map_custom(
                &sparse(&previous.positive_spans, &previous.positive_buckets),
                &previous.custom_values,
                &bounds,
            );
            return pairs_reset(&cur, &prev);
        }
    } else if previous.uses_custom_buckets() {
        return true;
    }
    if h.schema > previous.schema {
        return true;
    }
    if h.zero_threshold < previous.zero_threshold {
        return true;
    }
    if h.uses_custom_buckets() {
        return pairs_reset(
            &sparse(&h.positive_spans, &h.positive_buckets),
            &sparse(&previous.positive_spans, &previous.positive_buckets),
        );
    }
    let (prev_zero, t) = zero_count_for_larger_threshold(previous, h.zero_threshold);
    if t != h.zero_threshold {
        return true;
    }
    if h.zero_count < prev_zero {
        return true;
    }
    let above = |pairs: Vec<(i32, f64)>, schema: i32| -> Vec<(i32, f64)> {
        pairs
            .into_iter()
            .filter(|&(idx, _)| exponential_bound(idx, schema) > h.zero_threshold)
            .collect()
    };
    for (cur, prev) in [
        (
            (&h.positive_spans, &h.positive_buckets),
            (&previous.positive_spans, &previous.positive_buckets),
        ),
        (
            (&h.negative_spans, &h.negative_buckets),
            (&previous.negative_spans, &previous.negative_buckets),
        ),
    ] {
        let cur = above(sparse(cur.0, cur.1), h.schema);
        let prev = above(
            reduce_pairs(&sparse(prev.0, prev.1), previous.schema, h.schema),
            h.schema,
        );
        if pairs_reset(&cur, &prev) {
            return true;
        }
    }
    false
}

/// Whether a bucket of `prev` is populated and missing from, or larger
/// than in, `cur`.
fn pairs_reset(cur: &[(i32, f64)], prev: &[(i32, f64)]) -> bool {
    let mut j = 0;
    for &(idx, pc) in prev {
        while cur.get(j).is_some_and(|&(ci, _)| ci < idx) {
            j += 1;
        }
        match cur.get(j) {
            Some(&(ci, cc)) if ci == idx => {
                if cc < pc {
                    return true;
                }
            }
            _ => {
                if pc != 0.0 {
                    return true;
                }
            }
        }
    }
    false
}

/// Prometheus' `Equals`: the same layout and counts, floats compared bit
/// for bit.
pub fn equals(a: &FloatHistogram, b: &FloatHistogram) -> bool {
    if a.schema != b.schema
        || a.count.to_bits() != b.count.to_bits()
        || a.sum.to_bits() != b.sum.to_bits()
    {
        return false;
    }
    if a.uses_custom_buckets() {
        if !bits_match(&a.custom_values, &b.custom_values) {
            return false;
        }
    } else if a.zero_threshold != b.zero_threshold
        || a.zero_count.to_bits() != b.zero_count.to_bits()
    {
        return false;
    }
    let same = |x: Vec<(i32, f64)>, y: Vec<(i32, f64)>| {
        x.len() == y.len()
            && x.iter()
                .zip(&y)
                .all(|(p, q)| p.0 == q.0 && p.1.to_bits() == q.1.to_bits())
    };
    same(
        sparse(&a.positive_spans, &a.positive_buckets),
        sparse(&b.positive_spans, &b.positive_buckets),
    ) && same(
        sparse(&a.negative_spans, &a.negative_buckets),
        sparse(&b.negative_spans, &b.negative_buckets),
    )
}

#[cfg(test)]
mod tests {
    use strata_codec::histogram::Span;

    use super::super::h;
    use super::*;

    #[test]
    fn counter_resets_are_detected() {
        let prev = h(0, 10.0, 10.0, 0, &[5.0, 5.0]);
        // Count went down.
        assert!(detect_reset(&h(0, 9.0, 10.0, 0, &[5.0, 4.0]), &prev));
        // A bucket went down, the count up.
        assert!(detect_reset(&h(0, 12.0, 10.0, 0, &[6.0, 4.0]), &prev));
        assert!(!detect_reset(&h(0, 12.0, 10.0, 0, &[6.0, 6.0]), &prev));
        // A populated bucket disappeared.
        assert!(detect_reset(&h(0, 12.0, 10.0, 0, &[12.0]), &prev));
        // The hint decides when it says so.
        let mut hinted = h(0, 9.0, 10.0, 0, &[5.0, 4.0]);
        hinted.counter_reset_hint = CounterResetHint::NotReset;
        assert!(!detect_reset(&hinted, &prev));
        hinted.counter_reset_hint = CounterResetHint::Reset;
        assert!(detect_reset(&hinted.clone(), &hinted));
        // A finer schema than before is a reset; a coarser one is compared
        // after merging the previous buckets.
        assert!(detect_reset(&h(1, 12.0, 10.0, 0, &[6.0, 6.0]), &prev));
        let fine = h(1, 2.0, 1.0, 1, &[1.0, 1.0]);
        assert!(!detect_reset(&h(0, 2.0, 1.0, 1, &[2.0]), &fine));
        assert!(detect_reset(&h(0, 2.0, 1.0, 1, &[1.5]), &fine));
        // A narrower zero bucket is a reset.
        let mut narrow = prev.clone();
        narrow.zero_threshold = 0.0001;
        assert!(detect_reset(&narrow, &prev));
    }

    #[test]
    fn equality_is_bitwise_on_the_layout() {
        let a = h(0, 1.0, 1.0, 0, &[1.0]);
        assert!(equals(&a, &a.clone()));
        let mut split = a.clone();
        split.positive_spans = vec![Span::new(0, 1), Span::new(0, 0)];
        assert!(equals(&a, &split));
        assert!(!equals(&a, &h(0, 1.0, 1.0, 1, &[1.0])));
        assert!(!equals(&a, &h(0, 1.0, 1.0, 0, &[1.0, 0.0])));
    }
}
