//! Buckets as sparse `(index, count)` pairs and as spans again, and the
//! layout changes built on them: lowering the schema, dropping empty buckets.

use strata_codec::histogram::{FloatHistogram, Span};

use super::is_custom;

/// The buckets of one side as `(index, count)` pairs, in index order.
pub fn sparse(spans: &[Span], buckets: &[f64]) -> Vec<(i32, f64)> {
    let mut out = Vec::with_capacity(buckets.len());
    let mut idx = 0i32;
    let mut b = buckets.iter();
    for (n, s) in spans.iter().enumerate() {
        idx = if n == 0 { s.offset } else { idx + s.offset };
        for _ in 0..s.length {
            let Some(&c) = b.next() else {
                return out;
            };
            out.push((idx, c));
            idx += 1;
        }
    }
    out
}

/// Spans and buckets of `(index, count)` pairs in index order.
pub fn layout(pairs: &[(i32, f64)]) -> (Vec<Span>, Vec<f64>) {
    let mut spans: Vec<Span> = Vec::new();
    let mut buckets = Vec::with_capacity(pairs.len());
    let mut next = 0i32;
    for &(idx, c) in pairs {
        match spans.last_mut() {
            Some(s) if idx == next => s.length += 1,
            Some(_) => spans.push(Span::new(idx - next, 1)),
            None => spans.push(Span::new(idx, 1)),
        }
        buckets.push(c);
        next = idx + 1;
    }
    (spans, buckets)
}

/// Merges the buckets of `from` into those of the lower schema `to`.
pub(super) fn reduce_pairs(pairs: &[(i32, f64)], from: i32, to: i32) -> Vec<(i32, f64)> {
    if from <= to {
        return pairs.to_vec();
    }
    let shift = from - to;
    let mut out: Vec<(i32, f64)> = Vec::with_capacity(pairs.len());
    for &(idx, c) in pairs {
        let t = ((idx - 1) >> shift) + 1;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 += c,
            _ => out.push((t, c)),
        }
    }
    out
}

/// `h` at the lower schema `target` (Prometheus' `CopyToSchema`); `h`
/// itself when `target` is not lower or `h` has custom buckets.
pub fn copy_to_schema(h: &FloatHistogram, target: i32) -> FloatHistogram {
    let mut c = h.clone();
    reduce_resolution(&mut c, target);
    c
}

/// Lowers `h`'s schema to `target`, merging buckets.
pub fn reduce_resolution(h: &mut FloatHistogram, target: i32) {
    if target >= h.schema || h.uses_custom_buckets() || is_custom(target) {
        return;
    }
    let pos = reduce_pairs(
        &sparse(&h.positive_spans, &h.positive_buckets),
        h.schema,
        target,
    );
    let neg = reduce_pairs(
        &sparse(&h.negative_spans, &h.negative_buckets),
        h.schema,
        target,
    );
    (h.positive_spans, h.positive_buckets) = layout(&pos);
    (h.negative_spans, h.negative_buckets) = layout(&neg);
    h.schema = target;
}

/// Drops every empty bucket (Prometheus' `Compact(0)`).
pub fn compact(h: &mut FloatHistogram) {
    for (spans, buckets) in [
        (&mut h.positive_spans, &mut h.positive_buckets),
        (&mut h.negative_spans, &mut h.negative_buckets),
    ] {
        if buckets.iter().all(|&c| c != 0.0) && spans.iter().all(|s| s.length > 0) {
            // Already compact, save adjacent spans: merge them too.
            let pairs = sparse(spans, buckets);
            (*spans, *buckets) = layout(&pairs);
            continue;
        }
        let pairs: Vec<(i32, f64)> = sparse(spans, buckets)
            .into_iter()
            .filter(|&(_, c)| c != 0.0)
            .collect();
        (*spans, *buckets) = layout(&pairs);
    }
}

#[cfg(test)]
mod tests {
    use super::super::h;
    use super::*;

    #[test]
    fn spans_round_trip() {
        let spans = vec![Span::new(0, 2), Span::new(2, 1)];
        let pairs = sparse(&spans, &[1.0, 2.0, 3.0]);
        assert_eq!(pairs, vec![(0, 1.0), (1, 2.0), (4, 3.0)]);
        assert_eq!(layout(&pairs), (spans, vec![1.0, 2.0, 3.0]));
        let negative_start = sparse(&[Span::new(-3, 1), Span::new(1, 1)], &[1.0, 2.0]);
        assert_eq!(negative_start, vec![(-3, 1.0), (-1, 2.0)]);
    }

    #[test]
    fn reducing_the_resolution_merges_buckets() {
        let mut x = h(1, 10.0, 1.0, 1, &[1.0, 2.0, 3.0, 4.0]);
        reduce_resolution(&mut x, 0);
        assert_eq!(x.schema, 0);
        assert_eq!(
            sparse(&x.positive_spans, &x.positive_buckets),
            vec![(1, 3.0), (2, 7.0)]
        );
        // Index 0 of schema 2 ((0.84, 1]) falls in index 0 of schema 0.
        let y = copy_to_schema(&h(2, 1.0, 1.0, -1, &[1.0, 1.0]), 0);
        assert_eq!(
            sparse(&y.positive_spans, &y.positive_buckets),
            vec![(0, 2.0)]
        );
    }
}
