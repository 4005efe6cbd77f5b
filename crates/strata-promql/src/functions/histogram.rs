//! `histogram_quantile` over classic (`le`-labelled) buckets, as
//! Prometheus' `BucketQuantile`.

/// One classic bucket: its upper bound and cumulative count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bucket {
    pub upper_bound: f64,
    pub count: f64,
}

const SMALL_DELTA_TOLERANCE: f64 = 1e-12;

/// Where the counts of classic buckets had to be raised to be monotonic:
/// the lowest and highest bound raised and the largest raise (what
/// Prometheus' info on it reports).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MonotonicityFix {
    pub min_bucket: f64,
    pub max_bucket: f64,
    pub max_diff: f64,
}

/// The `q`-quantile of classic buckets, and whether their counts had to be
/// made monotonic first.
pub(crate) fn bucket_quantile(q: f64, buckets: &mut Vec<Bucket>) -> (f64, Option<MonotonicityFix>) {
    let mut fix = None;
    let v = quantile_of_buckets(q, buckets, &mut fix);
    (v, fix)
}

fn quantile_of_buckets(
    q: f64,
    buckets: &mut Vec<Bucket>,
    fix: &mut Option<MonotonicityFix>,
) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| {
        a.upper_bound
            .partial_cmp(&b.upper_bound)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    match buckets.last() {
        Some(b) if b.upper_bound == f64::INFINITY => {}
        _ => return f64::NAN,
    }
    coalesce(buckets);
    *fix = ensure_monotonic(buckets);
    if buckets.len() < 2 {
        return f64::NAN;
    }
    let Some((inf, finite)) = buckets.split_last() else {
        return f64::NAN;
    };
    let observations = inf.count;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let b = finite.partition_point(|x| x.count < rank);
    let Some(bucket) = finite.get(b) else {
        // The rank falls in the +Inf bucket: the highest finite bound is the
        // best estimate.
        return finite.last().map_or(f64::NAN, |x| x.upper_bound);
    };
    if b == 0 && bucket.upper_bound <= 0.0 {
        return bucket.upper_bound;
    }
    let bucket_end = bucket.upper_bound;
    let mut count = bucket.count;
    let mut bucket_start = 0.0;
    if let Some(below) = b.checked_sub(1).and_then(|i| finite.get(i)) {
        bucket_start = below.upper_bound;
        count -= below.count;
        rank -= below.count;
    }
    bucket_start + (bucket_end - bucket_start) * (rank / count)
}

