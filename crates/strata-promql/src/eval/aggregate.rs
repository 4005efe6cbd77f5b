//! Aggregation operators (`sum`, `avg`, `topk`, `count_values`, ...) with
//! `by` / `without`, following Prometheus' `rangeEvalAgg`.

mod limit;
mod topk;

use std::collections::HashMap;
use std::time::Instant;

use promql_parser::parser::token::{
    T_AVG, T_BOTTOMK, T_COUNT, T_COUNT_VALUES, T_GROUP, T_LIMITK, T_LIMIT_RATIO, T_MAX, T_MIN,
    T_QUANTILE, T_STDDEV, T_STDVAR, T_SUM, T_TOPK,
};
use promql_parser::parser::{AggregateExpr, Expr, LabelModifier};
use strata_codec::Label;

use super::{total_points, unwrap_parens, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::{format_go_float, kahan_inc, quantile};
use crate::value::{set_label, Labels, Matrix, MatrixSeries, Point};
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
            name != "__name__" && !self.labels.iter().any(|l| l == name)
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

    /// Aggregates an input with histograms step by step, as Prometheus'
    /// `aggregation`: `sum` and `avg` of histograms, `count` and `group` of
    /// both kinds, the others ignoring histograms (with an info); a group
    /// of floats and histograms under `sum` or `avg` gives nothing (with a
    /// warning).
    fn aggregate_mixed(
        &self,
        op: AggOp,
        input: &Matrix,
        series_group: &[usize],
        group_labels: Vec<Labels>,
        params: &[f64],
    ) -> Result<Matrix> {
        use crate::annotations as anno;
        use crate::float_histogram as fh;
        use strata_codec::histogram::CounterResetHint;

        #[derive(Clone)]
        enum Acc {
            Sum(fh::KahanSum),
            Mean(fh::KahanMean),
        }
        #[derive(Default, Clone)]
        struct HistState {
            value: Option<Acc>,
            has_float: bool,
            has_histogram: bool,
            incompatible: bool,
            reset: bool,
            not_reset: bool,
        }
        let annos = &self.annotations;
        let op_name = match op {
            AggOp::Min => "min",
            AggOp::Max => "max",
            AggOp::Stddev => "stddev",
            AggOp::Stdvar => "stdvar",
            AggOp::Quantile => "quantile",
            _ => "",
        };
        let mut out: Matrix = group_labels
            .into_iter()
            .map(|labels| MatrixSeries::floats(labels, Vec::new()))
            .collect();
        let mut cursors = vec![(0usize, 0usize); input.len()];
        let mut groups: Vec<Group> = vec![Group::default(); out.len()];
        let mut hists: Vec<HistState> = vec![HistState::default(); out.len()];
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); out.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            let param = params.get(step).copied().unwrap_or(0.0);
            groups.iter_mut().for_each(|g| g.seen = false);
            for ((s, cursor), &gi) in input.iter().zip(&mut cursors).zip(series_group) {
                let float = next_value(ts, &s.points, &mut cursor.0);
                let hist = if float.is_none() {
                    next_histogram(ts, &s.histograms, &mut cursor.1)
                } else {
                    None
                };
                if float.is_none() && hist.is_none() {
                    continue;
                }
                let (Some(g), Some(hs), Some(vs)) =
                    (groups.get_mut(gi), hists.get_mut(gi), values.get_mut(gi))
                else {
                    continue;
                };
                let f = float.unwrap_or(0.0);
                if let Some(h) = hist {
                    if matches!(
                        op,
                        AggOp::Min | AggOp::Max | AggOp::Stddev | AggOp::Stdvar | AggOp::Quantile
                    ) {
                        annos.add(anno::histogram_ignored_in_aggregation(op_name));
                        continue;
                    }
                    if matches!(op, AggOp::Sum | AggOp::Avg) {
                        if !g.seen {
                            *g = Group::start(op, 0.0);
                            *hs = HistState::default();
                            vs.clear();
                        } else {
                            g.count += 1.0;
                        }
                        hs.has_histogram = true;
                        match h.counter_reset_hint {
                            CounterResetHint::Reset => hs.reset = true,
                            CounterResetHint::NotReset => hs.not_reset = true,
                            _ => {}
                        }
                        if hs.incompatible {
                            continue;
                        }
                        let added = match &mut hs.value {
                            None if !hs.has_float => {
                                hs.value = Some(if op == AggOp::Avg {
                                    Acc::Mean(fh::KahanMean::new(h.clone()))
                                } else {
                                    Acc::Sum(fh::KahanSum::new(h.clone()))
                                });
                                None
                            }
                            None => None,
                            Some(Acc::Sum(sum)) => Some(sum.add(h)),
                            Some(Acc::Mean(mean)) => Some(mean.add(h)),
                        };
                        match added {
                            None => {}
                            Some(result) => match result {
                                Ok(c) => {
                                    if c.nhcb_bounds_reconciled {
                                        annos.add(anno::mismatched_custom_buckets("aggregation"));
                                    }
                                }
                                Err(_) => {
                                    annos.add(anno::mixed_exponential_custom(
                                        crate::value::get_label(&s.labels, "__name__"),
                                    ));
                                    hs.incompatible = true;
                                }
                            },
                        }
                        continue;
                    }
                }
                // A float, or a histogram under count or group.
                if g.seen {
                    if matches!(op, AggOp::Sum | AggOp::Avg) {
                        hs.has_float = true;
                    }
                    g.add(op, f);
                } else {
                    *g = Group::start(op, f);
                    *hs = HistState {
                        has_float: true,
                        ..HistState::default()
                    };
                    vs.clear();
                }
                if op == AggOp::Quantile {
                    vs.push(f);
                }
            }
            for ((g, hs), (series, vs)) in groups
                .iter_mut()
                .zip(&mut hists)
                .zip(out.iter_mut().zip(&mut values))
            {
                if !g.seen {
                    continue;
                }
                if matches!(op, AggOp::Sum | AggOp::Avg) && hs.has_histogram {
                    if hs.has_float {
                        annos.add(anno::mixed_floats_histograms_agg());
                        continue;
                    }
                    if hs.reset && hs.not_reset {
                        annos.add(anno::counter_reset_collision("aggregation"));
                    }
                    if hs.incompatible {
                        continue;
                    }
                    if let Some(acc) = hs.value.take() {
                        let mut h = match acc {
                            Acc::Sum(sum) => sum.finish(),
                            Acc::Mean(mean) => mean.finish(),
                        };
                        fh::compact(&mut h);
                        series.histograms.push((ts, h));
                    }
                    continue;
                }
                let v = if op == AggOp::Quantile {
                    let q = quantile(param, vs);
                    vs.clear();
                    q
                } else {
                    g.finish(op)
                };
                series.points.push(Point { t: ts, v });
            }
        }
        out.retain(|s| !s.is_empty());
        Ok(out)
    }

    fn eval_count_values(&mut self, a: &AggregateExpr, grouping: Grouping) -> Result<Matrix> {
        let label = match a.param.as_deref().map(unwrap_parens) {
            Some(Expr::StringLiteral(s)) => s.val.clone(),
            _ => return Err(QueryError::exec("count_values needs a string parameter")),
        };
        if label.is_empty() {
            return Err(QueryError::exec("invalid label name \"\""));
        }
        let mut grouping = grouping;
        if !grouping.without {
            grouping.labels.push(label.clone());
        }
        let original = self.current_samples;
        let input = self.eval_matrix(&a.expr)?;
        // A series' output group for a value is worked out once (labels set,
        // grouped, looked up) and then found by (series, value bits): each
        // step only counts.
        let mut key_of: HashMap<(usize, u64), usize> = HashMap::new();
        let mut keys: HashMap<Labels, usize> = HashMap::new();
        let mut out: Matrix = Vec::new();
        let mut counts: Vec<f64> = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        let mut cursors = vec![(0usize, 0usize); input.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        let mut produced = 0usize;
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            for (i, (series, cursor)) in input.iter().zip(&mut cursors).enumerate() {
                let mut group_of = |value: &str| {
                    let metric = set_label(&series.labels, &label, value);
                    let labels = grouping.group_labels(&metric);
                    *keys.entry(labels.clone()).or_insert_with(|| {
                        out.push(MatrixSeries::floats(labels, Vec::new()));
                        counts.push(0.0);
                        out.len() - 1
                    })
                };
                let key = match next_value(ts, &series.points, &mut cursor.0) {
                    Some(v) => *key_of
                        .entry((i, v.to_bits()))
                        .or_insert_with(|| group_of(&format_go_float(v))),
                    // A histogram counts under its text form.
                    None => match next_histogram(ts, &series.histograms, &mut cursor.1) {
                        Some(h) => group_of(&crate::float_histogram::to_string(h)),
                        None => continue,
                    },
                };
                if let Some(c) = counts.get_mut(key) {
                    if *c == 0.0 {
                        touched.push(key);
                    }
                    *c += 1.0;
                }
            }
            produced += touched.len();
            if original.saturating_add(produced) > self.max_samples {
                return Err(QueryError::too_many_samples());
            }
            for key in touched.drain(..) {
                if let (Some(c), Some(series)) = (counts.get_mut(key), out.get_mut(key)) {
                    series.points.push(Point { t: ts, v: *c });
                    *c = 0.0;
                }
            }
        }
        self.hold_samples(original + total_points(&out));
        Ok(out)
    }
}

