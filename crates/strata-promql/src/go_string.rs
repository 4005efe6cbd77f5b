//! String literals as Go reads them. `promql-parser` reads the byte escapes
//! `\xHH` and `\NNN` as code points (`"\xc5"` is `Å`); Go, and so
//! Prometheus, reads them as bytes, which need not be valid UTF-8. A label
//! name must be non-empty valid UTF-8, so `label_replace`, `label_join` and
//! `count_values` fail on a name that is not valid UTF-8 in Prometheus, and
//! its parser refuses a quoted grouping label (`by ("")`, `on ("\xff")`)
//! that is empty or not valid UTF-8, where `promql-parser` takes either:
//! this module finds those literals and refuses them as Prometheus does.

use promql_parser::parser::token::T_COUNT_VALUES;
use promql_parser::parser::Expr;

use crate::error::QueryError;

/// A quoted literal of a query.
struct Literal {
    /// Its byte offset in the query.
    start: usize,
    /// Its bytes as Go reads them.
    bytes: Vec<u8>,
    /// What `promql-parser` reads it as.
    parsed: String,
    /// Whether it names a label in a grouping list: `by`, `without`, `on`,
    /// `ignoring`, `group_left` or `group_right`.
    grouping: bool,
}

/// Fails as Prometheus does when a label name given by a string literal of
/// `query` (parsed as `expr`) is not a label name: a grouping label that is
/// empty or not valid UTF-8 (a parse error), or a name given to
/// `label_replace`, `label_join` or `count_values` that is not valid UTF-8
/// (an execution error).
pub(crate) fn check_label_names(query: &str, expr: &Expr) -> Result<(), QueryError> {
    // Only an empty literal or a byte escape can make a name invalid.
    if !(query.contains('\\') || ["\"\"", "''", "``"].iter().any(|e| query.contains(e))) {
        return Ok(());
    }
    let literals = literals(query);
    if let Some(bad) = literals
        .iter()
        .find(|l| l.grouping && (l.bytes.is_empty() || std::str::from_utf8(&l.bytes).is_err()))
    {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": {}: parse error: invalid label name for grouping: {}",
            position(query, bad.start),
            go_quote(&bad.bytes)
        )));
    }
    let invalid: Vec<Literal> = literals
        .into_iter()
        .filter(|l| std::str::from_utf8(&l.bytes).is_err())
        .collect();
    if invalid.is_empty() {
        return Ok(());
    }
    let find = |e: &Expr| match unwrap_parens(e) {
        Expr::StringLiteral(s) => invalid.iter().find(|i| i.parsed == s.val),
        _ => None,
    };
    let mut error = None;
    walk(expr, &mut |e| {
        if error.is_some() {
            return;
        }
        match e {
            Expr::Aggregate(a) if a.op.id() == T_COUNT_VALUES => {
                if let Some(i) = a.param.as_deref().and_then(find) {
                    error = Some(format!("invalid label name {}", go_quote(&i.bytes)));
                }
            }
            Expr::Call(c) if c.func.name == "label_replace" || c.func.name == "label_join" => {
                let name = c.func.name;
                let args = &c.args.args;
                // `label_join`'s sources first, as Prometheus checks them.
                let sources = match args.get(3..) {
                    Some(sources) if name == "label_join" => sources,
                    _ => &[],
                };
                let names = sources
                    .iter()
                    .map(|a| ("source", a))
                    .chain(args.get(1).map(|a| ("destination", a)));
                for (role, arg) in names {
                    if let Some(i) = find(arg) {
                        // Prometheus prints the bytes as they are, which its
                        // JSON encoder then writes U+FFFD for, byte by byte.
                        error = Some(format!(
                            "invalid {role} label name in {name}(): {}",
                            go_json_lossy(&i.bytes)
                        ));
                        return;
                    }
                }
            }
            _ => {}
        }
    });
    error.map_or(Ok(()), |e| Err(QueryError::exec(e)))
}

/// Prometheus' `line:column` of the byte offset `at` of `query`.
fn position(query: &str, at: usize) -> String {
    let before = query.get(..at).unwrap_or(query);
    let line = 1 + before.matches('\n').count();
    let column = at - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("{line}:{column}")
}

fn unwrap_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unwrap_parens(&p.expr),
        other => other,
    }
}

/// Calls `f` on `expr` and every expression under it.
fn walk(expr: &Expr, f: &mut impl FnMut(&Expr)) {
    f(expr);
    match expr {
        Expr::Aggregate(a) => {
            walk(&a.expr, f);
            if let Some(p) = &a.param {
                walk(p, f);
            }
        }
        Expr::Unary(u) => walk(&u.expr, f),
        Expr::Binary(b) => {
            walk(&b.lhs, f);
            walk(&b.rhs, f);
        }
        Expr::Paren(p) => walk(&p.expr, f),
        Expr::Subquery(s) => walk(&s.expr, f),
        Expr::Call(c) => {
            for a in &c.args.args {
                walk(a, f);
            }
        }
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::VectorSelector(_)
        | Expr::MatrixSelector(_)
        | Expr::Extension(_) => {}
    }
}

