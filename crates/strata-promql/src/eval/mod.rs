//! The evaluator: one node at a time, each over the whole step range, as
//! Prometheus' `evaluator.eval` does.
//!
//! Every instant-vector or scalar node evaluates to a [`Matrix`] holding at
//! most one point per step; a scalar is a single label-less series. Nodes
//! that combine their children step by step go through
//! [`Evaluator::range_eval`], which gathers the children's vectors at each
//! step, calls the node's step function and reassembles the output series.

pub(crate) mod aggregate;
pub(crate) mod binary;
pub(crate) mod call;
pub(crate) mod extended_histogram;
pub(crate) mod extended_range;
pub(crate) mod hist_range;
pub(crate) mod info;
pub(crate) mod matrix_call;
pub(crate) mod query_context;
pub(crate) mod range_steps;
pub(crate) mod reduce;
pub(crate) mod selector;
pub(crate) mod subquery;

use std::collections::HashMap;
use std::time::Instant;

use promql_parser::parser::{AtModifier, Expr, Offset};

use crate::error::QueryError;
use crate::source::Series;
use crate::value::{
    drop_metric_name, empty_labels, Labels, Matrix, MatrixSeries, Point, Sample, Value, Vector,
};

pub(crate) type Result<T> = std::result::Result<T, QueryError>;

/// Selector data loaded before evaluation, keyed by the address of the
/// `VectorSelector` node that asked for it (the AST is boxed and not moved
/// while evaluating).
pub(crate) type SelectorData = HashMap<usize, Loaded>;

/// One selector's loaded series: its samples, or (`reduced`) its points at
/// the query's steps, reduced as they were read (`reduce.rs`).
pub(crate) struct Loaded {
    pub series: Vec<Series>,
    pub reduced: bool,
}

/// The key of a selector node in [`SelectorData`].
pub(crate) fn selector_key(vs: &promql_parser::parser::VectorSelector) -> usize {
    vs as *const _ as usize
}

/// Evaluation state for one step range (the query's, or a subquery's).
pub(crate) struct Evaluator<'a> {
    pub start: i64,
    pub end: i64,
    pub interval: i64,
    /// The query's own start and end, which `@ start()` and `@ end()` name.
    pub query_start: i64,
    pub query_end: i64,
    pub lookback: i64,
    pub data: &'a SelectorData,
    pub deadline: Option<Instant>,
    pub max_samples: usize,
    /// Samples currently held by evaluation results, as Prometheus counts
    /// them against `max_samples`. Set through [`Evaluator::hold_samples`],
    /// which keeps `peak_samples`.
    pub current_samples: usize,
    /// The most `current_samples` has been (Prometheus' `peakSamples`).
    pub peak_samples: usize,
    /// Interval of subqueries written without a step (`[5m:]`).
    pub default_subquery_step: i64,
    /// The warnings and infos met so far.
    pub annotations: crate::annotations::Shared,
}

impl<'a> Evaluator<'a> {
    pub fn num_steps(&self) -> usize {
        if self.end < self.start {
            return 0;
        }
        usize::try_from((self.end - self.start) / self.interval.max(1) + 1).unwrap_or(0)
    }

    /// The step timestamps, first to last.
    pub fn steps(&self) -> impl Iterator<Item = i64> {
        let (start, interval, n) = (self.start, self.interval.max(1), self.num_steps());
        (0..n as i64).map(move |i| start + i * interval)
    }