/// `histogram_fraction(lower, upper, buckets)` over classic buckets, as
/// Prometheus' `BucketFraction`.
pub(crate) fn bucket_fraction(lower: f64, upper: f64, buckets: &mut Vec<Bucket>) -> f64 {
    buckets.sort_by(|a, b| {
        a.upper_bound
            .partial_cmp(&b.upper_bound)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    match buckets.last() {
        Some(b) if b.upper_bound == f64::INFINITY => {}
        _ => return f64::NAN,
    }
    coalesce(buckets);
    let count = buckets.last().map_or(0.0, |b| b.count);
    if count == 0.0 || lower.is_nan() || upper.is_nan() {
        return f64::NAN;
    }
    if lower >= upper {
        return 0.0;
    }
    let (mut rank, mut lower_rank, mut upper_rank) = (0.0, 0.0, 0.0);
    let (mut lower_set, mut upper_set) = (false, false);
    let mut lower_bound = match buckets.first() {
        Some(b) if b.upper_bound <= 0.0 => f64::NEG_INFINITY,
        _ => 0.0,
    };
    for (i, b) in buckets.iter().enumerate() {
        if let Some(prev) = i.checked_sub(1).and_then(|p| buckets.get(p)) {
            lower_bound = prev.upper_bound;
        }
        let upper_bound = b.upper_bound;
        let linear = |v: f64| {
            if lower_bound == f64::NEG_INFINITY {
                return b.count;
            }
            rank + (b.count - rank) * (v - lower_bound) / (upper_bound - lower_bound)
        };
        if !lower_set && lower_bound >= lower {
            lower_rank = rank;
            lower_set = true;
        }
        if !upper_set && lower_bound >= upper {
            upper_rank = rank;
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        if !lower_set && lower_bound < lower && upper_bound > lower {
            lower_rank = linear(lower);
            lower_set = true;
        }
        if !upper_set && lower_bound < upper && upper_bound > upper {
            upper_rank = linear(upper);
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        rank = b.count;
    }
    if !lower_set || lower_rank > count {
        lower_rank = count;
    }
    if !upper_set || upper_rank > count {
        upper_rank = count;
    }
    (upper_rank - lower_rank) / count
}

/// Merges buckets with the same upper bound (sorted input).
fn coalesce(buckets: &mut Vec<Bucket>) {
    let mut out: Vec<Bucket> = Vec::with_capacity(buckets.len());
    for b in buckets.iter() {
        match out.last_mut() {
            Some(last) if last.upper_bound == b.upper_bound => last.count += b.count,
            _ => out.push(*b),
        }
    }
    *buckets = out;
}

/// Forces counts to be monotonic, ignoring tiny float noise; says where a
/// count had to be raised by more than noise.
fn ensure_monotonic(buckets: &mut [Bucket]) -> Option<MonotonicityFix> {
    let first = buckets.first()?;
    let mut prev = first.count;
    let mut fix: Option<MonotonicityFix> = None;
    for b in buckets.iter_mut().skip(1) {
        let curr = b.count;
        if curr == prev {
            continue;
        }
        if almost_equal(prev, curr, SMALL_DELTA_TOLERANCE) {
            b.count = prev;
            continue;
        }
        if curr < prev {
            b.count = prev;
            let f = fix.get_or_insert(MonotonicityFix {
                min_bucket: f64::INFINITY,
                max_bucket: f64::NEG_INFINITY,
                max_diff: 0.0,
            });
            f.min_bucket = f.min_bucket.min(b.upper_bound);
            f.max_bucket = f.max_bucket.max(b.upper_bound);
            f.max_diff = f.max_diff.max(prev - curr);
            continue;
        }
        prev = curr;
    }
    fix
}

/// Prometheus' `almost.Equal`.
fn almost_equal(a: f64, b: f64, epsilon: f64) -> bool {
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if a == b {
        return true;
    }
    let abs_sum = a.abs() + b.abs();
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || abs_sum < MIN_NORMAL {
        return diff < epsilon * MIN_NORMAL;
    }
    diff / abs_sum.min(f64::MAX) < epsilon
}

use strata_codec::histogram::FloatHistogram;

use crate::float_histogram::all_buckets;

/// An annotation's text from the metric name.
pub(crate) type InfoFn = fn(&str) -> String;

/// `histogram_quantile(q, h)` of a native histogram, as Prometheus'
/// `HistogramQuantile`; the info it gives, if any, as a function of the
/// metric name (`annotations::quantile_nan_result` or `_skew`).
pub(crate) fn native_quantile(q: f64, h: &FloatHistogram) -> (f64, Option<InfoFn>) {
    if q < 0.0 {
        return (f64::NEG_INFINITY, None);
    }
    if q > 1.0 {
        return (f64::INFINITY, None);
    }
    if h.count == 0.0 || q.is_nan() {
        return (f64::NAN, None);
    }
    let mut buckets = all_buckets(h);
    let mut rank;
    let forward = h.sum.is_nan() || q < 0.5;
    if forward {
        rank = q * h.count;
    } else {
        buckets.reverse();
        rank = (1.0 - q) * h.count;
    }
    let mut count = 0.0;
    let mut at = 0;
    let mut bucket = None;
    while let Some(b) = buckets.get(at) {
        at += 1;
        bucket = Some(*b);
        if b.count == 0.0 {
            continue;
        }
        count += b.count;
        if count >= rank {
            break;
        }
    }
    // A histogram with no buckets (all its observations NaN) goes on with
    // an empty bucket at 0, as Go's zero value, to the NaN info below.
    let mut bucket = bucket.unwrap_or(crate::float_histogram::Bucket {
        lower: 0.0,
        upper: 0.0,
        lower_inclusive: false,
        upper_inclusive: false,
        count: 0.0,
        index: 0,
    });
    if !h.uses_custom_buckets() && bucket.lower < 0.0 && bucket.upper > 0.0 {
        if h.negative_buckets.is_empty() && !h.positive_buckets.is_empty() {
            bucket.lower = 0.0;
        } else if h.positive_buckets.is_empty() && !h.negative_buckets.is_empty() {
            bucket.upper = 0.0;
        }
    } else if h.uses_custom_buckets() {
        if bucket.lower == f64::NEG_INFINITY {
            if bucket.upper <= 0.0 {
                return (bucket.upper, None);
            }
            bucket.lower = 0.0;
        } else if bucket.upper == f64::INFINITY {
            return (bucket.lower, None);
        }
    }
    if count > h.count {
        count = h.count;
    }
    if count < rank {
        if h.sum.is_nan() {
            return (f64::NAN, Some(crate::annotations::quantile_nan_result));
        }
        return (bucket.upper, None);
    }
    if forward {
        rank -= count - bucket.count;
    } else {
        rank = count - rank;
    }
    let mut info = None;
    if h.sum.is_nan() {
        for b in buckets.get(at..).unwrap_or(&[]) {
            count += b.count;
        }
        if count < h.count {
            info = Some(crate::annotations::quantile_nan_skew as InfoFn);
        }
    }
    let fraction = rank / bucket.count;
    if h.uses_custom_buckets() || (bucket.lower <= 0.0 && bucket.upper >= 0.0) {
        return (
            bucket.lower + (bucket.upper - bucket.lower) * fraction,
            info,
        );
    }
    let log_lower = bucket.lower.abs().log2();
    let log_upper = bucket.upper.abs().log2();
    if bucket.lower > 0.0 {
        return (
            (log_lower + (log_upper - log_lower) * fraction).exp2(),
            info,
        );
    }
    (
        -(log_upper + (log_lower - log_upper) * (1.0 - fraction)).exp2(),
        info,
    )
}

/// `histogram_fraction(lower, upper, h)` of a native histogram, as
/// Prometheus' `HistogramFraction`; true when NaN observations were left
/// out (the info `annotations::fraction_nans`).
pub(crate) fn native_fraction(lower: f64, upper: f64, h: &FloatHistogram) -> (f64, bool) {
    if h.count == 0.0 || lower.is_nan() || upper.is_nan() {
        return (f64::NAN, false);
    }
    if lower >= upper {
        return (0.0, false);
    }
    let (mut count, mut rank, mut lower_rank, mut upper_rank) = (0.0, 0.0, 0.0, 0.0);
    let (mut lower_set, mut upper_set) = (false, false);
    let buckets = all_buckets(h);
    let mut at = 0;
    while let Some(&orig) = buckets.get(at) {
        at += 1;
        let mut b = orig;
        count += b.count;
        let mut zero_bucket = false;
        if h.uses_custom_buckets() {
            // Custom buckets have no zero bucket: only the first one's
            // lower bound, -Inf, reads as 0 when its upper bound is
            // positive, as for classic histograms.
            if b.lower == f64::NEG_INFINITY && b.upper > 0.0 {
                b.lower = 0.0;
            }
        } else if b.lower <= 0.0 && b.upper >= 0.0 {
            zero_bucket = true;
            if h.negative_buckets.is_empty() && !h.positive_buckets.is_empty() {
                b.lower = 0.0;
            } else if h.positive_buckets.is_empty() && !h.negative_buckets.is_empty() {
                b.upper = 0.0;
            }
        }
        let linear = |v: f64| {
            if b.lower == f64::NEG_INFINITY {
                return b.count;
            }
            rank + b.count * ((v - b.lower) / (b.upper - b.lower))
        };
        let exponential = |v: f64| {
            let log_lower = b.lower.abs().log2();
            let log_upper = b.upper.abs().log2();
            let log_v = v.abs().log2();
            let f = if v > 0.0 {
                (log_v - log_lower) / (log_upper - log_lower)
            } else {
                1.0 - ((log_v - log_upper) / (log_lower - log_upper))
            };
            rank + b.count * f
        };
        if !lower_set && b.lower >= lower {
            lower_rank = rank;
            lower_set = true;
        }
        if !upper_set && b.lower >= upper {
            upper_rank = rank;
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        if !lower_set && b.lower < lower && b.upper > lower {
            lower_rank = if h.uses_custom_buckets() || zero_bucket {
                linear(lower)
            } else {
                exponential(lower)
            };
            lower_set = true;
        }
        if !upper_set && b.lower < upper && b.upper > upper {
            upper_rank = if h.uses_custom_buckets() || zero_bucket {
                linear(upper)
            } else {
                exponential(upper)
            };
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        rank += b.count;
    }
    let mut nans = false;
    if h.sum.is_nan() {
        for b in buckets.get(at..).unwrap_or(&[]) {
            count += b.count;
        }
        nans = count < h.count;
    } else {
        count = h.count;
    }
    if !lower_set || lower_rank > count {
        lower_rank = count;
    }
    if !upper_set || upper_rank > count {
        upper_rank = count;
    }
    ((upper_rank - lower_rank) / h.count, nans)
}

/// `histogram_stdvar` of a native histogram, as Prometheus'
/// `histogramVariance`.
pub(crate) fn native_stdvar(h: &FloatHistogram) -> f64 {
    let mean = h.sum / h.count;
    let (mut variance, mut c) = (0.0, 0.0);
    for b in all_buckets(h) {
        if b.count == 0.0 {
            continue;
        }
        let val = if h.uses_custom_buckets() {
            (b.upper + b.lower) / 2.0
        } else if b.lower <= 0.0 && b.upper >= 0.0 {
            0.0
        } else {
            let v = (b.upper * b.lower).sqrt();
            if b.upper < 0.0 {
                -v
            } else {
                v
            }
        };
        let delta = val - mean;
        (variance, c) = super::kahan_inc(b.count * delta * delta, variance, c);
    }
    (variance + c) / h.count
}

pub(crate) fn native_stddev(h: &FloatHistogram) -> f64 {
    native_stdvar(h).sqrt()
}

pub(crate) fn native_count(h: &FloatHistogram) -> f64 {
    h.count
}

pub(crate) fn native_sum(h: &FloatHistogram) -> f64 {
    h.sum
}

pub(crate) fn native_avg(h: &FloatHistogram) -> f64 {
    h.sum / h.count
}
