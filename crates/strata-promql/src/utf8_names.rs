//! Unquoted UTF-8 metric and label names (Prometheus 3.16's
//! `promql-unquoted-utf8-names`): `http.requests{service.name="a"}`,
//! `sum by (service.name) (温度)`.
//!
//! With the flag, Prometheus' lexer lets a name start with any Unicode
//! letter and go on with letters, ASCII digits, `_`, `:` and dots.
//! `promql-parser` 0.11 reads such names only quoted, so [`rewrite`]
//! quotes each name that is not a plain one (it has a dot or a non-ASCII
//! letter): a label name in braces or in a `by`, `without`, `on`,
//! `ignoring`, `group_left` or `group_right` list becomes `"service.name"`,
//! a metric name becomes a quoted name in braces
//! (`http.requests{a="b"}` → `{"http.requests", a="b"}`, `Björn` →
//! `{"Björn"}`). A name that is also a keyword (`bool.total`,
//! `Inf.total`) is a name, as in Prometheus.

/// `query` with its non-plain unquoted names quoted; `None` when it has
/// none.
pub(crate) fn rewrite(query: &str) -> Option<String> {
    if query.is_ascii() && !query.contains('.') {
        return None;
    }
    let mut out = String::with_capacity(query.len() + 16);
    let mut changed = false;
    let (mut braces, mut brackets) = (0usize, 0usize);
    // Parenthesis depths at which a label list is open.
    let mut label_lists: Vec<usize> = Vec::new();
    let mut parens = 0usize;
    // The last word, to know that a `(` opens a label list.
    let mut last_word = String::new();
    let mut rest = query;
    while let Some(c) = rest.chars().next() {
        let len = c.len_utf8();
        match c {
            '"' | '\'' | '`' => {
                let end = literal_end(rest, c);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                last_word.clear();
                continue;
            }
            '#' => {
                let end = rest.find('\n').unwrap_or(rest.len());
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                continue;
            }
            c if c.is_ascii_digit() || (c == '.' && brackets == 0 && braces == 0) => {
                // A number or duration: digits, letters, dots.
                let end = rest
                    .find(|x: char| !(x.is_ascii_alphanumeric() || x == '.' || x == '_'))
                    .unwrap_or(rest.len());
                let end = end.max(len);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                last_word.clear();
                continue;
            }
            c if name_start(c) || (c == ':' && brackets == 0) => {
                let end = rest
                    .char_indices()
                    .find(|&(_, x)| !(name_start(x) || x.is_ascii_digit() || x == '.' || x == ':'))
                    .map_or(rest.len(), |(i, _)| i);
                let word = &rest[..end];
                rest = &rest[end..];
                let plain = word.is_ascii() && !word.contains('.');
                if plain || brackets > 0 {
                    out.push_str(word);
                } else if braces > 0 || label_lists.last() == Some(&parens) {
                    out.push('"');
                    out.push_str(word);
                    out.push('"');
                    changed = true;
                } else {
                    changed = true;
                    let after = rest.trim_start();
                    if let Some(inner) = after.strip_prefix('{') {
                        let empty = inner.trim_start().starts_with('}');
                        out.push_str(&format!("{{\"{word}\""));
                        if !empty {
                            out.push_str(", ");
                        }
                        braces += 1;
                        rest = inner;
                    } else {
                        out.push_str(&format!("{{\"{word}\"}}"));
                    }
                }
                last_word = word.to_ascii_lowercase();
                continue;
            }
            '{' => braces += 1,
            '}' => braces = braces.saturating_sub(1),
            '[' => brackets += 1,
            ']' => brackets = brackets.saturating_sub(1),
            '(' => {
                parens += 1;
                if matches!(
                    last_word.as_str(),
                    "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                ) {
                    label_lists.push(parens);
                }
            }
            ')' => {
                if label_lists.last() == Some(&parens) {
                    label_lists.pop();
                }
                parens = parens.saturating_sub(1);
            }
            _ => {}
        }
        if !c.is_whitespace() {
            last_word.clear();
        }
        out.push(c);
        rest = &rest[len..];
    }
    changed.then_some(out)
}

/// Whether a name may start with `c`: an ASCII letter, `_`, or any
/// Unicode letter.
fn name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || (!c.is_ascii() && c.is_alphabetic())
}

/// The byte length of the quoted literal at the start of `s`.
fn literal_end(s: &str, quote: char) -> usize {
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == '\\' && quote != '`' {
            chars.next();
        } else if c == quote {
            return i + 1;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_dots_or_letters_beyond_ascii_are_quoted() {
        for (q, want) in [
            (
                "http.server.requests{service.name=\"api\"}",
                "{\"http.server.requests\", \"service.name\"=\"api\"}",
            ),
            ("Björn", "{\"Björn\"}"),
            ("温度{}", "{\"温度\"}"),
            (
                "sum by (service.name) (http.requests[5m])",
                "sum by (\"service.name\") ({\"http.requests\"}[5m])",
            ),
            (
                "a * on (service.name) group_left (équipe) b",
                "a * on (\"service.name\") group_left (\"équipe\") b",
            ),
            ("Inf.total + Inf", "{\"Inf.total\"} + Inf"),
        ] {
            assert_eq!(rewrite(q).as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn plain_names_numbers_and_strings_are_left_alone() {
        for q in [
            "rate(x[1m30s]) * 1.5",
            "x{a=\"b.c\"} offset 1.5m",
            "sum by (job) (x) # é.",
            "label_replace(x, \"a.b\", \"$1\", \"c\", \"(.*)\")",
            "x[5m:1.5s]",
        ] {
            assert_eq!(rewrite(q), None, "{q}");
        }
    }
}
