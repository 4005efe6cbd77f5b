//! `info()`'s second argument as Prometheus reads it. It is a label
//! selector that picks info series and their labels, not a vector, so
//! Prometheus accepts one whose matchers all match the empty string
//! (`info(x, {data=~".*"})`, `info(x, {__name__!="target_info"})`).
//! `promql-parser` refuses every such selector ("vector selector must
//! contain at least one non-empty matcher") wherever it is.
//!
//! When it does, [`parse`] parses the query again with a placeholder
//! matcher that matches no empty value at the start of each `info()` label
//! selector, and removes it from the tree: the query parses as Prometheus
//! parses it, and a selector that is refused elsewhere still is.

use promql_parser::label::Matcher as ParserMatcher;
use promql_parser::parser::{self, Expr};

/// What `promql-parser` answers for a selector without a non-empty matcher.
const EMPTY_SELECTOR: &str = "vector selector must contain at least one non-empty matcher";

/// The label name of the placeholder matcher.
const PLACEHOLDER: &str = "__strata_info_selector__";

/// `query` parsed, `info()` label selectors of empty-matching matchers
/// accepted; `promql-parser`'s own error when the query fails otherwise.
pub(crate) fn parse(query: &str) -> Result<Expr, String> {
    let error = match parser::parse(query) {
        Ok(expr) => return Ok(expr),
        Err(e) => e,
    };
    if !error.contains(EMPTY_SELECTOR) {
        return Err(error);
    }
    let Some(marked) = with_placeholders(query) else {
        return Err(error);
    };
    let Ok(mut expr) = parser::parse(&marked) else {
        return Err(error);
    };
    remove_placeholders(&mut expr);
    Ok(expr)
}

/// `query` with the placeholder matcher first in the label selector of each
/// `info(` call; `None` when it has none.
fn with_placeholders(query: &str) -> Option<String> {
    let mut out = String::with_capacity(query.len() + 64);
    let mut changed = false;
    let mut rest = query;
    // Open `info(` calls: the bracket depth inside each.
    let mut calls: Vec<usize> = Vec::new();
    while let Some(c) = rest.chars().next() {
        let len = c.len_utf8();
        match c {
            '"' | '\'' | '`' => {
                let end = literal_end(rest, c);
                out.push_str(rest.get(..end)?);
                rest = rest.get(end..)?;
                continue;
            }
            '#' => {
                let end = rest.find('\n').unwrap_or(rest.len());
                out.push_str(rest.get(..end)?);
                rest = rest.get(end..)?;
                continue;
            }
            _ if c.is_alphabetic() || c == '_' => {
                let end = rest
                    .find(|x: char| !(x.is_alphanumeric() || x == '_' || x == ':'))
                    .unwrap_or(rest.len());
                let word = rest.get(..end)?;
                out.push_str(word);
                rest = rest.get(end..)?;
                if word == "info" && rest.trim_start().starts_with('(') {
                    let paren = rest.len() - rest.trim_start().len();
                    out.push_str(rest.get(..=paren)?);
                    rest = rest.get(paren + 1..)?;
                    calls.push(0);
                }
                continue;
            }
            '(' | '[' | '{' => {
                if let Some(depth) = calls.last_mut() {
                    *depth += 1;
                }
            }
            ')' | ']' | '}' => match calls.last_mut() {
                Some(0) => {
                    calls.pop();
                }
                Some(depth) => *depth -= 1,
                None => {}
            },
            ',' if calls.last() == Some(&0) => {
                out.push(',');
                rest = rest.get(len..)?;
                let spaces = rest.len() - rest.trim_start().len();
                out.push_str(rest.get(..spaces)?);
                rest = rest.get(spaces..)?;
                if rest.starts_with('{') {
                    let empty = rest.get(1..)?.trim_start().starts_with('}');
                    out.push('{');
                    out.push_str(PLACEHOLDER);
                    out.push_str(if empty { "=\"1\"" } else { "=\"1\", " });
                    rest = rest.get(1..)?;
                    changed = true;
                    if let Some(depth) = calls.last_mut() {
                        *depth += 1;
                    }
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        rest = rest.get(len..)?;
    }
    changed.then_some(out)
}

/// The length of the string literal `s` starts with (quote to quote),
/// escapes skipped in `"` and `'` literals; all of `s` when unterminated.
fn literal_end(s: &str, quote: char) -> usize {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' && quote != '`' {
            escaped = true;
        } else if c == quote {
            return i + c.len_utf8();
        }
    }
    s.len()
}

/// Removes the placeholder matcher from every selector of `expr`.
fn remove_placeholders(expr: &mut Expr) {
    match expr {
        Expr::VectorSelector(vs) => strip(&mut vs.matchers.matchers),
        Expr::MatrixSelector(ms) => strip(&mut ms.vs.matchers.matchers),
        Expr::Aggregate(a) => {
            remove_placeholders(&mut a.expr);
            if let Some(p) = a.param.as_deref_mut() {
                remove_placeholders(p);
            }
        }
        Expr::Unary(u) => remove_placeholders(&mut u.expr),
        Expr::Binary(b) => {
            remove_placeholders(&mut b.lhs);
            remove_placeholders(&mut b.rhs);
        }
        Expr::Paren(p) => remove_placeholders(&mut p.expr),
        Expr::Subquery(s) => remove_placeholders(&mut s.expr),
        Expr::Call(c) => c.args.args.iter_mut().for_each(|a| remove_placeholders(a)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

fn strip(matchers: &mut Vec<ParserMatcher>) {
    matchers.retain(|m| m.name != PLACEHOLDER);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_go_in_info_label_selectors_only() {
        let q = r#"info(x{a="{"}, {d=~".*"}) + info(sum(rate(y[5m])) by (info), {}) # info(z, {})"#;
        assert_eq!(
            with_placeholders(q).as_deref(),
            Some(
                r#"info(x{a="{"}, {__strata_info_selector__="1", d=~".*"}) + info(sum(rate(y[5m])) by (info), {__strata_info_selector__="1"}) # info(z, {})"#
            )
        );
        assert_eq!(with_placeholders(r#"info(x, target_info)"#), None);
    }

    #[test]
    fn empty_matching_selectors_parse_as_info_arguments_only() {
        let Ok(Expr::Call(c)) = parse(r#"info(x, {__name__!="target_info"})"#) else {
            panic!("info's label selector does not parse");
        };
        let Some(Expr::VectorSelector(vs)) = c.args.args.get(1).map(|a| &**a) else {
            panic!("no label selector");
        };
        assert_eq!(vs.matchers.matchers.len(), 1);
        let err = parse(r#"info({d=~".*"}, {d=~".*"})"#).err();
        assert!(err.is_some_and(|e| e.contains(EMPTY_SELECTOR)));
    }
}
