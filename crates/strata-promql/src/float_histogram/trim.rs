//! Trimming a histogram's observations above (`</`) or below (`>/`) a
//! value, as Prometheus' `FloatHistogram.TrimBuckets`: a bucket wholly on
//! the kept side stays, one wholly on the other goes, one the value falls
//! in keeps the share on the kept side (linearly for custom buckets and
//! the zero bucket, on a log scale for exponential ones), and the count
//! and sum are made again from what is kept, each bucket's share at the
//! middle of its kept part.

use strata_codec::histogram::FloatHistogram;

use super::format::side_buckets;
use super::layout::compact;
use super::Bucket;

/// Keeps the observations of `h` below `rhs` (`upper`) or above it.
pub fn trim_buckets(h: &mut FloatHistogram, rhs: f64, upper: bool) {
    let custom = h.uses_custom_buckets();
    let (mut count, mut sum) = (0.0, 0.0);
    let mut trimmed = false;
    let (mut has_positive, mut has_negative) = (false, false);
    for positive in [true, false] {
        let buckets = side_buckets(h, positive);
        let counts = if positive {
            &mut h.positive_buckets
        } else {
            &mut h.negative_buckets
        };
        for (i, b) in buckets.iter().enumerate() {
            if b.count == 0.0 {
                continue;
            }
            if positive {
                has_positive = true;
            } else {
                has_negative = true;
            }
            let (keep, midpoint) = trim_bucket(b, rhs, upper, positive, custom);
            count += keep;
            sum += midpoint * keep;
            if let Some(c) = counts.get_mut(i) {
                if *c != keep {
                    *c = keep;
                    trimmed = true;
                }
            }
        }
    }
    if h.zero_count > 0.0 {
        let zt = h.zero_threshold;
        let (keep, midpoint) =
            zero_bucket_trim(h.zero_count, zt, rhs, has_negative, has_positive, upper);
        if h.zero_count != keep {
            h.zero_count = keep;
            trimmed = true;
        }
        sum += midpoint * keep;
        count += keep;
    }
    if trimmed {
        h.count = count;
        h.sum = sum;
        compact(h);
    }
}

/// The share of `b` to keep and the middle of the kept part.
fn trim_bucket(b: &Bucket, rhs: f64, upper: bool, positive: bool, linear: bool) -> (f64, f64) {
    let (keep_all, contains) = if upper {
        (b.upper <= rhs, b.lower < rhs)
    } else {
        (b.lower >= rhs, b.upper > rhs)
    };
    if keep_all {
        return (b.count, midpoint(b.lower, b.upper, positive, linear));
    }
    if !contains {
        return (0.0, 0.0);
    }
    if b.lower == f64::NEG_INFINITY || b.upper == f64::INFINITY {
        return infinite_bucket_trim(b, rhs, upper);
    }
    let below = if rhs <= b.lower {
        0.0
    } else if rhs >= b.upper {
        b.count
    } else {
        b.count * fraction_below(b, rhs, linear)
    };
    if upper {
        (below, midpoint(b.lower, rhs, positive, linear))
    } else {
        (b.count - below, midpoint(rhs, b.upper, positive, linear))
    }
}

/// Prometheus' `Bucket.FractionBelow`: linear, or linear in the log2 of
/// the bounds (mirrored for negative buckets).
fn fraction_below(b: &Bucket, v: f64, linear: bool) -> f64 {
    if linear {
        return (v - b.lower) / (b.upper - b.lower);
    }
    let (lo, up, lv) = (b.lower.abs().log2(), b.upper.abs().log2(), v.abs().log2());
    if v > 0.0 {
        (lv - lo) / (up - lo)
    } else {
        1.0 - (lv - up) / (lo - up)
    }
}

/// Prometheus' `handleInfinityBuckets`: a bucket open on one side is kept
/// whole or dropped whole, but for custom buckets from -Inf to a positive
/// bound, read as starting at 0.
fn infinite_bucket_trim(b: &Bucket, rhs: f64, upper: bool) -> (f64, f64) {
    let finite = |x: f64| if x.is_infinite() { 0.0 } else { x };
    if b.lower == f64::NEG_INFINITY {
        if upper {
            if rhs >= b.upper {
                return (b.count, 0.0);
            }
            if rhs > 0.0 && b.upper > 0.0 && b.upper != f64::INFINITY {
                return (b.count * rhs / b.upper, rhs / 2.0);
            }
            if b.upper <= 0.0 {
                return (b.count, rhs);
            }
            return (0.0, finite(b.upper));
        }
        if rhs <= b.lower {
            return (b.count, 0.0);
        }
        if rhs >= 0.0 && b.upper > rhs && b.upper != f64::INFINITY {
            return (b.count * (1.0 - rhs / b.upper), (rhs + b.upper) / 2.0);
        }
        return (0.0, finite(b.upper));
    }
    // The upper bound is +Inf.
    if upper {
        return (0.0, finite(b.lower));
    }
    if rhs >= b.lower {
        return (b.count, rhs);
    }
    (0.0, finite(b.lower))
}

