//! `start()`, `end()`, `range()` and `step()`: the query's own start, end,
//! span and step in seconds, folded into numbers before anything is
//! planned, as Prometheus' `foldQueryContextFunctions` does. They keep
//! the query's values inside subqueries too.

use promql_parser::parser::{Expr, NumberLiteral};

/// Replaces each call of the four in `expr` by its number, for a query
/// from `start` to `end` (ms) every `interval`; `step()` is 0 when the two
/// are the same time (an instant query).
pub(crate) fn fold(expr: &mut Expr, start: i64, end: i64, interval: i64) {
    let seconds = |ms: i64| ms as f64 / 1e3;
    let value = |name: &str| match name {
        "start" => Some(seconds(start)),
        "end" => Some(seconds(end)),
        "range" => Some(seconds(end - start)),
        "step" => Some(if start == end { 0.0 } else { seconds(interval) }),
        _ => None,
    };
    let mut stack: Vec<&mut Expr> = vec![expr];
    while let Some(e) = stack.pop() {
        if let Expr::Call(c) = e {
            if c.args.args.is_empty() {
                if let Some(val) = value(c.func.name) {
                    *e = Expr::NumberLiteral(NumberLiteral { val });
                    continue;
                }
            }
        }
        match e {
            Expr::Aggregate(a) => {
                stack.push(&mut a.expr);
                if let Some(p) = a.param.as_mut() {
                    stack.push(p);
                }
            }
            Expr::Unary(u) => stack.push(&mut u.expr),
            Expr::Binary(b) => {
                stack.push(&mut b.lhs);
                stack.push(&mut b.rhs);
            }
            Expr::Paren(p) => stack.push(&mut p.expr),
            Expr::Subquery(s) => stack.push(&mut s.expr),
            Expr::Call(c) => stack.extend(c.args.args.iter_mut().map(|a| &mut **a)),
            Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::VectorSelector(_)
            | Expr::MatrixSelector(_)
            | Expr::Extension(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(q: &str, start: i64, end: i64, interval: i64) -> String {
        let mut e = promql_parser::parser::parse(q).expect("parses");
        fold(&mut e, start, end, interval);
        e.to_string()
    }

    #[test]
    fn the_four_become_the_query_times_in_seconds() {
        assert_eq!(
            folded("end() - start() + range() * step()", 10_000, 70_000, 15_000),
            "70 - 10 + 60 * 15"
        );
        assert_eq!(folded("vector(step())", 5_000, 5_000, 1), "vector(0)");
        assert_eq!(
            folded("max_over_time(vector(range())[5m:1m])", 0, 60_000, 1_000),
            "max_over_time(vector(60)[5m:1m])"
        );
    }
}