/// Below this many input points an aggregation runs on one thread: a
/// thread costs tens of microseconds to start.
const PARALLEL_MIN_POINTS: usize = 200_000;

/// One thread's share of [`Evaluator::aggregate_by_series`]: how it folds,
/// and the groups' rows of states it folds into (`None` for another
/// thread's).
type FoldPart<'c> = (FoldRange, Vec<Option<&'c mut [Group]>>);

/// Whole groups to each of `threads`, about as many series each.
fn split_by_groups<'c>(
    fold: &FoldRange,
    mut rows: Vec<Option<&'c mut [Group]>>,
    series_group: &[usize],
    threads: usize,
) -> Vec<FoldPart<'c>> {
    let mut per_group = vec![0usize; rows.len()];
    for &g in series_group {
        if let Some(n) = per_group.get_mut(g) {
            *n += 1;
        }
    }
    let mut load = vec![0usize; threads];
    let mut parts: Vec<FoldPart<'c>> = (0..threads)
        .map(|_| (*fold, Vec::with_capacity(rows.len())))
        .collect();
    for (row, n) in rows.iter_mut().zip(per_group) {
        let Some((t, least)) = load.iter_mut().enumerate().min_by_key(|(_, l)| **l) else {
            continue;
        };
        *least += n;
        for (i, (_, part)) in parts.iter_mut().enumerate() {
            part.push(if i == t { row.take() } else { None });
        }
    }
    parts
}

