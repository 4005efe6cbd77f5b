//! The `anchored` and `smoothed` selector modifiers (Prometheus 3.16's
//! extended range selectors: `increase(x[5m] anchored)`, `x smoothed`).
//!
//! `promql-parser` 0.11 lexes both words but has no grammar for them, and
//! its `VectorSelector` has no field to hold them. So [`rewrite`] takes
//! each modifier out of the text and marks its selector instead with a
//! matcher of a reserved label on the empty string
//! (`x[5m] anchored` → `x{__strata_anchored__=""}[5m]`), which every
//! series satisfies, since none has that label. [`mode`] reads the mark
//! back; [`crate::plan::matcher_sets`] leaves it out of storage reads.
//!
//! A modifier belongs, as in Prometheus' grammar (`expr ANCHORED`, no
//! precedence, so it binds to what is just before it), to the selector it
//! follows, past that selector's `offset` and `@` modifiers. On anything
//! else Prometheus' parse errors are answered.

use promql_parser::parser::VectorSelector;

use crate::query_text::{matching_open, tokens, Kind, Token};

/// How a selector reads its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeMode {
    /// Samples in the window, as always.
    Plain,
    /// The window's start is the value of the last sample at or before it
    /// (within the lookback).
    Anchored,
    /// Both ends of the window are interpolated from the samples around
    /// them (within the lookback).
    Smoothed,
}

const ANCHORED_LABEL: &str = "__strata_anchored__";
const SMOOTHED_LABEL: &str = "__strata_smoothed__";

/// Whether a matcher's label is one of the marks [`rewrite`] adds.
pub(crate) fn is_mark(label: &str) -> bool {
    label == ANCHORED_LABEL || label == SMOOTHED_LABEL
}

/// The selector's modifier, from the mark [`rewrite`] gave it.
pub(crate) fn mode(vs: &VectorSelector) -> RangeMode {
    let matchers = &vs.matchers;
    let all = matchers
        .matchers
        .iter()
        .chain(matchers.or_matchers.iter().flatten());
    for m in all {
        match m.name.as_str() {
            ANCHORED_LABEL => return RangeMode::Anchored,
            SMOOTHED_LABEL => return RangeMode::Smoothed,
            _ => {}
        }
    }
    RangeMode::Plain
}

/// `query` with each modifier replaced by its selector's mark; `Ok(None)`
/// when it has none. When a modifier follows no selector, Prometheus'
/// parse error: the one `reparse` gives for the query without the
/// modifier, else Prometheus' own (`parse error: ...`).
pub(crate) fn rewrite(
    query: &str,
    reparse: impl Fn(&str) -> Result<(), String>,
) -> Result<Option<String>, String> {
    // A query naming a mark itself would set a mode no modifier asked for.
    if let Some(label) = [ANCHORED_LABEL, SMOOTHED_LABEL]
        .into_iter()
        .find(|l| query.contains(l))
    {
        return Err(format!("parse error: the label name {label} is reserved"));
    }
    let lower = query.to_ascii_lowercase();
    if !lower.contains("anchored") && !lower.contains("smoothed") {
        return Ok(None);
    }
    let tokens = tokens(query);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    // Per selector (by its opening token), the modifier already given.
    let mut given: Vec<(usize, RangeMode)> = Vec::new();
    for (i, &t) in tokens.iter().enumerate() {
        let Some(mode) = modifier_at(query, &tokens, i) else {
            continue;
        };
        let word = if mode == RangeMode::Anchored {
            "anchored"
        } else {
            "smoothed"
        };
        edits.push((t.start, t.end, String::new()));
        let target = match selector_before(query, &tokens, i) {
            Ok(target) => target,
            Err(NotSelector::Subquery) => {
                return Err(format!(
                    "parse error: {word} modifier is not supported for subqueries"
                ))
            }
            Err(NotSelector::Other) => {
                // Prometheus reports the parser's own error first
                // (`1[5m] anchored`: ranges only allowed for vector
                // selectors), else that the modifier has no meaning here.
                let without = apply(query, &[(t.start, t.end, String::new())]);
                reparse(&without)?;
                return Err(format!("parse error: {word} modifier not implemented"));
            }
        };
        if let Some((_, other)) = given.iter().find(|(s, _)| *s == target.open) {
            if *other != mode {
                return Err(
                    "parse error: anchored and smoothed modifiers cannot be used together".into(),
                );
            }
            continue;
        }
        given.push((target.open, mode));
        let label = if mode == RangeMode::Anchored {
            ANCHORED_LABEL
        } else {
            SMOOTHED_LABEL
        };
        edits.push((target.insert_at, target.insert_at, target.text(label)));
    }
    if edits.is_empty() {
        return Ok(None);
    }
    Ok(Some(apply(query, &edits)))
}

