//! Aggregation operators (`sum`, `avg`, `topk`, `count_values`, ...) with
//! `by` / `without`, following Prometheus' `rangeEvalAgg`.

mod count_values;
mod fold;
mod limit;
mod mixed;
mod topk;

use std::collections::HashMap;

use promql_parser::parser::token::{
    T_AVG, T_BOTTOMK, T_COUNT, T_COUNT_VALUES, T_GROUP, T_LIMITK, T_LIMIT_RATIO, T_MAX, T_MIN,
    T_QUANTILE, T_STDDEV, T_STDVAR, T_SUM, T_TOPK,
};
use promql_parser::parser::{AggregateExpr, Expr, LabelModifier};
use strata_codec::Label;

use super::{total_points, unwrap_parens, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::{kahan_inc, quantile};
use crate::value::{is_metadata_label, Labels, Matrix, MatrixSeries, Point};
use fold::{split_by_groups, split_by_steps, FoldRange, PARALLEL_MIN_POINTS};
use strata_codec::threads::available as available_threads;

/// An aggregation operator, read from the parser's token once per
/// aggregation node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggOp {
    Sum,
    Avg,
    Count,
    Min,
    Max,
    Group,
    Stddev,
    Stdvar,
    Quantile,
    CountValues,
    Topk,
    Bottomk,
    LimitK,
    LimitRatio,
}

impl AggOp {
    /// The operator of `a`; an error naming it when Strata does not
    /// evaluate it.
    pub fn of(a: &AggregateExpr) -> Result<Self> {
        let op = match a.op.id() {
            T_SUM => Self::Sum,
            T_AVG => Self::Avg,
            T_COUNT => Self::Count,
            T_MIN => Self::Min,
            T_MAX => Self::Max,
            T_GROUP => Self::Group,
            T_STDDEV => Self::Stddev,
            T_STDVAR => Self::Stdvar,
            T_QUANTILE => Self::Quantile,
            T_COUNT_VALUES => Self::CountValues,
            T_TOPK => Self::Topk,
            T_BOTTOMK => Self::Bottomk,
            T_LIMITK => Self::LimitK,
            T_LIMIT_RATIO => Self::LimitRatio,
            _ => return Err(QueryError::unsupported(format!("aggregation {}", a.op))),
        };
        Ok(op)
    }
}

/// Most group-and-step states [`Evaluator::aggregate_by_series`] holds at
/// once (20 MB of 40-byte states: 200 groups over a day at 1-minute
/// steps); beyond it the step-by-step loop is used, which holds one state
/// per group.
const SERIES_MAJOR_MAX_CELLS: usize = 1 << 19;

/// How many series are aggregated between deadline checks.
const DEADLINE_CHECK_SERIES: usize = 1024;

/// Grouping of an aggregation: `by (labels)` or `without (labels)`.
struct Grouping {
    labels: Vec<String>,
    without: bool,
}

impl Grouping {
    fn from_expr(a: &AggregateExpr) -> Self {
        match &a.modifier {
            Some(LabelModifier::Include(ls)) => Self {
                labels: ls.labels.clone(),
                without: false,
            },
            Some(LabelModifier::Exclude(ls)) => Self {
                labels: ls.labels.clone(),
                without: true,
            },
            None => Self {
                labels: Vec::new(),
                without: false,
            },
        }
    }

    fn includes(&self, name: &str) -> bool {
        if self.without {
            // `without` also drops the metric name, type and unit.
            !is_metadata_label(name) && !self.labels.iter().any(|l| l == name)
        } else {
            self.labels.iter().any(|l| l == name)
        }
    }

    /// The labels of the group `labels` falls in (also its key).
    fn group_labels(&self, labels: &[Label]) -> Labels {
        labels
            .iter()
            .filter(|l| self.includes(&l.name))
            .cloned()
            .collect()
    }
}

