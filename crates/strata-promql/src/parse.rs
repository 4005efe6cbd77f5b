//! A query's text to its tree: the limits checked on the text, the steps
//! that give `promql-parser` 0.11 what Prometheus 3.16 parses and it does
//! not (see the crate README), and the parser.

use promql_parser::parser::Expr;

use crate::duration_expr::DurationContext;
use crate::error::QueryError;

/// Deepest expression tree a query may have. Evaluation recurses once per
/// level on a thread with tokio's 2 MiB stack, so a query of a few
/// kilobytes nested deeper (`abs(abs(abs(...)))`) would overflow it and
/// abort the process; hand-written queries nest a dozen levels, and long
/// generated `a + b + c ...` chains stay well within this.
pub const MAX_EXPR_DEPTH: usize = 250;

/// What parsing accepts beyond `promql-parser`'s own grammar.
#[derive(Clone, Copy, Debug)]
pub struct ParseOptions {
    /// What `step()` and `range()` are in duration expressions; `None`
    /// refuses duration expressions, with the error Prometheus gave while
    /// they were behind `--enable-feature=promql-duration-expr`.
    pub durations: Option<DurationContext>,
    /// Whether unquoted metric and label names may hold dots and Unicode
    /// letters (`--enable-feature=promql-unquoted-utf8-names`).
    pub unquoted_utf8_names: bool,
}

impl Default for ParseOptions {
    /// Everything on, duration expressions worked out as in an instant
    /// query.
    fn default() -> Self {
        Self {
            durations: Some(DurationContext::default()),
            unquoted_utf8_names: true,
        }
    }
}

/// Parses a query, answering Prometheus' `bad_data` error when it does not
/// parse, nests deeper than [`MAX_EXPR_DEPTH`] or holds a string longer
/// than `max_string_bytes` (the regex limit: the parser compiles every
/// regular expression it meets, so a huge one is refused before that).
///
/// Duration expressions (`x[step() * 2]`) are worked out as in an instant
/// query; [`parse_query_in`] gives them a query's step and range.
pub fn parse_query(query: &str, max_string_bytes: usize) -> Result<Expr, QueryError> {
    parse_query_in(query, max_string_bytes, ParseOptions::default())
}

/// [`parse_query`] with `options`.
pub fn parse_query_in(
    query: &str,
    max_string_bytes: usize,
    options: ParseOptions,
) -> Result<Expr, QueryError> {
    // The parser itself recurses on deep trees: bound them from the text
    // before handing it over.
    let shape = text_shape(query);
    if shape.longest_string > max_string_bytes {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": a quoted string is {} bytes, over the limit of {max_string_bytes} bytes (max_regex_bytes)",
            shape.longest_string
        )));
    }
    if shape.bracket_depth > MAX_EXPR_DEPTH {
        return Err(too_deep(shape.bracket_depth));
    }
    if shape.operators > MAX_OPERATORS {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": the query has {} operators, over the limit of {MAX_OPERATORS}",
            shape.operators
        )));
    }
    // What Prometheus 3.16 parses and `promql-parser` does not, written in
    // terms it reads: names quoted, durations worked out, trims as
    // comparisons (marked once parsed), modifiers as selector marks.
    let quoted = options
        .unquoted_utf8_names
        .then(|| crate::utf8_names::rewrite(query))
        .flatten();
    let query = quoted.as_deref().unwrap_or(query);
    let durations = options.durations;
    let computed = crate::duration_expr::rewrite(query, durations.unwrap_or_default())
        .map_err(|e| QueryError::BadData(format!("invalid parameter \"query\": {e}")))?;
    if computed.is_some() && durations.is_none() {
        return Err(QueryError::BadData(
            "invalid parameter \"query\": parse error: experimental duration expression is not enabled"
                .into(),
        ));
    }
    let query = computed.as_deref().unwrap_or(query);
    let trims = crate::trim_operator::rewrite(query);
    let query = trims.as_ref().map_or(query, |(q, _)| q.as_str());
    // The parser panics on a few inputs (a number of seconds too large or
    // NaN where a duration goes, `x[1e30]`); those are bad queries, not a
    // reason to drop the connection.
    let parsed = std::panic::catch_unwind(|| {
        let reparse = |q: &str| crate::info_selector::parse(q).map(|_| ());
        let mut expr = match crate::range_modifier::rewrite(query, reparse)? {
            Some(marked) => crate::info_selector::parse(&marked),
            None => crate::info_selector::parse(query),
        }?;
        if let Some((_, trims)) = &trims {
            crate::trim_operator::mark(&mut expr, trims);
        }
        Ok::<Expr, String>(expr)
    })
    .map_err(|_| {
        QueryError::BadData(
            "invalid parameter \"query\": parse error: a duration is out of range".into(),
        )
    })?;
    let expr =
        parsed.map_err(|e| QueryError::BadData(format!("invalid parameter \"query\": {e}")))?;
    let depth = crate::plan::depth(&expr);
    if depth > MAX_EXPR_DEPTH {
        return Err(too_deep(depth));
    }
    crate::go_string::check_label_names(query, &expr)?;
    Ok(expr)
}

fn too_deep(depth: usize) -> QueryError {
    QueryError::BadData(format!(
        "invalid parameter \"query\": the expression nests {depth} levels deep, over the limit of {MAX_EXPR_DEPTH}"
    ))
}

/// Most operators a query may hold, counted as [`text_shape`] counts them
/// (a two-character operator counts twice). A chain of unary or binary
/// operators nests as deep as it is long without a single bracket.
pub const MAX_OPERATORS: usize = 4 * MAX_EXPR_DEPTH;

/// What the text of a query says about the depth of its tree, outside
/// string literals and comments.
struct TextShape {
    /// Deepest nesting of `(`, `[` and `{`: every level of a call,
    /// aggregation, subquery or parenthesis opens one.
    bracket_depth: usize,
    /// Operator characters and the keywords `and`, `or`, `unless`,
    /// `atan2`: every unary or binary node has one.
    operators: usize,
    /// Longest quoted string, in bytes.
    longest_string: usize,
}

fn text_shape(query: &str) -> TextShape {
    let mut shape = TextShape {
        bracket_depth: 0,
        operators: 0,
        longest_string: 0,
    };
    let mut depth = 0usize;
    let mut word = String::new();
    let mut chars = query.chars();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        if matches!(word.as_str(), "and" | "or" | "unless" | "atan2") {
            shape.operators += 1;
        }
        word.clear();
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                shape.bracket_depth = shape.bracket_depth.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '+' | '-' | '*' | '/' | '%' | '^' | '=' | '!' | '<' | '>' => shape.operators += 1,
            '#' => {
                chars.find(|&c| c == '\n');
            }
            '`' => {
                chars.find(|&c| c == '`');
            }
            '"' | '\'' => {
                let mut len = 0;
                while let Some(s) = chars.next() {
                    if s == '\\' {
                        chars.next();
                    } else if s == c {
                        break;
                    }
                    len += s.len_utf8();
                }
                shape.longest_string = shape.longest_string.max(len);
            }
            _ => {}
        }
    }
    shape
}