/// `query` with each `(start, end, text)` edit made.
fn apply(query: &str, edits: &[(usize, usize, String)]) -> String {
    let mut edits: Vec<&(usize, usize, String)> = edits.iter().collect();
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(query.len() + 64);
    let mut at = 0;
    for (start, end, text) in edits {
        out.push_str(query.get(at..*start).unwrap_or_default());
        out.push_str(text);
        at = *end;
    }
    out.push_str(query.get(at..).unwrap_or_default());
    out
}

/// The modifier token `i` is, if it stands where a modifier does: the word
/// after an expression, outside braces (`sum by (anchored)`, `anchored{}`
/// and a query starting with the word are names, as in Prometheus).
fn modifier_at(query: &str, tokens: &[Token], i: usize) -> Option<RangeMode> {
    let t = tokens.get(i)?;
    if t.kind != Kind::Word || t.brace_depth > 0 {
        return None;
    }
    let text = t.text(query).to_ascii_lowercase();
    let mode = match text.as_str() {
        "anchored" => RangeMode::Anchored,
        "smoothed" => RangeMode::Smoothed,
        _ => return None,
    };
    let prev = tokens.get(i.checked_sub(1)?)?;
    let ends_expr = match prev.kind {
        Kind::Word | Kind::Number | Kind::Str => true,
        Kind::Sym(c) => matches!(c, ']' | '}' | ')'),
    };
    if !ends_expr || is_operator_word(prev.text(query)) {
        return None;
    }
    if tokens
        .get(i + 1)
        .is_some_and(|n| matches!(n.kind, Kind::Sym('{' | '(')))
    {
        return None;
    }
    Some(mode)
}

/// Keywords after which an expression, not a modifier, follows.
fn is_operator_word(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "and" | "or" | "unless" | "atan2" | "bool" | "offset" | "group_left" | "group_right"
    )
}

enum NotSelector {
    Subquery,
    Other,
}

/// Where a selector's mark goes.
struct Target {
    /// The selector's first token, naming it.
    open: usize,
    /// The byte offset where the mark is inserted.
    insert_at: usize,
    /// Whether the selector has braces (the mark goes first inside them)
    /// or is a bare name (braces are added after it).
    braces: bool,
}

impl Target {
    fn text(&self, label: &str) -> String {
        if self.braces {
            format!("{label}=\"\", ")
        } else {
            format!("{{{label}=\"\"}}")
        }
    }
}

