//! Sums and means of histograms with Kahan compensation, as Prometheus'
//! `sum`, `avg` and their `_over_time` functions compute them.

use strata_codec::histogram::{FloatHistogram, CUSTOM_BUCKETS_SCHEMA};

use super::add::adjust_counter_reset;
use super::bounds::{abs_bounds, bits_match, intersect_bounds};
use super::layout::{layout, sparse};
use super::{bound, div, exponential_bound, mul, Combined, IncompatibleSchema};

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
