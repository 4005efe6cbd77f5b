//! Element-wise math on instant vectors: `abs`, `ln`, trigonometry, ...

/// The element-wise function called `name`, if it is one.
pub(crate) fn simple(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "abs" => f64::abs,
        "ceil" => f64::ceil,
        "floor" => f64::floor,
        "exp" => f64::exp,
        "sqrt" => f64::sqrt,
        "ln" => f64::ln,
        "log2" => f64::log2,
        "log10" => f64::log10,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "atan" => f64::atan,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        "tanh" => f64::tanh,
        "asinh" => f64::asinh,
        "acosh" => f64::acosh,
        "atanh" => f64::atanh,
        "deg" => |v| v * 180.0 / std::f64::consts::PI,
        "rad" => |v| v * std::f64::consts::PI / 180.0,
        "sgn" => sgn,
        _ => return None,
    })
}

fn sgn(v: f64) -> f64 {
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