    pub fn check_deadline(&self) -> Result<()> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(QueryError::timeout()),
            _ => Ok(()),
        }
    }

    pub fn add_samples(&mut self, n: usize) -> Result<()> {
        self.hold_samples(self.current_samples.saturating_add(n));
        if self.current_samples > self.max_samples {
            return Err(QueryError::too_many_samples());
        }
        Ok(())
    }

    /// Sets the samples held now, raising the peak if it is a new one.
    pub fn hold_samples(&mut self, n: usize) {
        self.current_samples = n;
        self.peak_samples = self.peak_samples.max(n);
    }

    /// An evaluator for a subquery's own step range.
    pub fn child(&self, start: i64, end: i64, interval: i64) -> Evaluator<'a> {
        Evaluator {
            start,
            end,
            interval,
            query_start: self.query_start,
            query_end: self.query_end,
            lookback: self.lookback,
            data: self.data,
            deadline: self.deadline,
            max_samples: self.max_samples,
            current_samples: self.current_samples,
            peak_samples: self.current_samples,
            default_subquery_step: self.default_subquery_step,
            annotations: self.annotations.clone(),
        }
    }

    /// The timestamp an `@` modifier pins evaluation to.
    pub fn at_ms(&self, at: &Option<AtModifier>) -> Option<i64> {
        at.as_ref().map(|a| match a {
            AtModifier::Start => self.query_start,
            AtModifier::End => self.query_end,
            AtModifier::At(t) => system_time_ms(*t),
        })
    }

    pub fn eval(&mut self, expr: &Expr) -> Result<Value> {
        self.check_deadline()?;
        if self.end < self.start {
            return Ok(Value::Matrix(Vec::new()));
        }
        match expr {
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::NumberLiteral(n) => {
                let v = n.val;
                self.range_eval(&[], &mut |_, _| Ok(vec![Sample::float(empty_labels(), v)]))
                    .map(Value::Matrix)
            }
            Expr::StringLiteral(_) => Ok(Value::String),
            Expr::VectorSelector(vs) => self.eval_vector_selector(vs).map(Value::Matrix),
            Expr::MatrixSelector(ms) => self.eval_matrix_selector(ms).map(Value::Matrix),
            Expr::Subquery(sq) => self.subquery_series(sq).map(Value::Matrix),
            Expr::Unary(u) => {
                let mut mat = self.eval_matrix(&u.expr)?;
                for s in &mut mat {
                    s.labels = drop_metric_name(&s.labels);
                    for p in &mut s.points {
                        p.v = -p.v;
                    }
                    for (_, h) in &mut s.histograms {
                        crate::float_histogram::mul(h, -1.0);
                    }
                }
                merge_same_labelset(mat).map(Value::Matrix)
            }
            Expr::Binary(b) => self.eval_binary(b).map(Value::Matrix),
            Expr::Aggregate(a) => self.eval_aggregate(a).map(Value::Matrix),
            Expr::Call(c) => self.eval_call(c).map(Value::Matrix),
            Expr::Extension(_) => Err(QueryError::unsupported("extension expressions")),
        }
    }

    /// Evaluates a node that must produce series (not a string).
    pub fn eval_matrix(&mut self, expr: &Expr) -> Result<Matrix> {
        match self.eval(expr)? {
            Value::Matrix(m) => Ok(m),
            Value::String => Err(QueryError::exec("unexpected string expression")),
        }
    }

    /// Evaluates `args` (string arguments are skipped and passed as empty
    /// vectors), then calls `f` once per step with the arguments' vectors at
    /// that step and the step's timestamp, and assembles the output series.
    ///
    /// As in Prometheus, two output samples with the same labels at one step
    /// are an error.
    pub fn range_eval(
        &mut self,
        args: &[&Expr],
        f: &mut dyn FnMut(&[Vector], i64) -> Result<Vector>,
    ) -> Result<Matrix> {
        let original = self.current_samples;
        let mut inputs: Vec<Matrix> = Vec::with_capacity(args.len());
        for a in args {
            match self.eval(a)? {
                Value::Matrix(m) => inputs.push(m),
                Value::String => inputs.push(Vec::new()),
            }
        }
        let mut cursors: Vec<Vec<(usize, usize)>> =
            inputs.iter().map(|m| vec![(0, 0); m.len()]).collect();
        let mut vectors: Vec<Vector> = vec![Vec::new(); inputs.len()];
        let mut out: Matrix = Vec::new();
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let instant = self.start == self.end;
        let held = self.current_samples;
        let mut produced = 0usize;
        let (first, interval) = (self.start, self.interval.max(1));
        for i in 0..self.num_steps() as i64 {
            let ts = first + i * interval;
            self.check_deadline()?;
            for ((m, c), v) in inputs.iter().zip(&mut cursors).zip(&mut vectors) {
                gather(ts, m, c, v);
            }
            let result = f(&vectors, ts)?;
            produced += result.len();
            self.hold_samples(held + produced);
            if self.current_samples > self.max_samples {
                return Err(QueryError::too_many_samples());
            }
            if instant {
                check_same_labelset(&result)?;
                out = result
                    .into_iter()
                    .map(|s| {
                        let mut series = MatrixSeries::floats(s.labels, Vec::new());
                        match s.h {
                            Some(h) => series.histograms.push((ts, *h)),
                            None => series.points.push(Point { t: ts, v: s.v }),
                        }
                        series
                    })
                    .collect();
                break;
            }
            for s in result {
                match index.get(&s.labels).and_then(|&i| out.get_mut(i)) {
                    Some(series) => {
                        if series.points.last().is_some_and(|p| p.t == ts)
                            || series.histograms.last().is_some_and(|p| p.0 == ts)
                        {
                            return Err(same_labelset_error());
                        }
                        match s.h {
                            Some(h) => series.histograms.push((ts, *h)),
                            None => series.points.push(Point { t: ts, v: s.v }),
                        }
                    }
                    None => {
                        index.insert(s.labels.clone(), out.len());
                        let mut series = MatrixSeries::floats(s.labels, Vec::new());
                        match s.h {
                            Some(h) => series.histograms.push((ts, *h)),
                            None => series.points.push(Point { t: ts, v: s.v }),
                        }
                        out.push(series);
                    }
                }
            }
        }
        self.hold_samples(original + total_points(&out));
        Ok(out)
    }
}

