//! OTLP exponential histogram points to native histograms, as Prometheus'
//! OTLP receiver converts them (`otlptranslator/prometheusremotewrite/
//! histograms.go`, `exponentialToNativeHistogram`):
//!
//! - the scale is the schema; a scale over 8 is downscaled to 8, merging
//!   `2^(scale-8)` buckets into one; a scale under -4 refuses the metric;
//! - OTLP bucket `i` of a side covers `(base^(offset+i), base^(offset+i+1)]`
//!   and Prometheus bucket `j` covers `(base^(j-1), base^j]`: indexes move
//!   by +1 (after downscaling);
//! - dense counts become spans and deltas, a run of more than two empty
//!   buckets starting a new span (client_golang's rule);
//! - the zero threshold is Prometheus' default (1e-128), whatever the point
//!   says; the zero count, sum (0 when absent) and count are the point's;
//! - the reset hint is "unknown" (Prometheus does not trust OTLP's start
//!   time for it);
//! - a point flagged "no recorded value" is a stale marker: sum the stale
//!   NaN, and the count the stale NaN's bits, as Prometheus writes it.
//!
//! One difference, in the histogram's form only: empty buckets before the
//! first non-empty one are not kept (Prometheus keeps up to two), which
//! also avoids Prometheus' misplacing of counts when such empty buckets
//! precede a downscaled merge.

use strata_codec::histogram::{
    CounterResetHint, Histogram, Span, MAX_EXP_SCHEMA, MIN_EXP_SCHEMA, STALE_NAN_BITS,
};

use crate::proto::{Buckets, ExponentialHistogramDataPoint, FLAG_NO_RECORDED_VALUE};

/// Prometheus' zero threshold for converted OTLP histograms.
pub const DEFAULT_ZERO_THRESHOLD: f64 = 1e-128;

/// The native histogram of `p`, or why it has none (a scale under -4, or
/// bucket indexes out of range).
pub fn to_native(p: &ExponentialHistogramDataPoint) -> Result<Histogram, String> {
    let mut scale = p.scale;
    if scale < MIN_EXP_SCHEMA {
        return Err(format!(
            "cannot convert exponential to native histogram: scale must be >= {MIN_EXP_SCHEMA}, \
             was {scale}"
        ));
    }
    let mut scale_down = 0;
    if scale > MAX_EXP_SCHEMA {
        scale_down = scale - MAX_EXP_SCHEMA;
        scale = MAX_EXP_SCHEMA;
    }
    let empty = Buckets::default();
    let (positive_spans, positive_buckets) =
        layout(p.positive.as_ref().unwrap_or(&empty), scale_down)?;
    let (negative_spans, negative_buckets) =
        layout(p.negative.as_ref().unwrap_or(&empty), scale_down)?;
    let (sum, count) = if p.flags & FLAG_NO_RECORDED_VALUE != 0 {
        (f64::from_bits(STALE_NAN_BITS), STALE_NAN_BITS)
    } else {
        (p.sum.unwrap_or(0.0), p.count)
    };
    Ok(Histogram {
        schema: scale,
        zero_threshold: DEFAULT_ZERO_THRESHOLD,
        zero_count: p.zero_count,
        count,
        sum,
        positive_spans,
        positive_buckets,
        negative_spans,
        negative_buckets,
        custom_values: Vec::new(),
        counter_reset_hint: CounterResetHint::Unknown,
    })
}

