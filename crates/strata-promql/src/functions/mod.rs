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

/// The order `quantile` ranks values in: NaN first, as Go's sort of
/// vectorByValueHeap puts it, then ascending.
fn nan_first(a: &f64, b: &f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// The `q`-quantile of `values` (reordered in place), as Prometheus'
/// `quantile`.
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
    let order = nan_first;
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    // The two order statistics alone, not a whole sort: the `lower`-th
    // value in place, and the least of those after it.
    let (_, &mut low, after) = values.select_nth_unstable_by(lower as usize, order);
    // An exact rank is that order statistic: weighting an infinite
    // neighbour by zero would make it NaN.
    if weight == 0.0 {
        return low;
    }
    let high = if upper > lower {
        after.iter().copied().min_by(order).unwrap_or(f64::NAN)
    } else {
        low
    };
    low * (1.0 - weight) + high * weight
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// The plain way: sort everything, then read the two ranks.
    fn by_sorting(q: f64, values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(super::nan_first);
        let n = v.len() as f64;
        let rank = q * (n - 1.0);
        let lower = rank.floor().max(0.0);
        let upper = (lower + 1.0).min(n - 1.0);
        let weight = rank - rank.floor();
        let at = |i: f64| v.get(i as usize).copied().unwrap_or(f64::NAN);
        if weight == 0.0 {
            return at(lower);
        }
        at(lower) * (1.0 - weight) + at(upper) * weight
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => -1e3f64..1e3,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => (0u8..4).prop_map(f64::from),
        ]
    }

    proptest! {
        #[test]
        fn quantile_equals_sorting(
            values in proptest::collection::vec(value(), 1..60),
            q in 0.0f64..=1.0,
        ) {
            let want = by_sorting(q, &values);
            let got = super::quantile(q, &mut values.clone());
            prop_assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{got} against {want}");
        }
    }
}
