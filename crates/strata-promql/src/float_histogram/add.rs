//! Adding, subtracting and scaling histograms, reconciling counter reset
//! hints, schemas, zero buckets and custom bounds.

use strata_codec::histogram::{CounterResetHint, FloatHistogram};

use super::bounds::{abs_bounds, bits_match, intersect_bounds, map_custom};
use super::layout::{layout, reduce_pairs, sparse};
use super::{exponential_bound, Combined, IncompatibleSchema};

/// Multiplies every count and the sum by `f` (Prometheus' `Mul`).
pub fn mul(h: &mut FloatHistogram, f: f64) {
    h.zero_count *= f;
    h.count *= f;
    h.sum *= f;
    h.positive_buckets.iter_mut().for_each(|c| *c *= f);
    h.negative_buckets.iter_mut().for_each(|c| *c *= f);
    if f < 0.0 {
        h.counter_reset_hint = CounterResetHint::Gauge;
    }
}

/// Divides every count and the sum by `f` (Prometheus' `Div`): dividing
/// by zero drops the buckets.
pub fn div(h: &mut FloatHistogram, f: f64) {
    h.zero_count /= f;
    h.count /= f;
    h.sum /= f;
    if f == 0.0 {
        h.positive_buckets.clear();
        h.negative_buckets.clear();
        h.positive_spans.clear();
        h.negative_spans.clear();
        return;
    }
    h.positive_buckets.iter_mut().for_each(|c| *c /= f);
    h.negative_buckets.iter_mut().for_each(|c| *c /= f);
    if f < 0.0 {
        h.counter_reset_hint = CounterResetHint::Gauge;
    }
}

/// The counter reset hints of a sum or difference (Prometheus'
/// `adjustCounterReset`); true on a collision.
pub(super) fn adjust_counter_reset(h: &mut FloatHistogram, other: &FloatHistogram) -> bool {
    use CounterResetHint::*;
    match (h.counter_reset_hint, other.counter_reset_hint) {
        (a, b) if a == b => false,
        (Gauge, _) => false,
        (_, Gauge) => {
            h.counter_reset_hint = Gauge;
            false
        }
        (Unknown, _) => false,
        (_, Unknown) => {
            h.counter_reset_hint = Unknown;
            false
        }
        _ => {
            h.counter_reset_hint = Unknown;
            true
        }
    }
}

/// `h`'s zero count for a zero threshold of at least `larger`, and the
/// threshold it ends up with (larger still when `larger` falls inside a
/// populated bucket), as `zeroCountForLargerThreshold`.
pub(super) fn zero_count_for_larger_threshold(h: &FloatHistogram, mut larger: f64) -> (f64, f64) {
    if larger == h.zero_threshold {
        return (h.zero_count, larger);
    }
    let pos = sparse(&h.positive_spans, &h.positive_buckets);
    let neg = sparse(&h.negative_spans, &h.negative_buckets);
    'outer: loop {
        let mut zc = h.zero_count;
        for &(idx, c) in &pos {
            let (lo, hi) = abs_bounds(idx, h.schema);
            if lo >= larger {
                break;
            }
            zc += c;
            if hi > larger {
                if c != 0.0 {
                    larger = hi;
                }
                break;
            }
        }
        for &(idx, c) in &neg {
            let (lo, hi) = abs_bounds(idx, h.schema);
            if lo >= larger {
                break;
            }
            zc += c;
            if hi > larger {
                if c != 0.0 {
                    larger = hi;
                    continue 'outer;
                }
                break;
            }
        }
        return (zc, larger);
    }
}

/// Drops the buckets that lie within the zero bucket.
fn trim_buckets_in_zero_bucket(h: &mut FloatHistogram) {
    let (schema, zt) = (h.schema, h.zero_threshold);
    for (spans, buckets) in [
        (&mut h.positive_spans, &mut h.positive_buckets),
        (&mut h.negative_spans, &mut h.negative_buckets),
    ] {
        let pairs: Vec<(i32, f64)> = sparse(spans, buckets)
            .into_iter()
            .filter(|&(idx, _)| exponential_bound(idx, schema) > zt)
            .collect();
        (*spans, *buckets) = layout(&pairs);
    }
}

