//! `topk` and `bottomk`: at each step, the `k` best samples of each group,
//! kept whole with their own labels rather than folded into one value, as
//! Prometheus' `aggregationK`.

use std::collections::HashMap;

use promql_parser::parser::Expr;

use super::{group_series, next_value, Grouping};
use crate::error::QueryError;
use crate::eval::{Evaluator, Result};
use crate::functions::format_go_float;
use crate::value::{Labels, Matrix, MatrixSeries, Point};

/// Checks the `k` of every step as Prometheus does before reading the
/// input: `false` when no step asks for a sample (nothing to evaluate), an
/// error when one is NaN or does not fit an int64.
pub(super) fn any_k(params: &[f64]) -> Result<bool> {
    // Go's math.Max/Min: NaN wins.
    let go = |f: fn(f64, f64) -> f64| {
        move |a: f64, b: f64| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                f(a, b)
            }
        }
    };
    let max = params.iter().copied().fold(-f64::MAX, go(f64::max));
    if params.is_empty() || max < 1.0 {
        return Ok(false);
    }
    if params.iter().any(|p| p.is_nan()) {
        return Err(QueryError::exec("Parameter value is NaN"));
    }
    let min = params.iter().copied().fold(f64::MAX, go(f64::min));
    if min <= i64::MIN as f64 {
        return Err(QueryError::exec(format!(
            "Scalar value {} underflows int64",
            format_go_float(min)
        )));
    }
    if max >= i64::MAX as f64 {
        return Err(QueryError::exec(format!(
            "Scalar value {} overflows int64",
            format_go_float(max)
        )));
    }
    Ok(true)
}

impl Evaluator<'_> {
    /// `topk` (`top`) or `bottomk` of `expr`, `params` holding each step's
    /// `k` (already checked by [`any_k`]).
    pub(super) fn eval_select_k(
        &mut self,
        top: bool,
        expr: &Expr,
        grouping: &Grouping,
        params: &[f64],
    ) -> Result<Matrix> {
        let mut input = self.eval_matrix(expr)?;
        // Histograms are left out, with an info, as Prometheus does.
        if input.iter().any(|s| !s.histograms.is_empty()) {
            let name = if top { "topk" } else { "bottomk" };
            self.annotations
                .add(crate::annotations::histogram_ignored_in_aggregation(name));
            input.iter_mut().for_each(|s| s.histograms.clear());
        }
        let (series_group, group_labels) = group_series(grouping, &input);
        let mut out: Matrix = Vec::new();
        let mut out_index: HashMap<Labels, usize> = HashMap::new();
        let mut cursors = vec![0usize; input.len()];
        let mut candidates: Vec<Vec<(f64, usize)>> = vec![Vec::new(); group_labels.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            let param = params.get(step).copied().unwrap_or(0.0);
            candidates.iter_mut().for_each(Vec::clear);
            let series = input.iter().zip(&mut cursors).zip(&series_group);
            for (si, ((s, cursor), &gi)) in series.enumerate() {
                let Some(f) = next_value(ts, &s.points, cursor) else {
                    continue;
                };
                if let Some(c) = candidates.get_mut(gi) {
                    c.push((f, si));
                }
            }
            let k = (param as i64).min(input.len() as i64);
            let Ok(k) = usize::try_from(k) else {
                continue;
            };
            if k < 1 {
                continue;
            }
            for c in &mut candidates {
                select_k(c, k, top);
                for &(f, si) in c.iter() {
                    let Some(labels) = input.get(si).map(|s| &s.labels) else {
                        continue;
                    };
                    let next = out.len();
                    let i = *out_index.entry(labels.clone()).or_insert(next);
                    if i == next {
                        out.push(MatrixSeries {
                            labels: labels.clone(),
                            points: Vec::new(),
                            histograms: Vec::new(),
                        });
                    }
                    if let Some(series) = out.get_mut(i) {
                        series.points.push(Point { t: ts, v: f });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Keeps the `k` largest (`top`) or smallest values, NaN least preferred and
/// earlier series winning ties, ordered best first. Only the `k` kept are
/// sorted: the others are split off first.
fn select_k(c: &mut Vec<(f64, usize)>, k: usize, top: bool) {
    let order = |a: &(f64, usize), b: &(f64, usize)| {
        use std::cmp::Ordering;
        let by_value = match (a.0.is_nan(), b.0.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal);
                if top {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        by_value.then(a.1.cmp(&b.1))
    };
    if k == 0 {
        c.clear();
        return;
    }
    if k < c.len() {
        c.select_nth_unstable_by(k - 1, order);
        c.truncate(k);
    }
    c.sort_unstable_by(order);
}