/// Prometheus' `computeZeroBucketTrim`: the zero bucket spans only the
/// sides that have buckets, and is split linearly.
fn zero_bucket_trim(
    count: f64,
    threshold: f64,
    rhs: f64,
    has_negative: bool,
    has_positive: bool,
    upper: bool,
) -> (f64, f64) {
    let (mut lower, mut up) = (-threshold, threshold);
    if has_negative && !has_positive {
        up = 0.0;
    }
    if has_positive && !has_negative {
        lower = 0.0;
    }
    if upper {
        if rhs <= lower {
            return (0.0, 0.0);
        }
        if rhs >= up {
            return (count, (lower + up) / 2.0);
        }
        (count * (rhs - lower) / (up - lower), (lower + rhs) / 2.0)
    } else {
        if rhs <= lower {
            return (count, (lower + up) / 2.0);
        }
        if rhs >= up {
            return (0.0, 0.0);
        }
        (count * (up - rhs) / (up - lower), (rhs + up) / 2.0)
    }
}

/// Prometheus' `computeMidpoint`: of a kept interval, linear or geometric
/// (signed), an open end giving way to the other.
fn midpoint(lower: f64, upper: f64, positive: bool, linear: bool) -> f64 {
    if lower.is_infinite() {
        if upper.is_infinite() {
            return 0.0;
        }
        if upper > 0.0 {
            return upper / 2.0;
        }
        return upper;
    }
    if upper.is_infinite() {
        return lower;
    }
    if linear {
        return (lower + upper) / 2.0;
    }
    let geo = (lower * upper).abs().sqrt();
    if positive {
        geo
    } else {
        -geo
    }
}

#[cfg(test)]
mod tests {
    use strata_codec::histogram::Span;

    use super::*;

    /// Custom buckets (-Inf, 10], (10, 20], (20, +Inf] holding 2, 4 and 6.
    fn custom() -> FloatHistogram {
        FloatHistogram {
            schema: -53,
            count: 12.0,
            sum: 150.0,
            positive_spans: vec![Span {
                offset: 0,
                length: 3,
            }],
            positive_buckets: vec![2.0, 4.0, 6.0],
            custom_values: vec![10.0, 20.0],
            ..FloatHistogram::default()
        }
    }

    #[test]
    fn a_custom_bucket_split_keeps_its_linear_share() {
        let mut h = custom();
        trim_buckets(&mut h, 15.0, true);
        // (-Inf, 10] read as (0, 10]: 2 at 5; half of (10, 20]: 2 at 12.5;
        // the +Inf bucket goes.
        assert_eq!(h.positive_buckets, vec![2.0, 2.0]);
        assert_eq!(h.count, 4.0);
        assert_eq!(h.sum, 2.0 * 5.0 + 2.0 * 12.5);
        let mut h = custom();
        trim_buckets(&mut h, 15.0, false);
        assert_eq!(h.count, 2.0 + 6.0);
        assert_eq!(h.sum, 2.0 * 17.5 + 6.0 * 20.0);
    }

    #[test]
    fn an_exponential_bucket_splits_on_a_log_scale() {
        // Schema 0: bucket 2 is (2, 4]; trimming at 2√2 keeps half.
        let mut h = FloatHistogram {
            count: 8.0,
            sum: 24.0,
            positive_spans: vec![Span {
                offset: 2,
                length: 1,
            }],
            positive_buckets: vec![8.0],
            ..FloatHistogram::default()
        };
        trim_buckets(&mut h, 2.0 * 2f64.sqrt(), true);
        assert!((h.count - 4.0).abs() < 1e-12, "{}", h.count);
        assert!(
            (h.sum - 4.0 * (2.0 * 2.0 * 2f64.sqrt()).sqrt()).abs() < 1e-9,
            "{}",
            h.sum
        );
    }

    #[test]
    fn nothing_to_trim_leaves_the_histogram_as_it_was() {
        let mut h = custom();
        trim_buckets(&mut h, f64::INFINITY, false);
        assert_eq!(h.count, 0.0);
        let mut h = custom();
        trim_buckets(&mut h, f64::NEG_INFINITY, false);
        assert_eq!(h, custom());
    }
}
