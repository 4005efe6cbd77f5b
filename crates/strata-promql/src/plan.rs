//! Before evaluation: refuse what Strata does not implement, and work out
//! the time range each selector must read, as Prometheus'
//! `getTimeRangesForSelector` does, so that every selector is read once for
//! the whole query.

use promql_parser::label::MatchOp as ParserMatchOp;
use promql_parser::parser::token::{T_LAND, T_LOR, T_LUNLESS};
use promql_parser::parser::value::ValueType;
use promql_parser::parser::{AtModifier, BinaryExpr, Expr, SubqueryExpr, VectorSelector};
use strata_codec::{MatchOp, Matcher};

use crate::engine::{QueryLimits, DEFAULT_SUBQUERY_STEP_MS};
use crate::error::QueryError;
use crate::eval::aggregate::AggOp;
use crate::eval::range_steps::RangeFn;
use crate::eval::{duration_ms, offset_ms, selector_key, system_time_ms, unwrap_parens};
use crate::functions::registry::{self, Eval, RangeOutput};
use crate::range_modifier::{self, RangeMode};

/// One selector's read: its node key, one matcher list per `or` branch, the
/// inclusive time range, and what each series is reduced to as it is read.
pub(crate) struct SelectorLoad {
    pub key: usize,
    pub matcher_sets: Vec<Vec<Matcher>>,
    pub mint: i64,
    pub maxt: i64,
    pub reduce: Option<Reduce>,
}

/// What a selector's series are reduced to as they are read, when that is
/// all the query needs of them: its points at each of the query's steps.
/// Only a selector evaluated at the query's own steps (not in a subquery)
/// is reduced.
#[derive(Clone, Copy)]
pub(crate) enum Reduce {
    /// An instant selector's value at each step (`sum(x)`).
    Instant { offset: i64, at: Option<i64> },
    /// A range function of a range selector, the function's only argument
    /// (`rate(x[5m])`), at each step.
    Range {
        f: RangeFn,
        /// What the function does with histograms.
        hf: crate::eval::hist_range::HistFn,
        range: i64,
        offset: i64,
        at: Option<i64>,
    },
}

/// Errors on the first construct Strata does not evaluate, naming it, and
/// on the first experimental feature whose setting in `limits` is off
/// (`QueryLimits::experimental_functions`, `binop_fill_modifiers`), with
/// Prometheus' parse error.
pub(crate) fn check_supported(expr: &Expr, limits: &QueryLimits) -> Result<(), QueryError> {
    let check = |e: &Expr| check_supported(e, limits);
    let experimental = limits.experimental_functions;
    match expr {
        Expr::Aggregate(a) => {
            let op = AggOp::of(a)?;
            if !experimental && matches!(op, AggOp::LimitK | AggOp::LimitRatio) {
                return Err(parse_error(format!(
                    "{}() is experimental and must be enabled with \
                     --enable-feature=promql-experimental-functions",
                    a.op
                )));
            }
            if let Some(p) = &a.param {
                check(p)?;
            }
            check(&a.expr)
        }
        Expr::Unary(u) => check(&u.expr),
        Expr::Binary(b) => {
            check_fill(b, limits)?;
            let returns_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
            if returns_bool && crate::trim_operator::text(b.op.id()).is_some() {
                return Err(parse_error(
                    "bool modifier can only be used on comparison operators".into(),
                ));
            }
            check(&b.lhs)?;
            check(&b.rhs)
        }
        Expr::Paren(p) => check(&p.expr),
        Expr::Subquery(s) => check(&s.expr),
        Expr::Call(c) => {
            let Some(function) = registry::lookup(c.func.name) else {
                return Err(QueryError::unsupported(format!(
                    "function {:?}",
                    c.func.name
                )));
            };
            if function.experimental && !experimental {
                return Err(parse_error(format!(
                    "function {:?} is not enabled",
                    c.func.name
                )));
            }
            // The evaluator finds arguments by the table's signature: a
            // parser that reads the call otherwise would have them misread.
            if !function.signature_is(&c.func) {
                return Err(QueryError::Internal(format!(
                    "function {:?}: the parser's signature differs from Strata's",
                    c.func.name
                )));
            }
            c.args.args.iter().try_for_each(|a| check(a))
        }
        Expr::Extension(_) => Err(QueryError::unsupported("extension expressions")),
        Expr::VectorSelector(vs) => check_range_mode(vs, limits),
        Expr::MatrixSelector(ms) => check_range_mode(&ms.vs, limits),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) => Ok(()),
    }
}

