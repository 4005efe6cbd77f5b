//! Arithmetic on float native histograms, as Prometheus'
//! `model/histogram/float_histogram.go` does it: adding and subtracting
//! (reconciling schemas, zero thresholds and custom bounds), scaling,
//! reducing the resolution, dropping empty buckets, detecting a counter
//! reset, and iterating over every bucket with its bounds.
//!
//! Buckets are worked on in a sparse form, `(index, count)` pairs in index
//! order, and laid out as spans again afterwards.

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Span, CUSTOM_BUCKETS_SCHEMA};

/// Adding or subtracting histograms of exponential and custom buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncompatibleSchema;

/// What an addition or subtraction met besides its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Combined {
    /// One side said "counter reset", the other "no counter reset".
    pub counter_reset_collision: bool,
    /// Custom bounds differed and were reduced to the ones both have.
    pub nhcb_bounds_reconciled: bool,
}

/// One bucket with its bounds, as Prometheus' `Bucket[float64]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    pub lower: f64,
    pub upper: f64,
    pub lower_inclusive: bool,
    pub upper_inclusive: bool,
    pub count: f64,
    pub index: i32,
}

/// Whether `schema` names custom buckets.
pub fn is_custom(schema: i32) -> bool {
    schema == CUSTOM_BUCKETS_SCHEMA
}

/// The upper bound of exponential bucket `idx` in `schema`, as Prometheus'
/// `getBoundExponential`.
pub fn exponential_bound(idx: i32, schema: i32) -> f64 {
    if schema < 0 {
        let exp = i64::from(idx) << (-schema);
        if exp == 1024 {
            return f64::MAX;
        }
        return ldexp(1.0, exp);
    }
    let frac_idx = idx & ((1 << schema) - 1);
    let frac = exponential_frac(schema, frac_idx);
    let exp = i64::from(idx >> schema) + 1;
    if frac == 0.5 && exp == 1025 {
        return f64::MAX;
    }
    ldexp(frac, exp)
}

/// The bound in `[0.5, 1)` of fraction index `i` in `schema` (0..=8):
/// `2^(i / 2^schema) / 2`, correctly rounded, computed once per schema.
///
/// Prometheus' hard-coded `exponentialBounds` table is not correctly
/// rounded: 341 of its 511 entries differ from these (by -4 to +1 ulps), so
/// bounds printed here can differ from Prometheus' in the last digit.
fn exponential_frac(schema: i32, i: i32) -> f64 {
    static TABLES: [std::sync::OnceLock<Vec<f64>>; 9] = [const { std::sync::OnceLock::new() }; 9];
    let Some(table) = usize::try_from(schema).ok().and_then(|s| TABLES.get(s)) else {
        return f64::NAN;
    };
    let table = table.get_or_init(|| {
        let n = 1u32 << schema;
        (0..n).map(|i| correctly_rounded_frac(i, n)).collect()
    });
    usize::try_from(i)
        .ok()
        .and_then(|i| table.get(i).copied())
        .unwrap_or(f64::NAN)
}

/// The `f64` nearest to `2^(i/n - 1)` (`0 <= i < n`, `n` a power of two):
/// `exp2`'s answer, moved by an ulp while the midpoint to its neighbour,
/// raised to the `n`th power exactly, shows the neighbour is nearer.
fn correctly_rounded_frac(i: u32, n: u32) -> f64 {
    if i == 0 {
        return 0.5;
    }
    // y^n against 2^(i - n), for y in [0.5, 1): y = m * 2^-53.
    let target = i64::from(i) - i64::from(n);
    let mut y = (f64::from(i) / f64::from(n)).exp2() / 2.0;
    for _ in 0..4 {
        let m = (y * 2f64.powi(53)) as u64;
        // The midpoints below and above y: (2m -/+ 1) * 2^-54.
        if pow_cmp(2 * m - 1, -54, n, target) == std::cmp::Ordering::Greater {
            y = f64::from_bits(y.to_bits() - 1);
        } else if pow_cmp(2 * m + 1, -54, n, target) == std::cmp::Ordering::Less {
            y = f64::from_bits(y.to_bits() + 1);
        } else {
            break;
        }
    }
    y
}

