//! String literals as Go reads them. `promql-parser` reads the byte escapes
//! `\xHH` and `\NNN` as code points (`"\xc5"` is `Å`); Go, and so
//! Prometheus, reads them as bytes, which need not be valid UTF-8. A label
//! name must be valid UTF-8, so `label_replace`, `label_join` and
//! `count_values` fail on such a name in Prometheus: this module finds the
//! literals whose bytes are not valid UTF-8 and refuses them where a label
//! name goes.

use promql_parser::parser::token::T_COUNT_VALUES;
use promql_parser::parser::Expr;

use crate::error::QueryError;

/// A literal whose bytes are not valid UTF-8.
struct InvalidLiteral {
    /// What `promql-parser` reads it as.
    parsed: String,
    /// Go's `%q` of its bytes (`"a\xc5z"`).
    quoted: String,
}

/// Fails as Prometheus does when a label name given by a string literal of
/// `query` (parsed as `expr`) is not valid UTF-8.
pub(crate) fn check_label_names(query: &str, expr: &Expr) -> Result<(), QueryError> {
    // Only a byte escape can make a literal invalid.
    if !query.contains('\\') {
        return Ok(());
    }
    let invalid = invalid_literals(query);
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
                    error = Some(format!("invalid label name {}", i.quoted));
                }
            }
            Expr::Call(c) if c.func.name == "label_replace" || c.func.name == "label_join" => {
                let name = c.func.name;
                for (k, arg) in c.args.args.iter().enumerate() {
                    let role = match k {
                        1 => "destination",
                        3.. if name == "label_join" => "source",
                        _ => continue,
                    };
                    if let Some(i) = find(arg) {
                        error = Some(format!(
                            "invalid {role} label name in {name}(): {}",
                            i.quoted
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

/// The `"…"` and `'…'` literals of `query` (outside comments) whose bytes,
/// as Go reads them, are not valid UTF-8.
fn invalid_literals(query: &str) -> Vec<InvalidLiteral> {
    let mut out = Vec::new();
    let mut chars = query.chars();
    while let Some(c) = chars.next() {
        let end = match c {
            '#' => '\n',
            '`' => '`',
            '"' | '\'' => c,
            _ => continue,
        };
        if c == '#' || c == '`' {
            chars.by_ref().find(|&x| x == end);
            continue;
        }
        let mut bytes = Vec::new();
        let mut parsed = String::new();
        while let Some(x) = chars.next() {
            if x == end || x == '\n' {
                break;
            }
            if x != '\\' {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(x.encode_utf8(&mut buf).as_bytes());
                parsed.push(x);
                continue;
            }
            let Some(e) = chars.next() else { break };
            escape(e, &mut chars, &mut bytes, &mut parsed);
        }
        if std::str::from_utf8(&bytes).is_err() {
            out.push(InvalidLiteral {
                parsed,
                quoted: go_quote(&bytes),
            });
        }
    }
    out
}

/// Reads the escape after a backslash (`e`, then what follows in
/// `chars`): its bytes as Go reads them, its text as `promql-parser` does.
fn escape(e: char, chars: &mut std::str::Chars<'_>, bytes: &mut Vec<u8>, parsed: &mut String) {
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
        assert!(check(r#"label_replace(m, "\xff", "", "src", "(.*)")"#).is_err());
        assert!(check(r#"label_join(m, "dst", "-", "a", ("\377"))"#).is_err());
    }

    #[test]
    fn valid_names_and_other_strings_pass() {
        // Valid UTF-8 written as bytes, a code point, a value elsewhere.
        check(r#"count_values("\xc3\xa9", version)"#).unwrap();
        check(r#"label_replace(m, "\u00c5", "\xff", "src", "(.*)")"#).unwrap();
        check(r#"m{a="\xff"} # "\xff" in a comment"#).unwrap();
        check(r#"label_replace(m, `\xff`, "", "src", "(.*)")"#).unwrap();
    }
}