/// Widens `h`'s zero bucket to `other`'s when that is wider (or wider
/// still, to a bucket boundary); returns `other`'s zero count at the
/// resulting threshold.
fn reconcile_zero_buckets(h: &mut FloatHistogram, other: &FloatHistogram) -> f64 {
    let mut other_zero = other.zero_count;
    let mut other_threshold = other.zero_threshold;
    while other_threshold != h.zero_threshold {
        if h.zero_threshold > other_threshold {
            (other_zero, other_threshold) =
                zero_count_for_larger_threshold(other, h.zero_threshold);
        }
        if other_threshold > h.zero_threshold {
            (h.zero_count, h.zero_threshold) = zero_count_for_larger_threshold(h, other_threshold);
            trim_buckets_in_zero_bucket(h);
        }
    }
    other_zero
}

/// `a + sign * b` bucket by bucket, leaving out `b`'s buckets that lie
/// within the zero threshold (exponential schemas only).
fn add_pairs(
    a: &[(i32, f64)],
    b: &[(i32, f64)],
    negate: bool,
    skip_upto: Option<(i32, f64)>,
) -> Vec<(i32, f64)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    let b: Vec<(i32, f64)> = b
        .iter()
        .copied()
        .filter(|&(idx, _)| match skip_upto {
            Some((schema, zt)) => exponential_bound(idx, schema) > zt,
            None => true,
        })
        .collect();
    let sign = if negate { -1.0 } else { 1.0 };
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(&(ia, ca)), Some(&(ib, cb))) if ia == ib => {
                out.push((ia, ca + sign * cb));
                i += 1;
                j += 1;
            }
            (Some(&(ia, ca)), Some(&(ib, _))) if ia < ib => {
                out.push((ia, ca));
                i += 1;
            }
            (Some(&(ia, ca)), None) => {
                out.push((ia, ca));
                i += 1;
            }
            (_, Some(&(ib, cb))) => {
                out.push((ib, sign * cb));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// `h += other` (or `h -= other` with `negate`), as Prometheus' `Add` and
/// `Sub`. The result may hold empty buckets; see
/// [`compact`](super::compact).
pub fn add(
    h: &mut FloatHistogram,
    other: &FloatHistogram,
    negate: bool,
) -> Result<Combined, IncompatibleSchema> {
    if h.uses_custom_buckets() != other.uses_custom_buckets() {
        return Err(IncompatibleSchema);
    }
    let mut out = Combined {
        counter_reset_collision: adjust_counter_reset(h, other),
        ..Combined::default()
    };
    let sign = if negate { -1.0 } else { 1.0 };
    if !h.uses_custom_buckets() {
        let ozc = reconcile_zero_buckets(h, other);
        h.zero_count += sign * ozc;
    }
    h.count += sign * other.count;
    h.sum += sign * other.sum;
    let hp = sparse(&h.positive_spans, &h.positive_buckets);
    let op = sparse(&other.positive_spans, &other.positive_buckets);
    if h.uses_custom_buckets() {
        let pairs = if bits_match(&h.custom_values, &other.custom_values) {
            add_pairs(&hp, &op, negate, None)
        } else {
            out.nhcb_bounds_reconciled = true;
            let bounds = intersect_bounds(&h.custom_values, &other.custom_values);
            let a = map_custom(&hp, &h.custom_values, &bounds);
            let b = map_custom(&op, &other.custom_values, &bounds);
            h.custom_values = bounds;
            add_pairs(&a, &b, negate, None)
        };
        (h.positive_spans, h.positive_buckets) = layout(&pairs);
        return Ok(out);
    }
    let hn = sparse(&h.negative_spans, &h.negative_buckets);
    let on = sparse(&other.negative_spans, &other.negative_buckets);
    let schema = h.schema.min(other.schema);
    let (hp, hn) = (
        reduce_pairs(&hp, h.schema, schema),
        reduce_pairs(&hn, h.schema, schema),
    );
    let (op, on) = (
        reduce_pairs(&op, other.schema, schema),
        reduce_pairs(&on, other.schema, schema),
    );
    h.schema = schema;
    let skip = Some((schema, h.zero_threshold));
    (h.positive_spans, h.positive_buckets) = layout(&add_pairs(&hp, &op, negate, skip));
    (h.negative_spans, h.negative_buckets) = layout(&add_pairs(&hn, &on, negate, skip));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use strata_codec::histogram::{Span, CUSTOM_BUCKETS_SCHEMA};

    use super::super::{compact, h};
    use super::*;

    #[test]
    fn adding_reconciles_schemas() {
        let mut a = h(0, 10.0, 20.0, 0, &[1.0, 2.0, 3.0]);
        a.zero_count = 2.0;
        a.negative_spans = vec![Span::new(0, 1)];
        a.negative_buckets = vec![4.0];
        let mut b = h(1, 5.0, 10.0, 1, &[1.0, 1.0]);
        b.zero_count = 1.0;
        let got = add(&mut a, &b, false);
        assert_eq!(got, Ok(Combined::default()));
        assert_eq!(a.schema, 0);
        assert_eq!((a.count, a.sum, a.zero_count), (15.0, 30.0, 3.0));
        assert_eq!(
            sparse(&a.positive_spans, &a.positive_buckets),
            vec![(0, 1.0), (1, 4.0), (2, 3.0)]
        );
        assert_eq!(a.negative_buckets, vec![4.0]);

        // Subtracting it again leaves an empty bucket where b had its own.
        let mut c = h(0, 1.0, 1.0, 3, &[1.0]);
        add(&mut c, &h(0, 1.0, 1.0, 3, &[1.0]), true).unwrap();
        assert_eq!((c.count, c.sum), (0.0, 0.0));
        assert_eq!(c.positive_buckets, vec![0.0]);
        compact(&mut c);
        assert!(c.positive_buckets.is_empty() && c.positive_spans.is_empty());
    }

    #[test]
    fn adding_widens_the_zero_bucket() {
        // a's bucket (0.5, 1] holds 2; b's zero bucket reaches 0.6, inside it:
        // the zero bucket grows to 1 and takes the bucket in.
        let mut a = h(0, 3.0, 1.0, 0, &[2.0]);
        a.zero_count = 1.0;
        let mut b = h(0, 5.0, 1.0, 0, &[]);
        b.positive_spans.clear();
        b.zero_threshold = 0.6;
        b.zero_count = 5.0;
        add(&mut a, &b, false).unwrap();
        assert_eq!((a.zero_threshold, a.zero_count, a.count), (1.0, 8.0, 8.0));
        assert!(a.positive_buckets.is_empty());
    }

    #[test]
    fn custom_buckets_add_and_reconcile() {
        let custom = |values: &[f64], buckets: &[f64]| FloatHistogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count: buckets.iter().sum(),
            positive_spans: vec![Span::new(0, buckets.len() as u32)],
            positive_buckets: buckets.to_vec(),
            custom_values: values.to_vec(),
            ..FloatHistogram::default()
        };
        let mut a = custom(&[1.0, 2.0], &[1.0, 2.0, 3.0]);
        assert_eq!(
            add(&mut a, &custom(&[1.0, 2.0], &[1.0, 1.0, 1.0]), false),
            Ok(Combined::default())
        );
        assert_eq!(a.positive_buckets, vec![2.0, 3.0, 4.0]);
        // Bounds [1, 2] and [2, 5]: only 2 is in both.
        let mut b = custom(&[1.0, 2.0], &[1.0, 2.0, 3.0]);
        let c = add(&mut b, &custom(&[2.0, 5.0], &[1.0, 1.0, 1.0]), false).unwrap();
        assert!(c.nhcb_bounds_reconciled);
        assert_eq!(b.custom_values, vec![2.0]);
        assert_eq!(b.positive_buckets, vec![4.0, 5.0]);
        // Exponential and custom do not mix.
        assert_eq!(
            add(&mut h(0, 1.0, 1.0, 0, &[1.0]), &b, false),
            Err(IncompatibleSchema)
        );
    }

    #[test]
    fn counter_reset_hints_of_a_sum() {
        let mut a = h(0, 1.0, 1.0, 0, &[1.0]);
        a.counter_reset_hint = CounterResetHint::Reset;
        let mut b = a.clone();
        b.counter_reset_hint = CounterResetHint::NotReset;
        let c = add(&mut a, &b, false).unwrap();
        assert!(c.counter_reset_collision);
        assert_eq!(a.counter_reset_hint, CounterResetHint::Unknown);
        let mut g = h(0, 1.0, 1.0, 0, &[1.0]);
        g.counter_reset_hint = CounterResetHint::Gauge;
        let mut x = h(0, 1.0, 1.0, 0, &[1.0]);
        add(&mut x, &g, false).unwrap();
        assert_eq!(x.counter_reset_hint, CounterResetHint::Gauge);
    }

    #[test]
    fn scaling() {
        let mut a = h(0, 4.0, 8.0, 0, &[2.0, 2.0]);
        mul(&mut a, 0.5);
        assert_eq!(
            (a.count, a.sum, a.positive_buckets.clone()),
            (2.0, 4.0, vec![1.0, 1.0])
        );
        div(&mut a, -1.0);
        assert_eq!(a.counter_reset_hint, CounterResetHint::Gauge);
        div(&mut a, 0.0);
        assert!(a.positive_buckets.is_empty());
        assert_eq!(a.count, f64::NEG_INFINITY);
    }
}
