//! What a binary operator does to one pair of elements, floats or
//! histograms, as Prometheus' `scalarBinop` and `vectorElemBinop`.

use promql_parser::parser::token::{
    T_ADD, T_ATAN2, T_DIV, T_EQLC, T_GTE, T_GTR, T_LSS, T_LTE, T_MOD, T_MUL, T_NEQ, T_POW, T_SUB,
};
use strata_codec::histogram::FloatHistogram;

use super::super::Result;
use crate::annotations as anno;
use crate::error::QueryError;
use crate::float_histogram as fh;
use crate::trim_operator::{T_TRIM_LOWER, T_TRIM_UPPER};

pub(super) fn bool_to_f64(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Go's `math.Mod`: the result has the sign of `x`, as Rust's `%` does.
fn go_mod(x: f64, y: f64) -> f64 {
    x % y
}

pub(crate) fn scalar_binop(op: u16, l: f64, r: f64) -> Result<f64> {
    Ok(match op {
        T_ADD => l + r,
        T_SUB => l - r,
        T_MUL => l * r,
        T_DIV => l / r,
        T_POW => l.powf(r),
        T_MOD => go_mod(l, r),
        T_ATAN2 => l.atan2(r),
        T_EQLC => bool_to_f64(l == r),
        T_NEQ => bool_to_f64(l != r),
        T_GTR => bool_to_f64(l > r),
        T_LSS => bool_to_f64(l < r),
        T_GTE => bool_to_f64(l >= r),
        T_LTE => bool_to_f64(l <= r),
        _ => return Err(QueryError::unsupported(format!("binary operator id {op}"))),
    })
}

/// The value and whether to keep the element, as Prometheus'
/// `vectorElemBinop` for floats.
pub(super) fn elem_binop(op: u16, l: f64, r: f64) -> Result<(f64, bool)> {
    Ok(match op {
        T_EQLC => (l, l == r),
        T_NEQ => (l, l != r),
        T_GTR => (l, l > r),
        T_LSS => (l, l < r),
        T_GTE => (l, l >= r),
        T_LTE => (l, l <= r),
        _ => (scalar_binop(op, l, r)?, true),
    })
}

/// Whether `op` is one of the histogram trim operators `</` and `>/`.
pub(super) fn is_trim(op: u16) -> bool {
    op == T_TRIM_UPPER || op == T_TRIM_LOWER
}

/// The operator's text, as Prometheus' `ItemTypeStr`.
pub(super) fn op_str(op: u16) -> &'static str {
    if let Some(text) = crate::trim_operator::text(op) {
        return text;
    }
    match op {
        T_ADD => "+",
        T_SUB => "-",
        T_MUL => "*",
        T_DIV => "/",
        T_POW => "^",
        T_MOD => "%",
        T_EQLC => "==",
        T_NEQ => "!=",
        T_GTR => ">",
        T_LSS => "<",
        T_GTE => ">=",
        T_LTE => "<=",
        T_ATAN2 => "atan2",
        _ => "",
    }
}

/// The result of an operation on two elements of which at least one is a
/// histogram, as Prometheus' `vectorElemBinop`.
pub(super) struct Elem {
    pub v: f64,
    pub h: Option<FloatHistogram>,
    pub keep: bool,
    /// An annotation the element is kept with.
    pub info: Option<String>,
}

/// Why an element with a histogram gives no result: the annotation.
pub(super) type Dropped = String;

pub(super) fn elem_binop_histogram(
    op: u16,
    l: f64,
    r: f64,
    lh: Option<&FloatHistogram>,
    rh: Option<&FloatHistogram>,
) -> std::result::Result<Elem, Dropped> {
    let kind = |h: Option<&FloatHistogram>| if h.is_some() { "histogram" } else { "float" };
    let incompatible = || anno::incompatible_types_in_bin_op(kind(lh), op_str(op), kind(rh));
    let hist = |h: FloatHistogram| Elem {
        v: 0.0,
        h: Some(h),
        keep: true,
        info: None,
    };
    match (lh, rh) {
        (None, Some(h)) if op == T_MUL => {
            let mut h = h.clone();
            fh::mul(&mut h, l);
            fh::compact(&mut h);
            Ok(hist(h))
        }
        (Some(h), None) if is_trim(op) => {
            let mut h = h.clone();
            fh::trim_buckets(&mut h, r, op == T_TRIM_UPPER);
            Ok(hist(h))
        }
        (Some(h), None) if op == T_MUL || op == T_DIV => {
            let mut h = h.clone();
            if op == T_MUL {
                fh::mul(&mut h, r);
            } else {
                fh::div(&mut h, r);
            }
            fh::compact(&mut h);
            Ok(hist(h))
        }
        (Some(a), Some(b)) if op == T_ADD || op == T_SUB => {
            let mut h = a.clone();
            let operation = if op == T_ADD {
                "addition"
            } else {
                "subtraction"
            };
            let c = fh::add(&mut h, b, op == T_SUB)
                .map_err(|_| anno::incompatible_bucket_layout(op_str(op)))?;
            if op == T_SUB {
                h.counter_reset_hint = strata_codec::histogram::CounterResetHint::Gauge;
            }
            // Prometheus 3 keeps the result of conflicting counter resets
            // in a binary operation, without a word.
            fh::compact(&mut h);
            Ok(Elem {
                info: c
                    .nhcb_bounds_reconciled
                    .then(|| anno::mismatched_custom_buckets(operation)),
                ..hist(h)
            })
        }
        (Some(a), Some(b)) if op == T_EQLC || op == T_NEQ => {
            let equal = fh::equals(a, b);
            Ok(Elem {
                keep: equal == (op == T_EQLC),
                ..hist(a.clone())
            })
        }
        _ => Err(incompatible()),
    }
}