/// Running state of one group at one step: 40 bytes, no allocation.
/// `quantile`'s values are not kept here but beside the step-by-step loop,
/// the only one that takes it.
#[derive(Default, Clone)]
struct Group {
    seen: bool,
    value: f64,
    mean: f64,
    kahan_c: f64,
    count: f64,
    incremental_mean: bool,
}

impl Group {
    fn start(op: AggOp, f: f64) -> Self {
        let mut g = Group {
            seen: true,
            value: f,
            mean: f,
            count: 1.0,
            ..Group::default()
        };
        match op {
            AggOp::Stddev | AggOp::Stdvar => g.value = if f.is_finite() { 0.0 } else { f64::NAN },
            AggOp::Group => g.value = 1.0,
            _ => {}
        }
        g
    }

    #[inline]
    fn add(&mut self, op: AggOp, f: f64) {
        match op {
            AggOp::Sum => (self.value, self.kahan_c) = kahan_inc(f, self.value, self.kahan_c),
            AggOp::Avg => {
                self.count += 1.0;
                if !self.incremental_mean {
                    let (v, c) = kahan_inc(f, self.value, self.kahan_c);
                    if !v.is_infinite() {
                        (self.value, self.kahan_c) = (v, c);
                        return;
                    }
                    self.incremental_mean = true;
                    self.mean = self.value / (self.count - 1.0);
                    self.kahan_c /= self.count - 1.0;
                }
                let q = (self.count - 1.0) / self.count;
                (self.mean, self.kahan_c) =
                    kahan_inc(f / self.count, q * self.mean, q * self.kahan_c);
            }
            AggOp::Max if self.value < f || self.value.is_nan() => self.value = f,
            AggOp::Min if self.value > f || self.value.is_nan() => self.value = f,
            AggOp::Count => self.count += 1.0,
            AggOp::Stddev | AggOp::Stdvar => {
                self.count += 1.0;
                let delta = f - self.mean;
                self.mean += delta / self.count;
                self.value += delta * (f - self.mean);
            }
            _ => {}
        }
    }

    fn finish(&self, op: AggOp) -> f64 {
        match op {
            AggOp::Sum => self.value + self.kahan_c,
            AggOp::Avg if self.incremental_mean => self.mean + self.kahan_c,
            AggOp::Avg => self.value / self.count + self.kahan_c / self.count,
            AggOp::Count => self.count,
            AggOp::Stdvar => self.value / self.count,
            AggOp::Stddev => (self.value / self.count).sqrt(),
            _ => self.value,
        }
    }
}