/// `(m * 2^e)^n` against `2^target`, exactly (`m` odd).
fn pow_cmp(m: u64, e: i64, n: u32, target: i64) -> std::cmp::Ordering {
    // m^n as little-endian 64-bit limbs.
    let mut limbs: Vec<u64> = vec![1];
    for _ in 0..n {
        let mut carry = 0u128;
        for l in &mut limbs {
            let x = u128::from(*l) * u128::from(m) + carry;
            *l = x as u64;
            carry = x >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    let top = limbs.last().copied().unwrap_or(0);
    let bits = (limbs.len() as i64 - 1) * 64 + (64 - i64::from(top.leading_zeros()));
    // m^n is odd, so it equals no power of two but 1 (m = 1).
    let k = target - e * i64::from(n);
    if m == 1 && k == 0 {
        return std::cmp::Ordering::Equal;
    }
    // 2^k has k + 1 bits; an odd number of as many bits is larger.
    (bits - 1).cmp(&k).then(std::cmp::Ordering::Greater)
}

/// `frac * 2^exp`, exact (as Go's `math.Ldexp`), with over- and underflow.
fn ldexp(frac: f64, exp: i64) -> f64 {
    let mut x = frac;
    let mut e = exp;
    // Steps of at most 2^1000 keep every intermediate representable.
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}

/// The upper bound of bucket `idx` (custom: `-1` is -Inf, `len` is +Inf).
pub fn bound(idx: i32, schema: i32, custom: &[f64]) -> f64 {
    if is_custom(schema) {
        if idx < 0 {
            return f64::NEG_INFINITY;
        }
        return usize::try_from(idx)
            .ok()
            .and_then(|i| custom.get(i).copied())
            .unwrap_or(f64::INFINITY);
    }
    exponential_bound(idx, schema)
}

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
fn reduce_pairs(pairs: &[(i32, f64)], from: i32, to: i32) -> Vec<(i32, f64)> {
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
fn adjust_counter_reset(h: &mut FloatHistogram, other: &FloatHistogram) -> bool {
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

/// The absolute bounds `(lower, upper)` of exponential bucket `idx`.
fn abs_bounds(idx: i32, schema: i32) -> (f64, f64) {
    (
        exponential_bound(idx - 1, schema),
        exponential_bound(idx, schema),
    )
}

/// `h`'s zero count for a zero threshold of at least `larger`, and the
/// threshold it ends up with (larger still when `larger` falls inside a
/// populated bucket), as `zeroCountForLargerThreshold`.
fn zero_count_for_larger_threshold(h: &FloatHistogram, mut larger: f64) -> (f64, f64) {
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

/// The custom bounds both lists have.
fn intersect_bounds(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().copied().filter(|x| b.contains(x)).collect()
}

/// Custom buckets laid out for `bounds`, a subset of `from`: each bucket
/// goes to the first new bucket whose upper bound is at or above its own.
fn map_custom(pairs: &[(i32, f64)], from: &[f64], bounds: &[f64]) -> Vec<(i32, f64)> {
    let mut out: Vec<(i32, f64)> = Vec::new();
    for &(idx, c) in pairs {
        let upper = bound(idx, CUSTOM_BUCKETS_SCHEMA, from);
        let t = bounds.partition_point(|&x| x < upper) as i32;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 += c,
            _ => out.push((t, c)),
        }
    }
    out
}

/// `h += other` (or `h -= other` with `negate`), as Prometheus' `Add` and
/// `Sub`. The result may hold empty buckets; see [`compact`].
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

fn bits_match(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Prometheus' `kahansum.Inc`: `sum + inc` with the compensation `c`.
fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if t.is_infinite() {
        0.0
    } else if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}

/// A running histogram sum with Kahan compensation (Prometheus'
/// `KahanAdd` with its compensation histogram): the compensation terms
/// follow the sum's own buckets.
#[derive(Clone, Debug)]
pub struct KahanSum {
    pub h: FloatHistogram,
    zero: f64,
    count: f64,
    sum: f64,
    /// Compensation of each positive and negative bucket, by index.
    pos: Vec<(i32, f64)>,
    neg: Vec<(i32, f64)>,
}

/// Buckets with their compensation: (index, count, compensation).
type Triples = Vec<(i32, f64, f64)>;

fn triples(pairs: &[(i32, f64)], comp: &[(i32, f64)]) -> Triples {
    pairs
        .iter()
        .map(|&(i, c)| {
            let k = comp.iter().find(|(j, _)| *j == i).map_or(0.0, |x| x.1);
            (i, c, k)
        })
        .collect()
}

/// Merges buckets into a lower schema, counts and compensations summed
/// with compensation (Prometheus' `kahanReduceResolution`).
fn kahan_reduce(t: Triples, from: i32, to: i32) -> Triples {
    if from <= to {
        return t;
    }
    let shift = from - to;
    let mut out: Triples = Vec::with_capacity(t.len());
    for (idx, v, c) in t {
        let target = ((idx - 1) >> shift) + 1;
        match out.last_mut() {
            Some(last) if last.0 == target => {
                (last.1, last.2) = kahan_inc(v, last.1, last.2);
                (last.1, last.2) = kahan_inc(c, last.1, last.2);
            }
            _ => out.push((target, v, c)),
        }
    }
    out
}

/// Custom buckets with compensation mapped onto `bounds`.
fn kahan_map_custom(t: Triples, from: &[f64], bounds: &[f64]) -> Triples {
    let mut out: Triples = Vec::new();
    for (idx, v, c) in t {
        let upper = bound(idx, CUSTOM_BUCKETS_SCHEMA, from);
        let target = bounds.partition_point(|&x| x < upper) as i32;
        match out.last_mut() {
            Some(last) if last.0 == target => {
                (last.1, last.2) = kahan_inc(v, last.1, last.2);
                (last.1, last.2) = kahan_inc(c, last.1, last.2);
            }
            _ => out.push((target, v, c)),
        }
    }
    out
}

/// `a += b` bucket by bucket with compensation (`kahanAddBuckets`).
fn kahan_add_triples(a: Triples, b: &Triples) -> Triples {
    let mut out: Triples = Vec::with_capacity(a.len().max(b.len()));
    let mut a = a.into_iter().peekable();
    for &(ib, vb, cb) in b {
        while let Some(x) = a.next_if(|x| x.0 < ib) {
            out.push(x);
        }
        match a.next_if(|x| x.0 == ib) {
            Some((i, mut v, mut c)) => {
                (v, c) = kahan_inc(vb, v, c);
                if cb != 0.0 {
                    (v, c) = kahan_inc(cb, v, c);
                }
                out.push((i, v, c));
            }
            None => out.push((ib, vb, cb)),
        }
    }
    out.extend(a);
    out
}

impl KahanSum {
    /// A sum of `h` alone.
    pub fn new(h: FloatHistogram) -> Self {
        Self {
            h,
            zero: 0.0,
            count: 0.0,
            sum: 0.0,
            pos: Vec::new(),
            neg: Vec::new(),
        }
    }

    fn side(&self, positive: bool) -> Triples {
        if positive {
            triples(
                &sparse(&self.h.positive_spans, &self.h.positive_buckets),
                &self.pos,
            )
        } else {
            triples(
                &sparse(&self.h.negative_spans, &self.h.negative_buckets),
                &self.neg,
            )
        }
    }

    fn set_side(&mut self, positive: bool, t: &Triples) {
        let pairs: Vec<(i32, f64)> = t.iter().map(|x| (x.0, x.1)).collect();
        let comp: Vec<(i32, f64)> = t.iter().map(|x| (x.0, x.2)).collect();
        if positive {
            (self.h.positive_spans, self.h.positive_buckets) = layout(&pairs);
            self.pos = comp;
        } else {
            (self.h.negative_spans, self.h.negative_buckets) = layout(&pairs);
            self.neg = comp;
        }
    }

    /// The zero count at a zero threshold of at least `larger`, with its
    /// compensation (`zeroCountForLargerThreshold` with `c`).
    fn zero_for_larger(&self, mut larger: f64) -> (f64, f64, f64) {
        let mut cz = self.zero;
        if larger == self.h.zero_threshold {
            return (self.h.zero_count, larger, cz);
        }
        let (pos, neg) = (self.side(true), self.side(false));
        'outer: loop {
            let mut hz = self.h.zero_count;
            for &(idx, v, c) in &pos {
                let (lo, hi) = abs_bounds(idx, self.h.schema);
                if lo >= larger {
                    break;
                }
                (hz, cz) = kahan_inc(v, hz, cz);
                (hz, cz) = kahan_inc(c, hz, cz);
                if hi > larger {
                    if v != 0.0 {
                        larger = hi;
                    }
                    break;
                }
            }
            for &(idx, v, c) in &neg {
                let (lo, hi) = abs_bounds(idx, self.h.schema);
                if lo >= larger {
                    break;
                }
                (hz, cz) = kahan_inc(v, hz, cz);
                (hz, cz) = kahan_inc(c, hz, cz);
                if hi > larger {
                    if v != 0.0 {
                        larger = hi;
                        continue 'outer;
                    }
                    break;
                }
            }
            return (hz, larger, cz);
        }
    }

    /// Adds `other` with compensation (Prometheus' `KahanAdd`).
    pub fn add(&mut self, other: &FloatHistogram) -> Result<Combined, IncompatibleSchema> {
        if self.h.uses_custom_buckets() != other.uses_custom_buckets() {
            return Err(IncompatibleSchema);
        }
        let mut out = Combined {
            counter_reset_collision: adjust_counter_reset(&mut self.h, other),
            ..Combined::default()
        };
        if !self.h.uses_custom_buckets() {
            let (mut ozc, mut oczc, mut ot) = (other.zero_count, 0.0, other.zero_threshold);
            while ot != self.h.zero_threshold {
                if self.h.zero_threshold > ot {
                    let other_sum = KahanSum::new(other.clone());
                    (ozc, ot, oczc) = other_sum.zero_for_larger(self.h.zero_threshold);
                }
                if ot > self.h.zero_threshold {
                    let (zc, t, cz) = self.zero_for_larger(ot);
                    self.h.zero_count = zc;
                    self.h.zero_threshold = t;
                    self.zero = cz;
                    for positive in [true, false] {
                        let (schema, zt) = (self.h.schema, self.h.zero_threshold);
                        let kept: Triples = self
                            .side(positive)
                            .into_iter()
                            .filter(|x| exponential_bound(x.0, schema) > zt)
                            .collect();
                        self.set_side(positive, &kept);
                    }
                }
            }
            (self.h.zero_count, self.zero) = kahan_inc(ozc, self.h.zero_count, self.zero);
            (self.h.zero_count, self.zero) = kahan_inc(oczc, self.h.zero_count, self.zero);
        }
        (self.h.count, self.count) = kahan_inc(other.count, self.h.count, self.count);
        (self.h.sum, self.sum) = kahan_inc(other.sum, self.h.sum, self.sum);
        let other_pos: Triples = sparse(&other.positive_spans, &other.positive_buckets)
            .into_iter()
            .map(|(i, v)| (i, v, 0.0))
            .collect();
        if self.h.uses_custom_buckets() {
            let mine = self.side(true);
            let sum = if bits_match(&self.h.custom_values, &other.custom_values) {
                kahan_add_triples(mine, &other_pos)
            } else {
                out.nhcb_bounds_reconciled = true;
                let bounds = intersect_bounds(&self.h.custom_values, &other.custom_values);
                let a = kahan_map_custom(mine, &self.h.custom_values, &bounds);
                let b = kahan_map_custom(other_pos, &other.custom_values, &bounds);
                self.h.custom_values = bounds;
                kahan_add_triples(a, &b)
            };
            self.set_side(true, &sum);
            return Ok(out);
        }
        let other_neg: Triples = sparse(&other.negative_spans, &other.negative_buckets)
            .into_iter()
            .map(|(i, v)| (i, v, 0.0))
            .collect();
        let schema = self.h.schema.min(other.schema);
        let (hs, os) = (self.h.schema, other.schema);
        let zt = self.h.zero_threshold;
        for (positive, theirs) in [(true, other_pos), (false, other_neg)] {
            let mine = kahan_reduce(self.side(positive), hs, schema);
            let theirs: Triples = kahan_reduce(theirs, os, schema)
                .into_iter()
                .filter(|x| exponential_bound(x.0, schema) > zt)
                .collect();
            let sum = kahan_add_triples(mine, &theirs);
            self.h.schema = schema;
            self.set_side(positive, &sum);
        }
        self.h.schema = schema;
        Ok(out)
    }

    /// Scales the sum and its compensation (`Mul` of both).
    pub fn scale(&mut self, f: f64) {
        mul(&mut self.h, f);
        self.zero *= f;
        self.count *= f;
        self.sum *= f;
        self.pos.iter_mut().for_each(|x| x.1 *= f);
        self.neg.iter_mut().for_each(|x| x.1 *= f);
    }

    /// Divides the sum and its compensation (`Div` of both).
    pub fn divide(&mut self, f: f64) {
        div(&mut self.h, f);
        self.zero /= f;
        self.count /= f;
        self.sum /= f;
        self.pos.iter_mut().for_each(|x| x.1 /= f);
        self.neg.iter_mut().for_each(|x| x.1 /= f);
    }

    /// Whether a count or the sum went infinite (`HasOverflow`).
    pub fn has_overflow(&self) -> bool {
        let h = &self.h;
        [h.zero_count, h.count, h.sum]
            .iter()
            .chain(&h.positive_buckets)
            .chain(&h.negative_buckets)
            .chain(&h.custom_values)
            .any(|v| v.is_infinite())
    }

    /// The sum with its compensation added (`Add` of the compensation
    /// histogram, which has the sum's layout).
    pub fn finish(mut self) -> FloatHistogram {
        self.h.zero_count += self.zero;
        self.h.count += self.count;
        self.h.sum += self.sum;
        for positive in [true, false] {
            let t: Triples = self
                .side(positive)
                .into_iter()
                .map(|(i, v, c)| (i, v + c, 0.0))
                .collect();
            self.set_side(positive, &t);
        }
        self.h
    }
}

/// A running mean of histograms as Prometheus' `avg` and `avg_over_time`
/// compute it: a compensated sum divided at the end, switching to an
/// incremental mean once the sum overflows.
#[derive(Clone, Debug)]
pub struct KahanMean {
    sum: KahanSum,
    count: f64,
    incremental: bool,
}

impl KahanMean {
    pub fn new(h: FloatHistogram) -> Self {
        Self {
            sum: KahanSum::new(h),
            count: 1.0,
            incremental: false,
        }
    }

    /// Adds `h`; what [`KahanSum::add`] met.
    pub fn add(&mut self, h: &FloatHistogram) -> Result<Combined, IncompatibleSchema> {
        self.count += 1.0;
        if !self.incremental {
            let mut next = self.sum.clone();
            let c = next.add(h)?;
            if !next.has_overflow() {
                self.sum = next;
                return Ok(c);
            }
            self.incremental = true;
            self.sum.divide(self.count - 1.0);
        }
        let q = (self.count - 1.0) / self.count;
        self.sum.scale(q);
        let mut to_add = h.clone();
        div(&mut to_add, self.count);
        self.sum.add(&to_add)
    }

    /// The mean.
    pub fn finish(mut self) -> FloatHistogram {
        if !self.incremental {
            self.sum.divide(self.count);
        }
        self.sum.finish()
    }
}

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

/// One side's buckets with bounds, index order (ascending magnitude).
fn side_buckets(h: &FloatHistogram, positive: bool) -> Vec<Bucket> {
    let (spans, buckets) = if positive {
        (&h.positive_spans, &h.positive_buckets)
    } else {
        (&h.negative_spans, &h.negative_buckets)
    };
    let custom: &[f64] = if positive { &h.custom_values } else { &[] };
    sparse(spans, buckets)
        .into_iter()
        .map(|(idx, count)| {
            let (up, low) = (
                bound(idx, h.schema, custom),
                bound(idx - 1, h.schema, custom),
            );
            let (lower, upper) = if positive { (low, up) } else { (-up, -low) };
            let (lower_inclusive, upper_inclusive) = if h.uses_custom_buckets() {
                (idx == 0, true)
            } else {
                (lower < 0.0, upper > 0.0)
            };
            Bucket {
                lower,
                upper,
                lower_inclusive,
                upper_inclusive,
                count,
                index: idx,
            }
        })
        .collect()
}

/// Go's `%g` of a float, as `strconv.FormatFloat(f, 'g', -1, 64)`:
/// shortest digits, in exponent form below 1e-4 and from 1e6 up.
fn go_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// Prometheus' `FloatHistogram.String()`: `{count:20, sum:10,
/// [-2,-1):2, [-0.001,0.001]:2, (0.5,1]:1}`, populated buckets lowest
/// first (what `count_values` labels a histogram with).
pub fn to_string(h: &FloatHistogram) -> String {
    let mut out = format!("{{count:{}, sum:{}", go_g(h.count), go_g(h.sum));
    let bucket = |out: &mut String, b: &Bucket| {
        out.push_str(", ");
        out.push(if b.lower_inclusive { '[' } else { '(' });
        out.push_str(&go_g(b.lower));
        out.push(',');
        out.push_str(&go_g(b.upper));
        out.push(if b.upper_inclusive { ']' } else { ')' });
        out.push(':');
        out.push_str(&go_g(b.count));
    };
    for b in side_buckets(h, false)
        .iter()
        .rev()
        .filter(|b| b.count != 0.0)
    {
        bucket(&mut out, b);
    }
    if h.zero_count != 0.0 {
        let zt = h.zero_threshold;
        bucket(
            &mut out,
            &Bucket {
                lower: -zt,
                upper: zt,
                lower_inclusive: true,
                upper_inclusive: true,
                count: h.zero_count,
                index: 0,
            },
        );
    }
    for b in side_buckets(h, true).iter().filter(|b| b.count != 0.0) {
        bucket(&mut out, b);
    }
    out.push('}');
    out
}

/// Every bucket, lowest first: negative ones, the zero bucket (when
/// populated), positive ones, bounds next to the zero bucket clipped to its
/// threshold, as Prometheus' `AllBucketIterator`.
pub fn all_buckets(h: &FloatHistogram) -> Vec<Bucket> {
    let zt = h.zero_threshold;
    let clip = |mut b: Bucket| {
        if b.upper < 0.0 && b.upper > -zt {
            b.upper = -zt;
        } else if b.lower > 0.0 && b.lower < zt {
            b.lower = zt;
        }
        b
    };
    let mut out: Vec<Bucket> = side_buckets(h, false).into_iter().rev().map(clip).collect();
    if h.zero_count > 0.0 {
        out.push(Bucket {
            lower: -zt,
            upper: zt,
            lower_inclusive: true,
            upper_inclusive: true,
            count: h.zero_count,
            index: 0,
        });
    }
    out.extend(side_buckets(h, true).into_iter().map(clip));
    out
}

#[cfg(test)]
mod tests;