/// Fills `out` with the samples of `m` at step `ts`, advancing each series'
/// cursor past it.
pub(crate) fn gather(ts: i64, m: &Matrix, cursors: &mut [(usize, usize)], out: &mut Vector) {
    out.clear();
    for (s, (c, hc)) in m.iter().zip(cursors.iter_mut()) {
        while let Some(p) = s.points.get(*c) {
            if p.t < ts {
                *c += 1;
                continue;
            }
            if p.t == ts {
                out.push(Sample::float(s.labels.clone(), p.v));
                *c += 1;
            }
            break;
        }
        while let Some((t, h)) = s.histograms.get(*hc) {
            if *t < ts {
                *hc += 1;
                continue;
            }
            if *t == ts {
                out.push(Sample::histogram(s.labels.clone(), h.clone()));
                *hc += 1;
            }
            break;
        }
    }
}

pub(crate) fn total_points(m: &Matrix) -> usize {
    m.iter().map(MatrixSeries::len).sum()
}

pub(crate) fn same_labelset_error() -> QueryError {
    QueryError::exec("vector cannot contain metrics with the same labelset")
}

/// Errors when two samples of one step share a label set.
pub(crate) fn check_same_labelset(v: &Vector) -> Result<()> {
    if v.len() < 2 {
        return Ok(());
    }
    let mut seen = std::collections::HashSet::with_capacity(v.len());
    for s in v {
        if !seen.insert(&s.labels) {
            return Err(same_labelset_error());
        }
    }
    Ok(())
}

/// Errors when two series of a matrix share a label set.
pub(crate) fn check_matrix_same_labelset(m: &Matrix) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(m.len());
    for s in m {
        if !seen.insert(&s.labels) {
            return Err(same_labelset_error());
        }
    }
    Ok(())
}

/// Merges series that ended up with the same labels (after dropping the
/// metric name), erroring only when they have a point at the same time, as
/// Prometheus' `mergeSeriesWithSameLabelset`.
pub(crate) fn merge_same_labelset(m: Matrix) -> Result<Matrix> {
    if check_matrix_same_labelset(&m).is_ok() {
        return Ok(m);
    }
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut out: Matrix = Vec::new();
    for s in m {
        match index.get(&s.labels).and_then(|&i| out.get_mut(i)) {
            Some(merged) => {
                merged.points.extend(s.points);
                merged.histograms.extend(s.histograms);
            }
            None => {
                index.insert(s.labels.clone(), out.len());
                out.push(s);
            }
        }
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.t);
        s.histograms.sort_by_key(|p| p.0);
        if s.points
            .windows(2)
            .any(|w| matches!(w, [a, b] if a.t == b.t))
            || s.histograms
                .windows(2)
                .any(|w| matches!(w, [a, b] if a.0 == b.0))
            || s.histograms
                .iter()
                .any(|(t, _)| s.points.binary_search_by_key(t, |p| p.t).is_ok())
        {
            return Err(same_labelset_error());
        }
    }
    Ok(out)
}

/// Milliseconds since the epoch of a `SystemTime` (negative before it).
pub(crate) fn system_time_ms(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// An `offset` in milliseconds (negative offsets look forward).
pub(crate) fn offset_ms(o: &Option<Offset>) -> i64 {
    match o {
        None => 0,
        Some(Offset::Pos(d)) => duration_ms(d),
        Some(Offset::Neg(d)) => -duration_ms(d),
    }
}

pub(crate) fn duration_ms(d: &std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Strips parentheses, as Prometheus' preprocessing does for function and
/// aggregation arguments.
pub(crate) fn unwrap_parens(mut e: &Expr) -> &Expr {
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    e
}
