//! `<aggregation>_over_time` functions: one value from all samples in a
//! window. Every function gets a non-empty window.

use super::{kahan_inc, quantile};
use crate::value::Point;

pub(crate) fn avg(points: &[Point]) -> f64 {
    let Some(first) = points.first() else {
        return f64::NAN;
    };
    let (mut sum, mut count) = (first.v, 1.0);
    let (mut mean, mut c) = (0.0, 0.0);
    let mut incremental = false;
    for (i, p) in points.iter().enumerate().skip(1) {
        count = (i + 1) as f64;
        if !incremental {
            let (s, nc) = kahan_inc(p.v, sum, c);
            if !s.is_infinite() {
                (sum, c) = (s, nc);
                continue;
            }
            incremental = true;
            mean = sum / (count - 1.0);
            c /= count - 1.0;
        }
        let q = (count - 1.0) / count;
        (mean, c) = kahan_inc(p.v / count, q * mean, q * c);
    }
    if incremental {
        mean + c
    } else {
        sum / count + c / count
    }
}

pub(crate) fn sum(points: &[Point]) -> f64 {
    let (mut sum, mut c) = (0.0, 0.0);
    for p in points {
        (sum, c) = kahan_inc(p.v, sum, c);
    }
    if sum.is_infinite() {
        sum
    } else {
        sum + c
    }
}

pub(crate) fn count(points: &[Point]) -> f64 {
    points.len() as f64
}

pub(crate) fn max(points: &[Point]) -> f64 {
    let mut m = points.first().map_or(f64::NAN, |p| p.v);
    for p in points {
        if p.v > m || m.is_nan() {
            m = p.v;
        }
    }
    m
}

pub(crate) fn min(points: &[Point]) -> f64 {
    let mut m = points.first().map_or(f64::NAN, |p| p.v);
    for p in points {
        if p.v < m || m.is_nan() {
            m = p.v;
        }
    }
    m
}

pub(crate) fn last(points: &[Point]) -> f64 {
    points.last().map_or(f64::NAN, |p| p.v)
}

pub(crate) fn present(_points: &[Point]) -> f64 {
    1.0
}

pub(crate) fn quantile_over(q: f64, points: &[Point]) -> f64 {
    let mut values: Vec<f64> = points.iter().map(|p| p.v).collect();
    quantile(q, &mut values)
}

/// Population variance with Kahan-compensated running mean, as Prometheus'
/// `varianceOverTime`.
pub(crate) fn stdvar(points: &[Point]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        count += 1.0;
        let delta = p.v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (p.v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

pub(crate) fn stddev(points: &[Point]) -> f64 {
    stdvar(points).sqrt()
}
