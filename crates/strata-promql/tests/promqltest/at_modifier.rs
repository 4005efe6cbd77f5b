//! Prometheus' runner checks that an instant query answers the same when
//! its selectors are pinned to the evaluation time with `@` and it runs at
//! other times (`atModifierTestCases` in `promql/promqltest/test.go`).

use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use promql_parser::parser::{self, AtModifier, Expr};

/// Functions whose answer depends on the evaluation time even when their
/// arguments do not (Prometheus' `AtModifierUnsafeFunctions`).
const UNSAFE: &[&str] = &[
    "days_in_month",
    "day_of_month",
    "day_of_week",
    "day_of_year",
    "end",
    "hour",
    "minute",
    "month",
    "year",
    "predict_linear",
    "range",
    "start",
    "step",
    "time",
    "timestamp",
];

static BYTE_ESCAPE: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\\(x[0-9a-fA-F]{2}|[0-7]{3})").unwrap());

/// The query with `@ at` on each selector and subquery outside a subquery
/// (one already pinned keeps its time), and the times to run it at; none
/// for a query that does not parse, calls a time-dependent function or
/// holds a byte escape.
pub fn variants(query: &str, at_ms: i64) -> Vec<(String, i64)> {
    // `promql-parser` prints a string as the text it read, and reads the
    // byte escapes `\xHH` and `\NNN` as code points, not as Go's bytes: a
    // query holding them would not come back the same.
    if BYTE_ESCAPE.is_match(query) {
        return Vec::new();
    }
    let Ok(mut expr) = parser::parse(query) else {
        return Vec::new();
    };
    let pinned = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms.max(0) as u64);
    if at_ms < 0 || !pin(&mut expr, pinned) {
        return Vec::new();
    }
    let text = expr.to_string();
    let times = if at_ms == 0 {
        vec![-1000, 0, 1000]
    } else {
        vec![-10 * at_ms, 0, at_ms / 5, at_ms, 10 * at_ms]
    };
    times.into_iter().map(|t| (text.clone(), t)).collect()
}

/// Sets `@` as Prometheus' runner does; false when a time-dependent
/// function rules the variants out.
fn pin(expr: &mut Expr, at: SystemTime) -> bool {
    let set = |m: &mut Option<AtModifier>| {
        if !matches!(m, Some(AtModifier::At(_))) {
            *m = Some(AtModifier::At(at));
        }
    };
    match expr {
        Expr::VectorSelector(vs) => set(&mut vs.at),
        Expr::MatrixSelector(ms) => set(&mut ms.vs.at),
        Expr::Subquery(sq) => {
            // Selectors inside a pinned subquery are left alone.
            set(&mut sq.at);
            return safe(&sq.expr);
        }
        Expr::Aggregate(a) => {
            let param_ok = a.param.as_deref_mut().is_none_or(|p| pin(p, at));
            return pin(&mut a.expr, at) && param_ok;
        }
        Expr::Unary(u) => return pin(&mut u.expr, at),
        Expr::Binary(b) => {
            let lhs = pin(&mut b.lhs, at);
            return pin(&mut b.rhs, at) && lhs;
        }
        Expr::Paren(p) => return pin(&mut p.expr, at),
        Expr::Call(c) => {
            let mut ok = !UNSAFE.contains(&c.func.name);
            for arg in &mut c.args.args {
                ok &= pin(arg, at);
            }
            return ok;
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
    true
}

/// Whether no time-dependent function is called under `expr`.
fn safe(expr: &Expr) -> bool {
    match expr {
        Expr::Subquery(sq) => safe(&sq.expr),
        Expr::Aggregate(a) => safe(&a.expr) && a.param.as_deref().is_none_or(safe),
        Expr::Unary(u) => safe(&u.expr),
        Expr::Binary(b) => safe(&b.lhs) && safe(&b.rhs),
        Expr::Paren(p) => safe(&p.expr),
        Expr::Call(c) => !UNSAFE.contains(&c.func.name) && c.args.args.iter().all(|a| safe(a)),
        _ => true,
    }
}
