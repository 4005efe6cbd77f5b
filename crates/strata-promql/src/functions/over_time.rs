//! `<aggregation>_over_time` functions: one value from all samples in a
//! window. Every function gets a non-empty window.

use super::{kahan_inc, quantile};
use crate::value::{Point, Samples};

pub(crate) fn avg(values: &[f64]) -> f64 {
    let Some(&first) = values.first() else {
        return f64::NAN;
    };
    let (mut sum, mut count) = (first, 1.0);
    let (mut mean, mut c) = (0.0, 0.0);
    let mut incremental = false;
    for (i, &v) in values.iter().enumerate().skip(1) {
        count = (i + 1) as f64;
        if !incremental {
            let (s, nc) = kahan_inc(v, sum, c);
            if !s.is_infinite() {
                (sum, c) = (s, nc);
                continue;
            }
            incremental = true;
            mean = sum / (count - 1.0);
            c /= count - 1.0;
        }
        let q = (count - 1.0) / count;
        (mean, c) = kahan_inc(v / count, q * mean, q * c);
    }
    if incremental {
        mean + c
    } else {
        sum / count + c / count
    }
}

pub(crate) fn sum(values: &[f64]) -> f64 {
    let (mut sum, mut c) = (0.0, 0.0);
    for &v in values {
        (sum, c) = kahan_inc(v, sum, c);
    }
    if sum.is_infinite() {
        sum
    } else {
        sum + c
    }
}

pub(crate) fn count(values: &[f64]) -> f64 {
    values.len() as f64
}

pub(crate) fn max(values: &[f64]) -> f64 {
    let mut m = values.first().copied().unwrap_or(f64::NAN);
    for &v in values {
        if v > m || m.is_nan() {
            m = v;
        }
    }
    m
}

pub(crate) fn min(values: &[f64]) -> f64 {
    let mut m = values.first().copied().unwrap_or(f64::NAN);
    for &v in values {
        if v < m || m.is_nan() {
            m = v;
        }
    }
    m
}

pub(crate) fn last(values: &[f64]) -> f64 {
    values.last().copied().unwrap_or(f64::NAN)
}

pub(crate) fn present(_values: &[f64]) -> f64 {
    1.0
}

pub(crate) fn quantile_over(q: f64, values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    quantile(q, &mut values)
}

/// Population variance with Kahan-compensated running mean, as Prometheus'
/// `varianceOverTime`.
pub(crate) fn stdvar(values: &[f64]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &v in values {
        count += 1.0;
        let delta = v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

pub(crate) fn stddev(values: &[f64]) -> f64 {
    stdvar(values).sqrt()
}

/// The median absolute deviation from the median; NaN when a value is
/// NaN, as Prometheus' `mad_over_time`.
pub(crate) fn mad(values: &[f64]) -> f64 {
    if values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut values = values.to_vec();
    let median = quantile(0.5, &mut values);
    for v in &mut values {
        *v = (*v - median).abs();
    }
    quantile(0.5, &mut values)
}

/// The time, in seconds, of the value `better` prefers over all others
/// (the last of equal ones when `better` accepts ties), NaN being passed
/// over, as Prometheus' `compareOverTime`.
pub(crate) fn ts_of_best(w: Samples<'_>, better: fn(f64, f64) -> bool) -> Option<f64> {
    let first = w.first()?;
    let (mut best, mut t) = (first.v, first.t);
    for p in w.points() {
        if better(p.v, best) || best.is_nan() {
            (best, t) = (p.v, p.t);
        }
    }
    Some(t as f64 / 1000.0)
}

/// Holt's linear (double exponential) smoothing of `values` with smoothing
/// factor `sf` and trend factor `tf`, as Prometheus'
/// `funcDoubleExponentialSmoothing`; `None` below two values.
pub(crate) fn double_exponential_smoothing(values: &[f64], sf: f64, tf: f64) -> Option<f64> {
    let (&first, &second) = (values.first()?, values.get(1)?);
    let (mut s0, mut s1, mut b) = (0.0, first, second - first);
    for (i, &v) in values.iter().enumerate().skip(1) {
        // The trend: the first difference at first, then weighed against
        // the change of the smoothed value.
        if i > 1 {
            b = tf * (s1 - s0) + (1.0 - tf) * b;
        }
        (s0, s1) = (s1, sf * v + (1.0 - sf) * (s1 + b));
    }
    Some(s1)
}

/// `integral`'s quadrature rule: 0 left point, 1 right point, 2
/// trapezoidal (the default); `None` for any other value, which Prometheus
/// warns about and integrates by the default.
pub(crate) fn integral_strategy(x: f64) -> Option<u8> {
    (x.is_finite() && x.trunc() == x && (0.0..=2.0).contains(&x)).then_some(x as u8)
}

/// The integral over the window of its samples' values by `strategy`
/// ([`integral_strategy`]), NaN counting as zero, as Prometheus'
/// `funcIntegral`.
pub(crate) fn integral(w: Samples<'_>, strategy: f64) -> f64 {
    let strategy = integral_strategy(strategy).unwrap_or(2);
    let nan_as_zero = |v: f64| if v.is_nan() { 0.0 } else { v };
    let (mut sum, mut c) = (0.0, 0.0);
    let mut prev: Option<Point> = None;
    for p in w.points() {
        let Some(before) = prev.replace(p) else {
            continue;
        };
        let (curr, last) = (nan_as_zero(p.v), nan_as_zero(before.v));
        let (value, c_value) = match strategy {
            0 => (last, 0.0),
            1 => (curr, 0.0),
            _ if last == 0.0 && curr == 0.0 => (0.0, 0.0),
            _ => {
                let (v, vc) = kahan_inc(curr, last, 0.0);
                // Halving first keeps the mean of two large finite values
                // from overflowing.
                if v.is_infinite() && curr.is_finite() && last.is_finite() {
                    kahan_inc(curr / 2.0, last / 2.0, 0.0)
                } else {
                    (v / 2.0, vc / 2.0)
                }
            }
        };
        if value != 0.0 || c_value != 0.0 {
            let dt = (p.t - before.t) as f64 / 1000.0;
            (sum, c) = kahan_inc(value * dt, sum, c + c_value * dt);
        }
    }
    if sum.is_infinite() {
        sum
    } else {
        sum + c
    }
}