/// One side's dense OTLP counts as Prometheus spans and deltas, merging
/// `2^scale_down` buckets into one.
fn layout(b: &Buckets, scale_down: i32) -> Result<(Vec<Span>, Vec<i64>), String> {
    // The merged buckets with observations, by Prometheus index.
    let mut merged: Vec<(i64, u64)> = Vec::new();
    for (i, &c) in (0_i64..).zip(&b.bucket_counts) {
        let index = ((i64::from(b.offset) + i) >> scale_down) + 1;
        match merged.last_mut() {
            Some((last, n)) if *last == index => *n = n.saturating_add(c),
            _ => merged.push((index, c)),
        }
    }
    merged.retain(|&(_, c)| c != 0);
    let mut spans: Vec<Span> = Vec::new();
    let mut deltas = Vec::with_capacity(merged.len());
    let mut previous_count = 0_i64;
    let mut previous_index: Option<i64> = None;
    let out_of_range = || format!("bucket offset {} is out of range", b.offset);
    for (index, count) in merged {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        match (previous_index, spans.last_mut()) {
            (Some(previous), Some(span)) if index - previous - 1 <= 2 => {
                // Fill a short gap with empty buckets.
                for _ in 0..index - previous - 1 {
                    deltas.push(-previous_count);
                    previous_count = 0;
                    span.length += 1;
                }
                span.length += 1;
            }
            (Some(previous), _) => {
                let gap = i32::try_from(index - previous - 1).map_err(|_| out_of_range())?;
                spans.push(Span::new(gap, 1));
            }
            (None, _) => {
                let first = i32::try_from(index).map_err(|_| out_of_range())?;
                spans.push(Span::new(first, 1));
            }
        }
        deltas.push(count.wrapping_sub(previous_count));
        previous_count = count;
        previous_index = Some(index);
    }
    Ok((spans, deltas))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(
        scale: i32,
        positive: (i32, &[u64]),
        negative: (i32, &[u64]),
    ) -> ExponentialHistogramDataPoint {
        let buckets = |(offset, counts): (i32, &[u64])| {
            Some(Buckets {
                offset,
                bucket_counts: counts.to_vec(),
            })
        };
        let total: u64 = positive.1.iter().chain(negative.1).sum();
        ExponentialHistogramDataPoint {
            scale,
            count: total + 2,
            zero_count: 2,
            sum: Some(12.5),
            positive: buckets(positive),
            negative: buckets(negative),
            ..Default::default()
        }
    }

    /// Absolute counts by Prometheus bucket index, from spans and deltas.
    fn expand(spans: &[Span], deltas: &[i64]) -> Vec<(i32, i64)> {
        let mut out = Vec::new();
        let (mut index, mut count, mut d) = (0, 0, deltas.iter());
        for s in spans {
            index += s.offset;
            for _ in 0..s.length {
                count += d.next().unwrap();
                out.push((index, count));
                index += 1;
            }
        }
        out.retain(|&(_, c)| c != 0);
        out
    }

    #[test]
    fn scale_3_keeps_its_buckets_moved_by_one() {
        let h = to_native(&point(3, (-2, &[1, 2, 0, 0, 0, 0, 4]), (0, &[]))).unwrap();
        assert_eq!(h.schema, 3);
        assert_eq!(h.zero_threshold, DEFAULT_ZERO_THRESHOLD);
        assert_eq!((h.count, h.zero_count, h.sum), (9, 2, 12.5));
        assert_eq!(h.counter_reset_hint, CounterResetHint::Unknown);
        // Indexes -2, -1 and 4 become -1, 0 and 5; the gap of four empty
        // buckets starts a new span.
        assert_eq!(h.positive_spans, vec![Span::new(-1, 2), Span::new(4, 1)]);
        assert_eq!(h.positive_buckets, vec![1, 1, 2]);
        assert!(h.negative_spans.is_empty());
        h.validate().unwrap();
    }

    #[test]
    fn scale_10_is_downscaled_to_8() {
        // At scale 10, four buckets make one of scale 8. OTLP indexes 3..=9
        // map to 0, 1, 1, 1, 1, 2, 2 at scale 8, then +1.
        let h = to_native(&point(10, (3, &[1, 1, 2, 3, 4, 5, 6]), (-5, &[7]))).unwrap();
        assert_eq!(h.schema, 8);
        assert_eq!(
            expand(&h.positive_spans, &h.positive_buckets),
            vec![(1, 1), (2, 10), (3, 11)]
        );
        // -5 >> 2 is -2 (floor), then +1.
        assert_eq!(
            expand(&h.negative_spans, &h.negative_buckets),
            vec![(-1, 7)]
        );
        assert_eq!(h.positive_spans, vec![Span::new(1, 3)]);
        assert_eq!(h.positive_buckets, vec![1, 9, 1]);
        h.validate().unwrap();
    }

    #[test]
    fn negative_buckets_and_short_gaps_are_filled() {
        let h = to_native(&point(0, (0, &[]), (1, &[3, 0, 0, 2]))).unwrap();
        assert!(h.positive_spans.is_empty());
        assert_eq!(h.negative_spans, vec![Span::new(2, 4)]);
        assert_eq!(h.negative_buckets, vec![3, -3, 0, 2]);
        assert_eq!((h.count, h.zero_count), (7, 2));
        h.validate().unwrap();
    }

    #[test]
    fn zero_bucket_only() {
        let p = ExponentialHistogramDataPoint {
            scale: 2,
            count: 5,
            zero_count: 5,
            zero_threshold: 0.25,
            ..Default::default()
        };
        let h = to_native(&p).unwrap();
        assert_eq!((h.zero_count, h.count, h.sum), (5, 5, 0.0));
        assert_eq!(h.zero_threshold, DEFAULT_ZERO_THRESHOLD);
        assert!(h.positive_spans.is_empty() && h.negative_spans.is_empty());
        h.validate().unwrap();
    }

    #[test]
    fn leading_empty_buckets_before_a_merge_are_not_misplaced() {
        // Prometheus' loop would give buckets 1 and 2 one each.
        let h = to_native(&point(9, (0, &[0, 0, 1, 1]), (0, &[]))).unwrap();
        assert_eq!(expand(&h.positive_spans, &h.positive_buckets), vec![(2, 2)]);
    }

    #[test]
    fn no_recorded_value_is_a_stale_marker_and_low_scales_are_refused() {
        let mut p = point(0, (0, &[1]), (0, &[]));
        p.flags = FLAG_NO_RECORDED_VALUE;
        let h = to_native(&p).unwrap();
        assert!(h.is_stale());
        assert_eq!(h.count, STALE_NAN_BITS);
        h.validate().unwrap();
        let e = to_native(&point(-5, (0, &[1]), (0, &[]))).unwrap_err();
        assert!(e.contains("scale must be >= -4, was -5"), "{e}");
    }
}
