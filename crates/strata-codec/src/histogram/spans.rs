//! Span arithmetic: the bucket indices spans cover, comparing two layouts
//! bucket by bucket, merging them, and moving counts into a wider layout.

use super::types::Span;

/// Total number of buckets the spans describe, saturating.
pub(crate) fn span_total(spans: &[Span]) -> usize {
    let total: u64 = spans.iter().map(|s| u64::from(s.length)).sum();
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// The bucket indices the spans cover, in increasing order.
pub(crate) fn bucket_indices(spans: &[Span]) -> impl Iterator<Item = i64> + '_ {
    let mut next = 0i64;
    spans.iter().flat_map(move |s| {
        let start = next.saturating_add(i64::from(s.offset));
        next = start.saturating_add(i64::from(s.length));
        start..next
    })
}

/// How a sample's buckets relate to the chunk's, bucket index by bucket
/// index, a missing bucket counting as 0.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BucketChange {
    /// Both cover exactly the same bucket indices.
    pub same_indices: bool,
    /// Some bucket's count is lower in the sample.
    pub decreased: bool,
}

/// Compares absolute bucket counts `old` (under `old_spans`) with `new`
/// (under `new_spans`).
pub(crate) fn compare_buckets<T: PartialOrd + Copy + Default>(
    old_spans: &[Span],
    old: impl IntoIterator<Item = T>,
    new_spans: &[Span],
    new: impl IntoIterator<Item = T>,
) -> BucketChange {
    let zero = T::default();
    let mut change = BucketChange {
        same_indices: true,
        decreased: false,
    };
    let mut a = bucket_indices(old_spans).zip(old).peekable();
    let mut b = bucket_indices(new_spans).zip(new).peekable();
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (Some((ai, av)), Some((bi, bv))) if ai == bi => {
                change.decreased |= bv < av;
                a.next();
                b.next();
            }
            (Some((ai, av)), Some((bi, _))) if ai < bi => {
                change.same_indices = false;
                change.decreased |= zero < av;
                a.next();
            }
            (Some((_, av)), None) => {
                change.same_indices = false;
                change.decreased |= zero < av;
                a.next();
            }
            (_, Some((_, bv))) => {
                change.same_indices = false;
                change.decreased |= bv < zero;
                b.next();
            }
            (None, None) => return change,
        }
    }
}

/// The spans covering every bucket index of `a` and of `b`, or `None` if an
/// offset would not fit 32 bits.
pub(crate) fn union_spans(a: &[Span], b: &[Span]) -> Option<Vec<Span>> {
    let mut out: Vec<Span> = Vec::with_capacity(a.len().max(b.len()));
    // The index right after the last bucket pushed.
    let mut next = 0i64;
    let mut ai = bucket_indices(a).peekable();
    let mut bi = bucket_indices(b).peekable();
    loop {
        let idx = match (ai.peek().copied(), bi.peek().copied()) {
            (Some(x), Some(y)) => {
                if x <= y {
                    ai.next();
                }
                if y <= x {
                    bi.next();
                }
                x.min(y)
            }
            (Some(x), None) => {
                ai.next();
                x
            }
            (None, Some(y)) => {
                bi.next();
                y
            }
            (None, None) => return Some(out),
        };
        match out.last_mut() {
            Some(last) if idx == next => last.length = last.length.checked_add(1)?,
            // A malformed span list could repeat an index: never go back.
            Some(_) if idx < next => continue,
            _ => out.push(Span {
                offset: i32::try_from(idx.checked_sub(next)?).ok()?,
                length: 1,
            }),
        }
        next = idx.saturating_add(1);
    }
}

/// Places absolute counts laid out by `from` into the layout `to`, which
/// must cover every bucket index of `from`; buckets only in `to` get
/// `T::default()`. `None` if `to` misses one of `from`'s indices.
pub(crate) fn expand<T: Copy + Default>(
    from: &[Span],
    values: &[T],
    to: &[Span],
) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(span_total(to));
    let mut src = bucket_indices(from).zip(values.iter().copied()).peekable();
    for idx in bucket_indices(to) {
        match src.peek() {
            Some(&(i, v)) if i == idx => {
                out.push(v);
                src.next();
            }
            Some(&(i, _)) if i < idx => return None,
            _ => out.push(T::default()),
        }
    }
    src.next().is_none().then_some(out)
}

/// Absolute counts from deltas, wrapping.
pub(crate) fn deltas_to_absolute(deltas: &[i64]) -> Vec<i64> {
    let mut acc = 0i64;
    deltas
        .iter()
        .map(|&d| {
            acc = acc.wrapping_add(d);
            acc
        })
        .collect()
}

/// Deltas from absolute counts, wrapping.
pub(crate) fn absolute_to_deltas(abs: &[i64]) -> Vec<i64> {
    let mut prev = 0i64;
    abs.iter()
        .map(|&a| {
            let d = a.wrapping_sub(prev);
            prev = a;
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(s: &[(i32, u32)]) -> Vec<Span> {
        s.iter().map(|&(o, l)| Span::new(o, l)).collect()
    }

    #[test]
    fn indices_follow_offsets() {
        let s = spans(&[(0, 2), (2, 1), (3, 2), (3, 1), (1, 1)]);
        let idx: Vec<i64> = bucket_indices(&s).collect();
        assert_eq!(idx, [0, 1, 4, 8, 9, 13, 15]);
        let s = spans(&[(-3, 1), (0, 0), (1, 2)]);
        assert_eq!(bucket_indices(&s).collect::<Vec<_>>(), [-3, -1, 0]);
    }

    #[test]
    fn union_merges_and_expand_places() {
        let a = spans(&[(0, 2), (2, 1)]);
        let b = spans(&[(1, 3), (5, 1)]);
        let u = union_spans(&a, &b).unwrap();
        assert_eq!(bucket_indices(&u).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 9]);
        assert_eq!(u, spans(&[(0, 5), (4, 1)]));
        assert_eq!(expand(&a, &[5i64, 6, 7], &u).unwrap(), [5, 6, 0, 0, 7, 0]);
        assert_eq!(expand(&u, &[1i64; 6], &a), None);
    }

    #[test]
    fn compare_sees_missing_buckets_as_zero() {
        let a = spans(&[(0, 2)]);
        let b = spans(&[(0, 3)]);
        let c = compare_buckets(&a, [1i64, 2], &b, [1i64, 2, 0]);
        assert!(!c.same_indices && !c.decreased);
        let c = compare_buckets(&b, [1i64, 2, 1], &a, [1i64, 2]);
        assert!(c.decreased);
        let c = compare_buckets(&b, [1i64, 2, 0], &a, [1i64, 2]);
        assert!(!c.decreased);
        let c = compare_buckets(&a, [1.0, 2.0], &a, [1.0, 1.5]);
        assert!(c.same_indices && c.decreased);
    }
}
