//! Duration expressions (Prometheus 3.16's `promql-duration-expr`):
//! arithmetic, `step()`, `range()`, `min_of` and `max_of` where a range, a
//! subquery step or an offset goes (`x[5m * 2]`, `y[1h:step()]`,
//! `z offset min_of(range(), 1h)`).
//!
//! `promql-parser` 0.11 takes only literals there. Prometheus keeps the
//! expression in the tree and works it out before evaluation, from the
//! query's step and range; so does [`rewrite`], on the text, with those
//! two given: each expression is replaced by its duration in
//! milliseconds (`x[5m * 2]` → `x[600000ms]`), an offset of 0 by none.
//! The grammar and the arithmetic are Prometheus'
//! (`generated_parser.y`'s `duration_expr` and `offset_duration_expr`,
//! `durations.go`): `+ -` below `* / %` below unary signs below a
//! right-associative `^`; an offset takes one term (`x offset step() * 2`
//! multiplies the offset selector); `/` and `%` by zero, NaN, infinities
//! and non-positive ranges and steps are errors; a duration is cut to
//! whole milliseconds.

use crate::query_text::{tokens, Kind, Token};

/// What `step()` and `range()` are in a query's durations: its step and
/// its end minus its start, both 0 for an instant query.
#[derive(Clone, Copy, Debug, Default)]
pub struct DurationContext {
    pub step_ms: i64,
    pub range_ms: i64,
}

/// `query` with each duration expression replaced by its value; `Ok(None)`
/// when it has none; Prometheus' error when one is wrong.
pub(crate) fn rewrite(query: &str, ctx: DurationContext) -> Result<Option<String>, String> {
    if !query.contains('[') && !query.to_ascii_lowercase().contains("offset") {
        return Ok(None);
    }
    let tokens = tokens(query);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while let Some(t) = tokens.get(i) {
        if t.brace_depth == 0 && t.kind == Kind::Sym('[') {
            i = bracket(query, &tokens, i, ctx, &mut edits)?;
            continue;
        }
        let after_expr = i
            .checked_sub(1)
            .and_then(|p| tokens.get(p))
            .is_some_and(|p| {
                matches!(
                    p.kind,
                    Kind::Sym(']' | '}' | ')') | Kind::Word | Kind::Number
                )
            });
        if t.brace_depth == 0
            && t.kind == Kind::Word
            && t.text(query).eq_ignore_ascii_case("offset")
            && after_expr
        {
            i = offset(query, &tokens, i, ctx, &mut edits)?;
            continue;
        }
        i += 1;
    }
    if edits.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(query.len());
    let mut at = 0;
    for (start, end, text) in edits {
        out.push_str(query.get(at..start).unwrap_or_default());
        out.push_str(&text);
        at = end;
    }
    out.push_str(query.get(at..).unwrap_or_default());
    Ok(Some(out))
}

/// The `[...]` opening at token `open`: a range, or a subquery's range and
/// step, each rewritten unless it is a single literal. The token after it.
fn bracket(
    query: &str,
    tokens: &[Token],
    open: usize,
    ctx: DurationContext,
    edits: &mut Vec<(usize, usize, String)>,
) -> Result<usize, String> {
    let depth = tokens.get(open).map_or(0, |t| t.bracket_depth);
    let after = tokens.get(open + 1..).unwrap_or_default();
    // The closing bracket and a colon at this bracket's level, as offsets
    // into `after`.
    let at_level =
        |c: char, level: usize| move |t: &Token| t.kind == Kind::Sym(c) && t.bracket_depth == level;
    let Some(close) = after.iter().position(at_level(']', depth)) else {
        return Ok(open + 1);
    };
    let inner = after.get(..close).unwrap_or_default();
    let parts = match inner.iter().position(at_level(':', depth + 1)) {
        Some(c) => vec![inner.get(..c), inner.get(c + 1..)],
        None => vec![Some(inner)],
    };
    for part in parts.into_iter().flatten() {
        let (Some(first), Some(last)) = (part.first(), part.last()) else {
            continue;
        };
        if part.len() == 1 {
            continue;
        }
        let seconds = Parser::new(query, part, ctx).whole()?;
        let ms = milliseconds(seconds, false)?;
        edits.push((first.start, last.end, format!("{ms}ms")));
    }
    Ok(open + 1 + close + 1)
}

