//! Element-wise math on instant vectors: `abs`, `ln`, trigonometry, ...

/// Degrees from radians (`deg`): one multiplication by 180/π, as
/// Prometheus does, so a value near the float maximum does not overflow
/// on the way.
pub(crate) fn deg(v: f64) -> f64 {
    v * DEGREES_PER_RADIAN
}

/// Radians from degrees (`rad`): one multiplication by π/180.
pub(crate) fn rad(v: f64) -> f64 {
    v * RADIANS_PER_DEGREE
}

/// 180/π and π/180 rounded once, as Go's constant arithmetic gives them
/// to Prometheus.
const DEGREES_PER_RADIAN: f64 = 57.295_779_513_082_32;
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

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

/// Go's `math.Max` (`max`) or `math.Min`: NaN when either is, and +0
/// above -0.
pub(crate) fn go_extremum(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == 0.0 && b == 0.0 {
        let negative = if max {
            a.is_sign_negative() && b.is_sign_negative()
        } else {
            a.is_sign_negative() || b.is_sign_negative()
        };
        return if negative { -0.0 } else { 0.0 };
    }
    if (a > b) == max {
        a
    } else {
        b
    }
}