/// Refuses an `anchored` or `smoothed` selector when
/// `extended_range_selectors` is off, with the parse error Prometheus gave
/// before 3.16, while its flag was off.
fn check_range_mode(vs: &VectorSelector, limits: &QueryLimits) -> Result<(), QueryError> {
    let word = match range_modifier::mode(vs) {
        RangeMode::Plain => return Ok(()),
        RangeMode::Anchored => "anchored",
        RangeMode::Smoothed => "smoothed",
    };
    if limits.extended_range_selectors {
        return Ok(());
    }
    Err(parse_error(format!(
        "{word} modifier is experimental and not enabled"
    )))
}

/// Refuses fill modifiers where Prometheus' parser refuses them: when
/// `binop_fill_modifiers` is off, on set operators and beside a scalar
/// (`promql-parser` accepts all three).
fn check_fill(b: &BinaryExpr, limits: &QueryLimits) -> Result<(), QueryError> {
    let Some(m) = &b.modifier else {
        return Ok(());
    };
    if m.fill_values.lhs.is_none() && m.fill_values.rhs.is_none() {
        return Ok(());
    }
    if !limits.binop_fill_modifiers {
        return Err(parse_error(
            "binop fill modifiers are experimental and not enabled".into(),
        ));
    }
    let vectors =
        b.lhs.value_type() == ValueType::Vector && b.rhs.value_type() == ValueType::Vector;
    if !vectors {
        return Err(parse_error(
            "filling in missing series only allowed between instant vectors".into(),
        ));
    }
    if matches!(b.op.id(), T_LAND | T_LOR | T_LUNLESS) {
        return Err(parse_error(
            "filling in missing series not allowed for set operators".into(),
        ));
    }
    Ok(())
}

/// Prometheus' parse error, for what its parser refuses and `promql-parser` does not
/// (without the position, which the parser does not give).
fn parse_error(message: String) -> QueryError {
    QueryError::BadData(format!(
        "invalid parameter \"query\": parse error: {message}"
    ))
}