/// The keywords whose parenthesized list names labels.
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The `"…"`, `'…'` and `` `…` `` literals of `query`, outside comments.
fn literals(query: &str) -> Vec<Literal> {
    let mut out = Vec::new();
    // Per open parenthesis, whether it opens a grouping list.
    let mut lists: Vec<bool> = Vec::new();
    // The keyword just before, whitespace aside, lower-cased.
    let mut word = String::new();
    let mut chars = query.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let end = match c {
            '#' => {
                chars.by_ref().find(|&(_, x)| x == '\n');
                continue;
            }
            '"' | '\'' | '`' => c,
            '(' => {
                lists.push(GROUPING.contains(&word.as_str()));
                word.clear();
                continue;
            }
            ')' => {
                lists.pop();
                word.clear();
                continue;
            }
            c if c.is_alphabetic() || c == '_' => {
                word.clear();
                word.push(c.to_ascii_lowercase());
                while let Some(&(_, x)) = chars.peek() {
                    if !(x.is_alphanumeric() || x == '_' || x == ':') {
                        break;
                    }
                    word.push(x.to_ascii_lowercase());
                    chars.next();
                }
                continue;
            }
            c if c.is_whitespace() => continue,
            _ => {
                word.clear();
                continue;
            }
        };
        word.clear();
        let mut bytes = Vec::new();
        let mut parsed = String::new();
        let mut text = chars.by_ref().map(|(_, x)| x);
        while let Some(x) = text.next() {
            if x == end || (x == '\n' && end != '`') {
                break;
            }
            if x != '\\' || end == '`' {
                bytes.extend_from_slice(x.encode_utf8(&mut [0; 4]).as_bytes());
                parsed.push(x);
                continue;
            }
            let Some(e) = text.next() else { break };
            escape(e, &mut text, &mut bytes, &mut parsed);
        }
        out.push(Literal {
            start,
            bytes,
            parsed,
            grouping: lists.last() == Some(&true),
        });
    }
    out
}

/// Reads the escape after a backslash (`e`, then what follows in
/// `chars`): its bytes as Go reads them, its text as `promql-parser` does.
fn escape(
    e: char,
    chars: &mut impl Iterator<Item = char>,
    bytes: &mut Vec<u8>,
    parsed: &mut String,
) {
    let mut digits = |n: usize, radix: u32, first: Option<char>| -> u32 {
        let text: String = first
            .into_iter()
            .chain(chars.by_ref().take(n - usize::from(first.is_some())))
            .collect();
        u32::from_str_radix(&text, radix).unwrap_or(0)
    };
    let (byte, code) = match e {
        'a' => (None, 7),
        'b' => (None, 8),
        'f' => (None, 12),
        'n' => (None, 10),
        'r' => (None, 13),
        't' => (None, 9),
        'v' => (None, 11),
        'x' => {
            let v = digits(2, 16, None);
            (Some(v), v)
        }
        '0'..='7' => {
            let v = digits(3, 8, Some(e));
            (Some(v), v)
        }
        'u' => (None, digits(4, 16, None)),
        'U' => (None, digits(8, 16, None)),
        other => (None, u32::from(other)),
    };
    let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
    parsed.push(c);
    match byte {
        Some(b) => bytes.push(u8::try_from(b).unwrap_or(u8::MAX)),
        None => {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
}

/// `bytes` as Go's JSON encoder writes them: each byte that is not part
/// of valid UTF-8 becomes U+FFFD.
fn go_json_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
    }
    out
}

/// Go's `strconv.Quote`: printable text as is, invalid bytes as `\xNN`.
pub(crate) fn go_quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\x0c' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\x0b' => out.push_str("\\v"),
                c if u32::from(c) < 0x20 || c == '\x7f' => {
                    out.push_str(&format!("\\x{:02x}", u32::from(c)));
                }
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str) -> Result<(), QueryError> {
        let expr = promql_parser::parser::parse(query).unwrap();
        check_label_names(query, &expr)
    }

    #[test]
    fn invalid_label_names_are_refused() {
        let err = check(r#"count_values("a\xc5z", version)"#).unwrap_err();
        assert_eq!(err.to_string(), r#"invalid label name "a\xc5z""#);
        let err = check(r#"label_join(m, "\xff", "-", "a", "\xfe")"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid source label name in label_join(): \u{fffd}"
        );
        let err = check(r#"label_replace(m, "a\xe2\x82", "", "src", "(.*)")"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid destination label name in label_replace(): a\u{fffd}\u{fffd}"
        );
        assert!(check(r#"label_join(m, "dst", "-", "a", ("\377"))"#).is_err());
    }

    #[test]
    fn grouping_labels_empty_or_not_utf8_are_refused_where_they_stand() {
        let err = |q: &str| check(q).unwrap_err().to_string();
        assert_eq!(
            err(r#"sum by ("") (m)"#),
            r#"invalid parameter "query": 1:9: parse error: invalid label name for grouping: """#
        );
        assert_eq!(
            err("sum(m)\n  / ignoring (a, '\\xff') m"),
            r#"invalid parameter "query": 2:18: parse error: invalid label name for grouping: "\xff""#
        );
        assert!(check(r#"m * on (job) group_left ("a", ``) n"#).is_err());
        assert!(check(r#"sum(m) WITHOUT ("")"#).is_err());
    }

    #[test]
    fn valid_names_and_other_strings_pass() {
        check(r#"sum by ("http.status", "") (label_replace(m, "a", "", "", ""))"#).unwrap_err();
        check(r#"sum by ("http.status") (label_replace(m, "a", "", "", ""))"#).unwrap();
        check(r#"count_values("", m) + on ("\u00e9") group_left label_join(m, "x", "")"#).unwrap();
        // Valid UTF-8 written as bytes, a code point, a value elsewhere.
        check(r#"count_values("\xc3\xa9", version)"#).unwrap();
        check(r#"label_replace(m, "\u00c5", "\xff", "src", "(.*)")"#).unwrap();
        check(r#"m{a="\xff"} # "\xff" in a comment"#).unwrap();
        check(r#"label_replace(m, `\xff`, "", "src", "(.*)")"#).unwrap();
    }
}
