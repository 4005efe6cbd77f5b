//! Element-wise math on instant vectors: `abs`, `ln`, trigonometry, ...

/// Degrees from radians (`deg`).
pub(crate) fn deg(v: f64) -> f64 {
    v * 180.0 / std::f64::consts::PI
}

/// Radians from degrees (`rad`).
pub(crate) fn rad(v: f64) -> f64 {
    v * std::f64::consts::PI / 180.0
}

/// The sign of `v` (`sgn`): -1, 1, or `v` itself for zero and NaN.
pub(crate) fn sgn(v: f64) -> f64 {
    if v < 0.0 {
        -1.0
    } else if v > 0.0 {
        1.0
    } else {
        v
    }
}

/// `round(v, to_nearest)`: ties round up, as Prometheus does.
pub(crate) fn round(v: f64, to_nearest: f64) -> f64 {
    let inverse = 1.0 / to_nearest;
    (v * inverse + 0.5).floor() / inverse
}

pub(crate) fn clamp(v: f64, min: f64, max: f64) -> f64 {
    // Go's math.Max/Min propagate NaN.
    go_max(min, go_min(max, v))
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}
