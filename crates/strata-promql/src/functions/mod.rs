//! PromQL functions as plain computations over samples, one file per family,
//! and the [`registry`] of every function Strata evaluates. The evaluator
//! (`eval::call`, `eval::matrix_call`) decides which inputs each one sees.

pub(crate) mod histogram;
pub(crate) mod labels;
pub(crate) mod math;
pub(crate) mod over_time;
pub(crate) mod rate;
pub(crate) mod registry;
pub(crate) mod time;

/// Kahan-Babuska (Neumaier) summation step, as Prometheus' `kahansum.Inc`.
pub(crate) fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
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

/// The `q`-quantile of `values` (sorted in place), as Prometheus' `quantile`.
pub(crate) fn quantile(q: f64, values: &mut [f64]) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    // NaN sorts first, as Go's sort of vectorByValueHeap puts it.
    values.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    let at = |i: f64| values.get(i as usize).copied().unwrap_or(f64::NAN);
    at(lower) * (1.0 - weight) + at(upper) * weight
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest representation that
/// round-trips, never in exponent form; `NaN`, `+Inf`, `-Inf`.
pub fn format_go_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f == f64::INFINITY {
        "+Inf".into()
    } else if f == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{f}")
    }
}