/// The selector the modifier at token `i` follows, walking back over its
/// `offset`, `@`, other modifiers and range.
fn selector_before(query: &str, tokens: &[Token], i: usize) -> Result<Target, NotSelector> {
    let word = |j: usize, w: &str| {
        tokens
            .get(j)
            .is_some_and(|t| t.kind == Kind::Word && t.text(query).eq_ignore_ascii_case(w))
    };
    let sym = |j: usize, c: char| tokens.get(j).is_some_and(|t| t.kind == Kind::Sym(c));
    let mut j = i;
    loop {
        let Some(prev) = j.checked_sub(1) else {
            return Err(NotSelector::Other);
        };
        // `offset 5m`, `offset -5m`.
        if tokens.get(prev).is_some_and(|t| t.kind == Kind::Number) {
            let before = if prev >= 1 && sym(prev - 1, '-') {
                prev - 1
            } else {
                prev
            };
            if before >= 1 && word(before - 1, "offset") {
                j = before - 1;
                continue;
            }
            if before >= 1 && sym(before - 1, '@') {
                j = before - 1;
                continue;
            }
        }
        // `@ start()`, `@ end()`.
        if sym(prev, ')')
            && prev >= 3
            && sym(prev - 1, '(')
            && (word(prev - 2, "start") || word(prev - 2, "end"))
            && sym(prev - 3, '@')
        {
            j = prev - 3;
            continue;
        }
        if word(prev, "anchored") || word(prev, "smoothed") {
            j = prev;
            continue;
        }
        break;
    }
    let mut k = j.checked_sub(1).ok_or(NotSelector::Other)?;
    if sym(k, ']') {
        let open = matching_open(tokens, k, '[', ']').ok_or(NotSelector::Other)?;
        let level = tokens.get(open).map_or(0, |t| t.bracket_depth) + 1;
        let colon = tokens
            .get(open..k)
            .unwrap_or_default()
            .iter()
            .any(|t| t.kind == Kind::Sym(':') && t.bracket_depth == level);
        if colon {
            return Err(NotSelector::Subquery);
        }
        k = open.checked_sub(1).ok_or(NotSelector::Other)?;
    }
    if sym(k, '}') {
        let open = matching_open(tokens, k, '{', '}').ok_or(NotSelector::Other)?;
        let name = open
            .checked_sub(1)
            .filter(|&n| tokens.get(n).is_some_and(|t| t.kind == Kind::Word));
        let brace = tokens.get(open).ok_or(NotSelector::Other)?;
        return Ok(Target {
            open: name.unwrap_or(open),
            insert_at: brace.end,
            braces: true,
        });
    }
    match tokens.get(k) {
        Some(t) if t.kind == Kind::Word && !is_operator_word(t.text(query)) => Ok(Target {
            open: k,
            insert_at: t.end,
            braces: false,
        }),
        _ => Err(NotSelector::Other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(q: &str) -> Result<(), String> {
        promql_parser::parser::parse(q).map(|_| ())
    }

    fn rewritten(q: &str) -> Result<Option<String>, String> {
        rewrite(q, parses)
    }

    #[test]
    fn marks_the_selector_the_modifier_follows() {
        for (q, want) in [
            ("x[5m] anchored", "x{__strata_anchored__=\"\"}[5m] "),
            (
                "rate(x{a=\"b\"}[5m] smoothed)",
                "rate(x{__strata_smoothed__=\"\", a=\"b\"}[5m] )",
            ),
            ("x smoothed", "x{__strata_smoothed__=\"\"} "),
            (
                "x[1m] offset -5m anchored + y",
                "x{__strata_anchored__=\"\"}[1m] offset -5m  + y",
            ),
            ("x @ end() smoothed", "x{__strata_smoothed__=\"\"} @ end() "),
            ("a + b anchored", "a + b{__strata_anchored__=\"\"} "),
        ] {
            assert_eq!(rewritten(q).unwrap().as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn names_are_left_alone() {
        for q in [
            "anchored",
            "anchored{job=\"x\"}",
            "sum by (anchored) (x)",
            "x{smoothed=\"1\"}",
            "x + on(anchored) y",
            "\"smoothed\"",
            "x # anchored",
        ] {
            assert_eq!(rewritten(q).unwrap(), None, "{q}");
        }
    }

    #[test]
    fn refuses_what_prometheus_refuses() {
        for (q, err) in [
            (
                "x[5m:1m] anchored",
                "anchored modifier is not supported for subqueries",
            ),
            (
                "x[5m:] smoothed",
                "smoothed modifier is not supported for subqueries",
            ),
            ("(x[5m]) smoothed", "smoothed modifier not implemented"),
            ("sum(x) anchored", "anchored modifier not implemented"),
            (
                "x[5m] anchored smoothed",
                "anchored and smoothed modifiers cannot be used together",
            ),
        ] {
            assert_eq!(
                rewritten(q).unwrap_err(),
                format!("parse error: {err}"),
                "{q}"
            );
        }
        assert!(rewritten("1[5m] anchored").is_err());
        assert!(rewritten("x{__strata_smoothed__=\"\"}").is_err());
    }

    #[test]
    fn reads_back_the_mark() {
        let parse =
            |q: &str| promql_parser::parser::parse(&rewritten(q).unwrap().unwrap()).unwrap();
        let promql_parser::parser::Expr::MatrixSelector(ms) = parse("x[5m] smoothed") else {
            panic!("a matrix selector");
        };
        assert_eq!(mode(&ms.vs), RangeMode::Smoothed);
        let promql_parser::parser::Expr::VectorSelector(vs) =
            parse("x{a=\"b\" or c=\"d\"} anchored")
        else {
            panic!("a vector selector");
        };
        assert_eq!(mode(&vs), RangeMode::Anchored);
    }
}