/// A run of every group's `steps` to each of `threads`: each state still
/// takes its values in input order, from the one thread that owns it.
fn split_by_steps<'c>(
    fold: &FoldRange,
    rows: Vec<Option<&'c mut [Group]>>,
    steps: usize,
    threads: usize,
) -> Vec<FoldPart<'c>> {
    let per = steps.div_ceil(threads).max(1);
    let mut parts: Vec<FoldPart<'c>> = (0..threads)
        .map(|k| {
            let first = fold.first + (k * per) as i64 * fold.interval;
            (FoldRange { first, ..*fold }, Vec::with_capacity(rows.len()))
        })
        .collect();
    for row in rows {
        let mut rest = row;
        for (_, part) in parts.iter_mut() {
            part.push(rest.take().map(|r| {
                let (mine, later) = r.split_at_mut(per.min(r.len()));
                rest = Some(later);
                mine
            }));
        }
    }
    parts
}

/// How [`Evaluator::aggregate_by_series`] folds series into their groups'
/// states: `first` is the time of each row's first state.
#[derive(Clone, Copy)]
struct FoldRange {
    op: AggOp,
    first: i64,
    interval: i64,
    deadline: Option<Instant>,
}

impl FoldRange {
    /// Folds every series whose group has a row in `rows` (one per group,
    /// one state per step) into it, in input order.
    fn series(
        &self,
        input: &Matrix,
        series_group: &[usize],
        rows: &mut [Option<&mut [Group]>],
    ) -> Result<()> {
        for (i, (s, &g)) in input.iter().zip(series_group).enumerate() {
            if i % DEADLINE_CHECK_SERIES == 0 && self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                return Err(QueryError::timeout());
            }
            if let Some(Some(row)) = rows.get_mut(g) {
                self.points(&s.points, row);
            }
        }
        Ok(())
    }

    /// Adds one series' points to its group's states, one per step (`row`);
    /// points off the step grid are not any step's value.
    fn points(&self, points: &[Point], row: &mut [Group]) {
        // The operator is chosen once per series, not once per point.
        match self.op {
            AggOp::Sum => self.fold(points, row, |g, f| {
                (g.value, g.kahan_c) = kahan_inc(f, g.value, g.kahan_c);
            }),
            AggOp::Max => self.fold(points, row, |g, f| {
                if g.value < f || g.value.is_nan() {
                    g.value = f;
                }
            }),
            AggOp::Min => self.fold(points, row, |g, f| {
                if g.value > f || g.value.is_nan() {
                    g.value = f;
                }
            }),
            AggOp::Count => self.fold(points, row, |g, _| g.count += 1.0),
            op => self.fold(points, row, |g, f| g.add(op, f)),
        }
    }

    /// [`Self::points`] with `add` folding a value into a state already
    /// started.
    #[inline(always)]
    fn fold(&self, points: &[Point], row: &mut [Group], add: impl Fn(&mut Group, f64)) {
        let (op, first, interval) = (self.op, self.first, self.interval);
        let mut next = 0;
        // A series mostly starts at or after the first step; its points
        // are cold here, and a search would miss the cache at every probe.
        let from = if points.first().is_none_or(|p| p.t >= first) {
            0
        } else {
            points.partition_point(|p| p.t < first)
        };
        for p in points.get(from..).unwrap_or(&[]) {
            // A point is almost always at the next step: checking that first
            // spares two integer divisions per point.
            let step = if next < row.len() && p.t == first + next as i64 * interval {
                next
            } else {
                let offset = p.t - first;
                if offset < 0 || offset % interval != 0 {
                    continue;
                }
                let Ok(step) = usize::try_from(offset / interval) else {
                    continue;
                };
                step
            };
            if step >= row.len() {
                // Points come in time order: the rest are past the row.
                break;
            }
            let Some(g) = row.get_mut(step).filter(|_| step >= next) else {
                continue;
            };
            next = step + 1;
            if g.seen {
                add(g, p.v);
            } else {
                *g = Group::start(op, p.v);
            }
        }
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