impl Evaluator<'_> {
    pub fn eval_aggregate(&mut self, a: &AggregateExpr) -> Result<Matrix> {
        let op = AggOp::of(a)?;
        let grouping = Grouping::from_expr(a);
        if op == AggOp::CountValues {
            return self.eval_count_values(a, grouping);
        }
        let params = self.step_params(a.param.as_deref())?;
        if op == AggOp::Quantile {
            self.warn_invalid_quantile_params(&params);
        }
        let original = self.current_samples;
        let out = match op {
            AggOp::Topk | AggOp::Bottomk => {
                if !topk::any_k(&params)? {
                    return Ok(Vec::new());
                }
                self.eval_select_k(op == AggOp::Topk, &a.expr, &grouping, &params)?
            }
            AggOp::LimitK => {
                if !topk::any_k(&params)? {
                    return Ok(Vec::new());
                }
                self.eval_limit(limit::Limit::K, &a.expr, &grouping, &params)?
            }
            AggOp::LimitRatio => {
                if !limit::any_ratio(&params, &self.annotations)? {
                    return Ok(Vec::new());
                }
                self.eval_limit(limit::Limit::Ratio, &a.expr, &grouping, &params)?
            }
            _ => self.eval_fold(op, &a.expr, &grouping, &params)?,
        };
        self.hold_samples(original);
        self.add_samples(total_points(&out))?;
        Ok(out)
    }

    /// Prometheus' warnings on `quantile`'s parameter over all steps: one
    /// for NaN, one for the greatest above 1, one for the least below 0.
    fn warn_invalid_quantile_params(&self, params: &[f64]) {
        use crate::annotations::invalid_quantile;
        if params.iter().any(|q| q.is_nan()) {
            self.annotations.add(invalid_quantile(f64::NAN));
        }
        let max = params.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if max > 1.0 {
            self.annotations.add(invalid_quantile(max));
        }
        let min = params.iter().copied().fold(f64::INFINITY, f64::min);
        if min < 0.0 {
            self.annotations.add(invalid_quantile(min));
        }
    }

    /// The value of an aggregation's parameter at each step, 0 where it has
    /// none; empty without a parameter.
    fn step_params(&mut self, param: Option<&Expr>) -> Result<Vec<f64>> {
        let Some(p) = param else {
            return Ok(Vec::new());
        };
        let m = self.eval_matrix(p)?;
        let mut values = vec![0.0; self.num_steps()];
        if let Some(s) = m.first() {
            for p in &s.points {
                let i = usize::try_from((p.t - self.start) / self.interval.max(1));
                if let Some(slot) = i.ok().and_then(|i| values.get_mut(i)) {
                    *slot = p.v;
                }
            }
        }
        Ok(values)
    }

    /// An aggregation that folds each group's values into one per step
    /// (every operator but `topk`, `bottomk` and `count_values`).
    fn eval_fold(
        &mut self,
        op: AggOp,
        expr: &Expr,
        grouping: &Grouping,
        params: &[f64],
    ) -> Result<Matrix> {
        let input = self.eval_matrix(expr)?;
        let (series_group, group_labels) = group_series(grouping, &input);
        if input.iter().any(|s| !s.histograms.is_empty()) {
            return self.aggregate_mixed(op, &input, &series_group, group_labels, params);
        }
        if op != AggOp::Quantile
            && group_labels.len().saturating_mul(self.num_steps()) <= SERIES_MAJOR_MAX_CELLS
        {
            self.aggregate_by_series(op, &input, &series_group, group_labels)
        } else {
            self.aggregate_by_step(op, &input, &series_group, group_labels, params)
        }
    }

    /// Aggregates `input` step by step, holding one state per group: the
    /// way for more groups and steps than [`Self::aggregate_by_series`]
    /// holds states for.
    fn aggregate_by_step(
        &self,
        op: AggOp,
        input: &Matrix,
        series_group: &[usize],
        group_labels: Vec<Labels>,
        params: &[f64],
    ) -> Result<Matrix> {
        let mut out: Matrix = group_labels
            .into_iter()
            .map(|labels| MatrixSeries {
                labels,
                points: Vec::new(),
                histograms: Vec::new(),
            })
            .collect();
        let mut cursors = vec![0usize; input.len()];
        let mut groups: Vec<Group> = vec![Group::default(); out.len()];
        // `quantile`'s values at this step, by group.
        let mut values: Vec<Vec<f64>> = if op == AggOp::Quantile {
            vec![Vec::new(); out.len()]
        } else {
            Vec::new()
        };
        let (first, interval) = (self.start, self.interval.max(1));
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            let param = params.get(step).copied().unwrap_or(0.0);
            groups.iter_mut().for_each(|g| g.seen = false);
            for ((s, cursor), &gi) in input.iter().zip(&mut cursors).zip(series_group) {
                let Some(f) = next_value(ts, &s.points, cursor) else {
                    continue;
                };
                let Some(g) = groups.get_mut(gi) else {
                    continue;
                };
                if g.seen {
                    g.add(op, f);
                } else {
                    *g = Group::start(op, f);
                }
                if let Some(vs) = values.get_mut(gi) {
                    vs.push(f);
                }
            }
            for (i, (g, series)) in groups.iter_mut().zip(&mut out).enumerate() {
                if g.seen {
                    let v = match values.get_mut(i) {
                        Some(vs) => {
                            let q = quantile(param, vs);
                            vs.clear();
                            q
                        }
                        None => g.finish(op),
                    };
                    series.points.push(Point { t: ts, v });
                }
            }
        }
        out.retain(|s| !s.points.is_empty());
        Ok(out)
    }

    /// Aggregates `input` one series at a time into a state per group and
    /// step. Each state still takes its group's values in input order, as
    /// Prometheus' step-by-step loop adds them, so results are identical;
    /// but each series' points are read once, front to back, instead of
    /// every series being revisited at every step. Large inputs with several
    /// groups are split by group between threads: a group's states only
    /// ever see its own series, so the order stays the same. Not for
    /// `quantile`, whose states hold every value.
    fn aggregate_by_series(
        &self,
        op: AggOp,
        input: &Matrix,
        series_group: &[usize],
        group_labels: Vec<Labels>,
    ) -> Result<Matrix> {
        let steps = self.num_steps();
        let (first, interval) = (self.start, self.interval.max(1));
        let mut cells: Vec<Group> = vec![Group::default(); group_labels.len() * steps];
        let mut rows: Vec<Option<&mut [Group]>> =
            cells.chunks_mut(steps.max(1)).map(Some).collect();
        let fold = FoldRange {
            op,
            first,
            interval,
            deadline: self.deadline,
        };
        let work = total_points(input);
        let threads = available_threads();
        if threads < 2 || work < PARALLEL_MIN_POINTS {
            fold.series(input, series_group, &mut rows)?;
        } else {
            // Fewer groups than threads (`sum(...)`): each thread takes a
            // run of every group's steps; else whole groups to each thread.
            let parts = if rows.len() < threads {
                split_by_steps(&fold, rows, steps, threads)
            } else {
                split_by_groups(&fold, rows, series_group, threads)
            };
            std::thread::scope(|scope| {
                let handles: Vec<_> = parts
                    .into_iter()
                    .map(|(fold, mut part)| {
                        scope.spawn(move || fold.series(input, series_group, &mut part))
                    })
                    .collect();
                handles.into_iter().try_for_each(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(QueryError::Internal("aggregation panicked".into()))
                    })
                })
            })?;
        }
        let mut out: Matrix = Vec::new();
        for (labels, row) in group_labels.into_iter().zip(cells.chunks_mut(steps.max(1))) {
            let points: Vec<Point> = row
                .iter_mut()
                .enumerate()
                .filter(|(_, g)| g.seen)
                .map(|(step, g)| Point {
                    t: first + step as i64 * interval,
                    v: g.finish(op),
                })
                .collect();
            if !points.is_empty() {
                out.push(MatrixSeries::floats(labels, points));
            }
        }
        Ok(out)
    }
}

