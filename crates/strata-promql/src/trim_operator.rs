//! The native-histogram trim operators `</` (keep the observations below
//! a value) and `>/` (above it), which `promql-parser` 0.11 does not lex.
//!
//! They bind as the comparisons do, so [`rewrite`] writes each as the
//! comparison of the same direction (`h </ 5` → `h <  5`) and notes which
//! `<` and `>` of the text were trims; once parsed, [`mark`] gives those
//! comparison nodes the trim operator's own token, found in the order the
//! operators stand in the text (a tree walked left to right meets its
//! infix operators in text order).

use promql_parser::parser::token::{TokenId, TokenType, T_GTR, T_LSS};
use promql_parser::parser::Expr;

use crate::query_text::{tokens, Kind};

/// `</`: ids the parser's own tokens do not use.
pub(crate) const T_TRIM_UPPER: TokenId = 1001;
/// `>/`.
pub(crate) const T_TRIM_LOWER: TokenId = 1002;

/// The operator's text.
pub(crate) fn text(op: TokenId) -> Option<&'static str> {
    match op {
        T_TRIM_UPPER => Some("</"),
        T_TRIM_LOWER => Some(">/"),
        _ => None,
    }
}

/// `query` with each trim written as a comparison, and for each `<` and
/// `>` of the result in order, whether it is a trim; `None` without trims.
pub(crate) fn rewrite(query: &str) -> Option<(String, Vec<bool>)> {
    if !query.contains("</") && !query.contains(">/") {
        return None;
    }
    let tokens = tokens(query);
    let mut out = query.to_string();
    let mut trims = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.brace_depth > 0 || !matches!(t.kind, Kind::Sym('<' | '>')) {
            continue;
        }
        let next = tokens.get(i + 1).filter(|n| n.start == t.end);
        match next.map(|n| n.kind) {
            // `<=` and `>=`.
            Some(Kind::Sym('=')) => {}
            Some(Kind::Sym('/')) => {
                trims.push(true);
                // Same length: the other tokens keep their places.
                out.replace_range(t.end..t.end + 1, " ");
            }
            _ => trims.push(false),
        }
    }
    trims.contains(&true).then_some((out, trims))
}

/// Gives the comparisons `trims` names their trim operator, in text order.
pub(crate) fn mark(expr: &mut Expr, trims: &[bool]) {
    let mut seen = 0usize;
    walk(expr, trims, &mut seen);
}

fn walk(e: &mut Expr, trims: &[bool], seen: &mut usize) {
    match e {
        Expr::Aggregate(a) => {
            if let Some(p) = a.param.as_mut() {
                walk(p, trims, seen);
            }
            walk(&mut a.expr, trims, seen);
        }
        Expr::Unary(u) => walk(&mut u.expr, trims, seen),
        Expr::Binary(b) => {
            walk(&mut b.lhs, trims, seen);
            let op = b.op.id();
            if op == T_LSS || op == T_GTR {
                if trims.get(*seen).copied().unwrap_or(false) {
                    let trim = if op == T_LSS {
                        T_TRIM_UPPER
                    } else {
                        T_TRIM_LOWER
                    };
                    b.op = TokenType::new(trim);
                }
                *seen += 1;
            }
            walk(&mut b.rhs, trims, seen);
        }
        Expr::Paren(p) => walk(&mut p.expr, trims, seen),
        Expr::Subquery(s) => walk(&mut s.expr, trims, seen),
        Expr::Call(c) => {
            for a in c.args.args.iter_mut() {
                walk(a, trims, seen);
            }
        }
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::VectorSelector(_)
        | Expr::MatrixSelector(_)
        | Expr::Extension(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promql_parser::parser::token::{T_LOR, T_LTE};

    fn ops(q: &str) -> Vec<TokenId> {
        let (text, trims) = rewrite(q).expect("has trims");
        let mut e = promql_parser::parser::parse(&text).expect("parses");
        mark(&mut e, &trims);
        let mut out = Vec::new();
        collect(&e, &mut out);
        out
    }

    fn collect(e: &Expr, out: &mut Vec<TokenId>) {
        match e {
            Expr::Binary(b) => {
                collect(&b.lhs, out);
                out.push(b.op.id());
                collect(&b.rhs, out);
            }
            Expr::Paren(p) => collect(&p.expr, out),
            Expr::Call(c) => c.args.args.iter().for_each(|a| collect(a, out)),
            Expr::Aggregate(a) => {
                if let Some(p) = &a.param {
                    collect(p, out);
                }
                collect(&a.expr, out);
            }
            _ => {}
        }
    }

    #[test]
    fn trims_are_marked_in_text_order() {
        assert_eq!(ops("h </ 5"), vec![T_TRIM_UPPER]);
        assert_eq!(
            ops("topk(1 > bool 0, h >/ 2) < h </ 3"),
            vec![T_GTR, T_TRIM_LOWER, T_LSS, T_TRIM_UPPER]
        );
        assert_eq!(
            ops("h{a=\"</\"} <= 1 or (h </ -1) > bool 2"),
            vec![T_LTE, T_LOR, T_TRIM_UPPER, T_GTR]
        );
    }

    #[test]
    fn queries_without_trims_are_left_alone() {
        assert!(rewrite("a < b and c >= d").is_none());
        assert!(rewrite("a{x=\"</\"}").is_none());
    }
}