/// The `offset` at token `at`: its term rewritten unless it is a (signed)
/// literal. The token after the term.
fn offset(
    query: &str,
    tokens: &[Token],
    at: usize,
    ctx: DurationContext,
    edits: &mut Vec<(usize, usize, String)>,
) -> Result<usize, String> {
    let rest = tokens.get(at + 1..).unwrap_or_default();
    let mut p = Parser::new(query, rest, ctx);
    let seconds = p.offset_term()?;
    let term = rest.get(..p.pos).unwrap_or_default();
    let literal = match term {
        [t] => t.kind == Kind::Number,
        [s, t] => matches!(s.kind, Kind::Sym('-' | '+')) && t.kind == Kind::Number,
        _ => false,
    };
    if let (false, Some(first), Some(last)) = (literal, term.first(), term.last()) {
        let ms = milliseconds(seconds, true)?;
        if ms == 0 {
            let keyword = tokens.get(at).map_or(first.start, |t| t.start);
            edits.push((keyword, last.end, String::new()));
        } else {
            edits.push((first.start, last.end, format!("{ms}ms")));
        }
    }
    Ok(at + 1 + term.len())
}

/// Prometheus' `calculateDuration`: seconds to whole milliseconds, refusing
/// NaN, infinities, out-of-range values and, unless `negative`, values not
/// above 0.
fn milliseconds(seconds: f64, negative: bool) -> Result<i64, String> {
    if !seconds.is_finite() {
        return Err("duration is NaN or infinite".into());
    }
    if seconds <= 0.0 && !negative {
        return Err("duration must be greater than 0".into());
    }
    let limit = (1u64 << 63) as f64 / 1e9;
    if seconds > limit || seconds < -limit {
        return Err("duration is out of range".into());
    }
    Ok((seconds * 1000.0) as i64)
}

/// A recursive-descent reader of one duration expression's tokens, giving
/// its value in seconds.
struct Parser<'q> {
    query: &'q str,
    tokens: &'q [Token],
    pos: usize,
    ctx: DurationContext,
}

impl<'q> Parser<'q> {
    fn new(query: &'q str, tokens: &'q [Token], ctx: DurationContext) -> Self {
        Self {
            query,
            tokens,
            pos: 0,
            ctx,
        }
    }

    /// The whole token list as one expression.
    fn whole(&mut self) -> Result<f64, String> {
        let v = self.sum()?;
        match self.tokens.get(self.pos) {
            None => Ok(v),
            Some(t) => Err(format!(
                "parse error: unexpected {:?} in a duration expression",
                t.text(self.query)
            )),
        }
    }

    fn peek_sym(&self) -> Option<char> {
        match self.tokens.get(self.pos)?.kind {
            Kind::Sym(c) => Some(c),
            _ => None,
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.peek_sym() == Some(c) {
            self.pos += 1;
            return Ok(());
        }
        Err(format!(
            "parse error: expected {c:?} in a duration expression"
        ))
    }

    /// `+` and `-`, left to right.
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_sym() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    /// `*`, `/` and `%`, left to right.
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_sym() {
            self.pos += 1;
            let r = self.unary()?;
            v = match op {
                '*' => v * r,
                '/' if r == 0.0 => return Err("division by zero".into()),
                '/' => v / r,
                _ if r == 0.0 => return Err("modulo by zero".into()),
                _ => v % r,
            };
        }
        Ok(v)
    }