/// The group of each input series, and each group's labels, groups in
/// order of first appearance.
fn group_series(grouping: &Grouping, input: &Matrix) -> (Vec<usize>, Vec<Labels>) {
    let mut group_index: HashMap<Labels, usize> = HashMap::new();
    let mut group_labels: Vec<Labels> = Vec::new();
    let mut series_group: Vec<usize> = Vec::with_capacity(input.len());
    for s in input {
        let key = grouping.group_labels(&s.labels);
        let next = group_labels.len();
        let g = *group_index.entry(key.clone()).or_insert_with(|| {
            group_labels.push(key);
            next
        });
        series_group.push(g);
    }
    (series_group, group_labels)
}

/// The histogram of a series at step `ts`, advancing its cursor.
fn next_histogram<'h>(
    ts: i64,
    hs: &'h [crate::value::HPoint],
    cursor: &mut usize,
) -> Option<&'h strata_codec::histogram::FloatHistogram> {
    while let Some((t, h)) = hs.get(*cursor) {
        if *t < ts {
            *cursor += 1;
            continue;
        }
        if *t == ts {
            *cursor += 1;
            return Some(h);
        }
        return None;
    }
    None
}

/// The value of a series at step `ts`, advancing its cursor.
fn next_value(ts: i64, points: &[Point], cursor: &mut usize) -> Option<f64> {
    while let Some(p) = points.get(*cursor) {
        if p.t < ts {
            *cursor += 1;
            continue;
        }
        if p.t == ts {
            *cursor += 1;
            return Some(p.v);
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests;
