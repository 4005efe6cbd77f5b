//! A rule's expression, parsed as Strata's query API parses a query and
//! held to what Prometheus' parser takes by default.

use promql_parser::parser::Expr;

/// Parses `expr` as a query, with the engine's limits on nesting and
/// string length so that a rule that checks is a rule the engine takes,
/// and refuses what Prometheus 3 refuses unless a feature flag allows it
/// (experimental functions, `limitk`, `limit_ratio`, `fill` modifiers):
/// rule files stay portable to Prometheus, as promtool checks them.
pub(crate) fn parse_expr(expr: &str) -> Result<(), String> {
    let limit = strata_promql::QueryLimits::default().max_regex_bytes;
    let parsed = strata_promql::engine::parse_query(expr, limit).map_err(|e| {
        let text = e.to_string();
        match text.strip_prefix("invalid parameter \"query\": ") {
            Some(rest) => rest.to_string(),
            None => text,
        }
    })?;
    not_experimental(&parsed).map_err(|e| format!("parse error: {e}"))
}

fn not_experimental(expr: &Expr) -> Result<(), String> {
    match expr {
        Expr::Aggregate(a) => {
            let op = a.op.to_string();
            if op == "limitk" || op == "limit_ratio" {
                return Err(format!(
                    "{op}() is experimental and must be enabled with \
                     --enable-feature=promql-experimental-functions"
                ));
            }
            if let Some(p) = &a.param {
                not_experimental(p)?;
            }
            not_experimental(&a.expr)
        }
        Expr::Unary(u) => not_experimental(&u.expr),
        Expr::Binary(b) => {
            if let Some(m) = &b.modifier {
                if m.fill_values.lhs.is_some() || m.fill_values.rhs.is_some() {
                    return Err("binop fill modifiers are experimental and not enabled".into());
                }
            }
            not_experimental(&b.lhs)?;
            not_experimental(&b.rhs)
        }
        Expr::Paren(p) => not_experimental(&p.expr),
        Expr::Subquery(s) => not_experimental(&s.expr),
        Expr::Call(c) => {
            if c.func.experimental {
                return Err(format!("function {:?} is not enabled", c.func.name));
            }
            c.args.args.iter().try_for_each(|a| not_experimental(a))
        }
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::VectorSelector(_)
        | Expr::MatrixSelector(_)
        | Expr::Extension(_) => Ok(()),
    }
}