    /// A sign binds below `^`: `-2 ^ 2` is -4.
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek_sym() {
            Some('-') => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some('+') => {
                self.pos += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    /// `^`, right to left.
    fn power(&mut self) -> Result<f64, String> {
        let base = self.primary()?;
        if self.peek_sym() == Some('^') {
            self.pos += 1;
            let exponent = self.unary()?;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    /// A literal, `step()`, `range()`, `min_of(a, b)`, `max_of(a, b)` or a
    /// parenthesised expression.
    fn primary(&mut self) -> Result<f64, String> {
        let Some(t) = self.tokens.get(self.pos).copied() else {
            return Err("parse error: unexpected end of a duration expression".into());
        };
        self.pos += 1;
        let text = t.text(self.query);
        match t.kind {
            Kind::Number => literal_seconds(text),
            Kind::Sym('(') => {
                let v = self.sum()?;
                self.expect(')')?;
                Ok(v)
            }
            Kind::Word => match text.to_ascii_lowercase().as_str() {
                "step" => {
                    self.expect('(')?;
                    self.expect(')')?;
                    Ok(self.ctx.step_ms as f64 / 1e3)
                }
                "range" => {
                    self.expect('(')?;
                    self.expect(')')?;
                    Ok(self.ctx.range_ms as f64 / 1e3)
                }
                name @ ("min_of" | "max_of") => {
                    self.expect('(')?;
                    let a = self.sum()?;
                    self.expect(',')?;
                    let b = self.sum()?;
                    self.expect(')')?;
                    Ok(crate::functions::math::go_extremum(a, b, name == "max_of"))
                }
                _ => Err(format!(
                    "parse error: unexpected {text:?} in a duration expression"
                )),
            },
            _ => Err(format!(
                "parse error: unexpected {text:?} in a duration expression"
            )),
        }
    }

    /// What `offset` takes: one term, optionally signed (a literal,
    /// `step()`, `range()`, `min_of`/`max_of` or a parenthesised
    /// expression); what follows is the outer expression's.
    fn offset_term(&mut self) -> Result<f64, String> {
        match self.peek_sym() {
            Some('-') => {
                self.pos += 1;
                Ok(-self.primary()?)
            }
            Some('+') => {
                self.pos += 1;
                self.primary()
            }
            _ => self.primary(),
        }
    }
}

/// A number (seconds) or a duration literal (`1h30m`, `500ms`) in seconds.
fn literal_seconds(text: &str) -> Result<f64, String> {
    if let Some(v) = number(text) {
        return Ok(v);
    }
    let mut total_ms: i128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (n, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let n: i128 = n
            .parse()
            .map_err(|_| format!("parse error: not a valid duration string: {text:?}"))?;
        let ms: i128 = match unit {
            "y" => 365 * 24 * 3_600_000,
            "w" => 7 * 24 * 3_600_000,
            "d" => 24 * 3_600_000,
            "h" => 3_600_000,
            "m" => 60_000,
            "s" => 1_000,
            "ms" => 1,
            _ => {
                return Err(format!(
                    "parse error: not a valid duration string: {text:?}"
                ))
            }
        };
        total_ms = total_ms.saturating_add(n.saturating_mul(ms));
        rest = tail;
    }
    Ok(total_ms as f64 / 1e3)
}

/// A plain number as PromQL writes one (decimal, exponent or hex).
fn number(text: &str) -> Option<f64> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok().map(|v| v as f64);
    }
    text.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE_QUERY: DurationContext = DurationContext {
        step_ms: 5_000,
        range_ms: 10_000,
    };

    fn rewritten(q: &str) -> Result<Option<String>, String> {
        rewrite(q, RANGE_QUERY)
    }

    #[test]
    fn ranges_and_steps_become_milliseconds() {
        for (q, want) in [
            ("x[26m+4m]", "x[1800000ms]"),
            ("x[2m*(10+5)]", "x[1800000ms]"),
            ("x[1h30m % 1h]", "x[1800000ms]"),
            ("x[30m1s-30m1s % 1m]", "x[1800000ms]"),
            ("x[1+(STep()-5)*2]", "x[1000ms]"),
            ("x[max_of(min_of(step()+1,1h),1ms)]", "x[6000ms]"),
            ("x[29s+1s:20*500ms]", "x[30000ms:10000ms]"),
            ("x[range()]", "x[10000ms]"),
        ] {
            assert_eq!(rewritten(q).unwrap().as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn an_offset_takes_one_term() {
        for (q, want) in [
            ("x offset step()*0", "x offset 5000ms*0"),
            ("x offset -step()*2", "x offset -5000ms*2"),
            ("x offset (-step()*2)", "x offset -10000ms"),
            ("x offset (-2 ^ 2)", "x offset -4000ms"),
            ("x offset min_of(step(), 1s)+8000", "x offset 1000ms+8000"),
            (
                "x offset -(min_of(step(), 2s)-5)+8000",
                "x offset 3000ms+8000",
            ),
        ] {
            assert_eq!(rewritten(q).unwrap().as_deref(), Some(want), "{q}");
        }
        // An offset of 0 is none, which the parser would refuse to read.
        let instant = DurationContext::default();
        assert_eq!(
            rewrite("x offset range() + 1", instant).unwrap().as_deref(),
            Some("x  + 1")
        );
    }

    #[test]
    fn literals_and_names_are_left_alone() {
        for q in [
            "x[5m]",
            "x[5m:1m] offset -1h",
            "x[5m:]",
            "sum by (offset) (x)",
            "x{a=\"[1m*2]\"}",
            "x offset 5m",
            // `(x offset -2s) ^ 2`.
            "x offset -2 ^ 2",
        ] {
            assert_eq!(rewritten(q).unwrap(), None, "{q}");
        }
    }

    #[test]
    fn refuses_what_prometheus_refuses() {
        for (q, err) in [
            ("x[5m-5m]", "duration must be greater than 0"),
            ("x[1m:step()-5s]", "duration must be greater than 0"),
            ("x[1m/0]", "division by zero"),
            ("x[1m%0]", "modulo by zero"),
        ] {
            assert_eq!(rewritten(q).unwrap_err(), err, "{q}");
        }
    }
}
