//! `histogram_quantile` over classic (`le`-labelled) buckets, as
//! Prometheus' `BucketQuantile`.

/// One classic bucket: its upper bound and cumulative count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bucket {
    pub upper_bound: f64,
    pub count: f64,
}

const SMALL_DELTA_TOLERANCE: f64 = 1e-12;

pub(crate) fn bucket_quantile(q: f64, buckets: &mut Vec<Bucket>) -> f64 {
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
    ensure_monotonic(buckets);
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

/// Forces counts to be monotonic, ignoring tiny float noise.
fn ensure_monotonic(buckets: &mut [Bucket]) {
    let Some(first) = buckets.first() else {
        return;
    };
    let mut prev = first.count;
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
            continue;
        }
        prev = curr;
    }
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