/// The depth of an expression tree, a leaf being 1, found without
/// recursion so that a tree of any depth can be measured.
pub(crate) fn depth(expr: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(expr, 1usize)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        let children: Vec<&Expr> = match e {
            Expr::Aggregate(a) => a.param.iter().map(|p| &**p).chain([&*a.expr]).collect(),
            Expr::Unary(u) => vec![&*u.expr],
            Expr::Binary(b) => vec![&*b.lhs, &*b.rhs],
            Expr::Paren(p) => vec![&*p.expr],
            Expr::Subquery(s) => vec![&*s.expr],
            Expr::Call(c) => c.args.args.iter().map(|a| &**a).collect(),
            Expr::MatrixSelector(_)
            | Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::VectorSelector(_)
            | Expr::Extension(_) => Vec::new(),
        };
        stack.extend(children.into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

struct PlanContext {
    query_start: i64,
    query_end: i64,
    lookback: i64,
    max_regex_bytes: usize,
    max_subquery_points: usize,
}

impl PlanContext {
    fn at(&self, at: &Option<AtModifier>) -> Option<i64> {
        at.as_ref().map(|a| match a {
            AtModifier::Start => self.query_start,
            AtModifier::End => self.query_end,
            AtModifier::At(t) => system_time_ms(*t),
        })
    }
}

/// Every selector of `expr` with the range it reads, for a query evaluated
/// at steps in `[start, end]`; an error when a matcher's pattern is longer
/// than `max_regex_bytes`.
pub(crate) fn plan_selectors(
    expr: &Expr,
    start: i64,
    end: i64,
    lookback: i64,
    limits: &QueryLimits,
) -> Result<Vec<SelectorLoad>, QueryError> {
    let ctx = PlanContext {
        query_start: start,
        query_end: end,
        lookback,
        max_regex_bytes: limits.max_regex_bytes,
        max_subquery_points: limits.max_subquery_points,
    };
    let mut out = Vec::new();
    walk(expr, (start, end, true), &ctx, &mut out)?;
    Ok(out)
}

/// Refuses a subquery that would evaluate more than `max` points per
/// series over `span` ms of outer steps, before anything is loaded.
fn check_subquery_points(sq: &SubqueryExpr, span: i64, max: usize) -> Result<(), QueryError> {
    let step = sq
        .step
        .as_ref()
        .map(duration_ms)
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_SUBQUERY_STEP_MS);
    let points = duration_ms(&sq.range).saturating_add(span) / step;
    if points > i64::try_from(max).unwrap_or(i64::MAX) {
        return Err(QueryError::BadData(format!(
            "subquery {} would evaluate {points} points per series, more than \
             query.max_subquery_points ({max}): use a larger subquery step or a shorter range",
            sq
        )));
    }
    Ok(())
}

/// The selectors of `expr`, evaluated at steps in `[start, end]` (the
/// query's own steps when `query_steps`, else a subquery's).
fn walk(
    expr: &Expr,
    (start, end, query_steps): (i64, i64, bool),
    ctx: &PlanContext,
    out: &mut Vec<SelectorLoad>,
) -> Result<(), QueryError> {
    let grid = (start, end, query_steps);
    match expr {
        Expr::VectorSelector(vs) => {
            let mut load = load_for(vs, start, end, ctx.lookback, ctx)?;
            if query_steps && range_modifier::mode(vs) == RangeMode::Plain {
                load.reduce = Some(Reduce::Instant {
                    offset: offset_ms(&vs.offset),
                    at: ctx.at(&vs.at),
                });
            }
            out.push(load);
        }
        Expr::MatrixSelector(ms) => {
            let range = duration_ms(&ms.range);
            // An anchored or smoothed window also reads a lookback before.
            let window = match range_modifier::mode(&ms.vs) {
                RangeMode::Plain => range,
                RangeMode::Anchored | RangeMode::Smoothed => range.saturating_add(ctx.lookback),
            };
            out.push(load_for(&ms.vs, start, end, window, ctx)?)
        }
        Expr::Subquery(sq) => {
            let (s, e) = match ctx.at(&sq.at) {
                Some(t) => (t, t),
                None => (start, end),
            };
            let offset = offset_ms(&sq.offset);
            check_subquery_points(sq, e.saturating_sub(s), ctx.max_subquery_points)?;
            walk(
                &sq.expr,
                (
                    s.saturating_sub(offset)
                        .saturating_sub(duration_ms(&sq.range)),
                    e.saturating_sub(offset),
                    false,
                ),
                ctx,
                out,
            )?;
        }
        Expr::Aggregate(a) => {
            if let Some(p) = &a.param {
                walk(p, grid, ctx, out)?;
            }
            walk(&a.expr, grid, ctx, out)?;
        }
        Expr::Unary(u) => walk(&u.expr, grid, ctx, out)?,
        Expr::Binary(b) => {
            walk(&b.lhs, grid, ctx, out)?;
            walk(&b.rhs, grid, ctx, out)?;
        }
        Expr::Paren(p) => walk(&p.expr, grid, ctx, out)?,
        // `info` reads its first argument, and info series by its
        // second, a label selector that is not evaluated.
        Expr::Call(c) if c.func.name == "info" => {
            if let Some(a) = c.args.args.first() {
                walk(a, grid, ctx, out)?;
            }
            out.push(crate::eval::info::load(
                c,
                (start, end),
                ctx.lookback,
                &|m| ctx.at(m),
            )?);
        }
        Expr::Call(c) => {
            let eval = registry::lookup(c.func.name).map(|f| f.eval);
            let args: Vec<&Expr> = c.args.args.iter().map(|a| unwrap_parens(a)).collect();
            match (eval, args.as_slice()) {
                // `rate(x[5m])`: each series' points, as it is read.
                (Some(Eval::Range(f, output)), [Expr::MatrixSelector(ms)])
                    if query_steps
                        && output != RangeOutput::Absent
                        && range_modifier::mode(&ms.vs) == RangeMode::Plain =>
                {
                    let range = duration_ms(&ms.range);
                    let mut load = load_for(&ms.vs, start, end, range, ctx)?;
                    load.reduce = Some(Reduce::Range {
                        f,
                        hf: crate::eval::hist_range::hist_fn(c.func.name),
                        range,
                        offset: offset_ms(&ms.vs.offset),
                        at: ctx.at(&ms.vs.at),
                    });
                    out.push(load);
                }
                // `timestamp(x)` reads the samples' own times.
                (Some(Eval::Timestamp), [Expr::VectorSelector(vs)]) => {
                    out.push(load_for(vs, start, end, ctx.lookback, ctx)?)
                }
                _ => {
                    for a in args {
                        walk(a, grid, ctx, out)?;
                    }
                }
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
    Ok(())
}

/// The read of one selector that looks `window` ms back from each
/// reference time (the lookback for instant selectors, the range for range
/// selectors); windows are left-open.
fn load_for(
    vs: &VectorSelector,
    start: i64,
    end: i64,
    window: i64,
    ctx: &PlanContext,
) -> Result<SelectorLoad, QueryError> {
    let offset = offset_ms(&vs.offset);
    let (s, e) = match ctx.at(&vs.at) {
        Some(t) => (t, t),
        None => (start, end),
    };
    // A smoothed selector also reads a lookback after.
    let after = match range_modifier::mode(vs) {
        RangeMode::Smoothed => ctx.lookback,
        RangeMode::Plain | RangeMode::Anchored => 0,
    };
    Ok(SelectorLoad {
        key: selector_key(vs),
        matcher_sets: matcher_sets(vs, ctx.max_regex_bytes)?,
        mint: s
            .saturating_sub(offset)
            .saturating_sub(window)
            .saturating_add(1),
        maxt: e.saturating_sub(offset).saturating_add(after),
        reduce: None,
    })
}

/// The selector's matchers in Strata's vocabulary, one list per `or` branch;
/// a `bad_data` error when a pattern is longer than `max_regex_bytes` (see
/// [`crate::QueryLimits::max_regex_bytes`]) or does not compile.
pub(crate) fn matcher_sets(
    vs: &VectorSelector,
    max_regex_bytes: usize,
) -> Result<Vec<Vec<Matcher>>, QueryError> {
    check_regex_sizes(vs, max_regex_bytes)?;
    let convert = |ms: &[promql_parser::label::Matcher]| -> Result<Vec<Matcher>, QueryError> {
        let mut out = Vec::with_capacity(ms.len() + 1);
        if let Some(name) = &vs.name {
            out.push(
                Matcher::new(MatchOp::Equal, "__name__", name.clone())
                    .map_err(|e| QueryError::BadData(e.to_string()))?,
            );
        }
        // The marks of `anchored` and `smoothed` are no labels of series.
        for m in ms.iter().filter(|m| !range_modifier::is_mark(&m.name)) {
            out.push(to_matcher(m)?);
        }
        Ok(out)
    };
    if vs.matchers.or_matchers.is_empty() {
        Ok(vec![convert(&vs.matchers.matchers)?])
    } else {
        vs.matchers
            .or_matchers
            .iter()
            .map(|group| {
                let mut all = vs.matchers.matchers.clone();
                all.extend(group.iter().cloned());
                convert(&all)
            })
            .collect()
    }
}

/// A parser's matcher in Strata's vocabulary.
pub(crate) fn to_matcher(m: &promql_parser::label::Matcher) -> Result<Matcher, QueryError> {
    let op = match m.op {
        ParserMatchOp::Equal => MatchOp::Equal,
        ParserMatchOp::NotEqual => MatchOp::NotEqual,
        ParserMatchOp::Re(_) => MatchOp::RegexMatch,
        ParserMatchOp::NotRe(_) => MatchOp::RegexNoMatch,
    };
    Matcher::new(op, m.name.clone(), m.value.clone())
        .map_err(|e| QueryError::BadData(e.to_string()))
}

/// Refuses a selector with a `=~` or `!~` pattern longer than
/// `max_regex_bytes`, before anything compiles it again.
fn check_regex_sizes(vs: &VectorSelector, max_regex_bytes: usize) -> Result<(), QueryError> {
    let all = vs
        .matchers
        .matchers
        .iter()
        .chain(vs.matchers.or_matchers.iter().flatten());
    for m in all {
        let is_regex = matches!(m.op, ParserMatchOp::Re(_) | ParserMatchOp::NotRe(_));
        if is_regex && m.value.len() > max_regex_bytes {
            return Err(QueryError::BadData(format!(
                "regular expression for label {:?} is {} bytes, over the limit of {max_regex_bytes} bytes (max_regex_bytes)",
                m.name,
                m.value.len()
            )));
        }
    }
    Ok(())
}
