//! Functions over a range vector (`rate(x[5m])`, `avg_over_time(x[1h:1m])`):
//! one series at a time, each step seeing the samples in its window.

use promql_parser::parser::Expr;

use super::range_steps::{eval_series_all, RangeFn, StepGrid, WindowFn};
use super::selector::RangeInput;
use super::{check_matrix_same_labelset, total_points, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::labels::absent_labels;
use crate::functions::{over_time, rate};
use crate::value::{empty_labels, Matrix, MatrixSeries, Point};

/// A function of one window's values only.
macro_rules! values_fn {
    ($f:path) => {
        RangeFn::Window(|w, _| Some($f(w.v)))
    };
}

/// The range-vector function called `name`, if Strata implements it.
fn range_function(name: &str) -> Option<RangeFn> {
    let window = |f: WindowFn| RangeFn::Window(f);
    Some(match name {
        "rate" => RangeFn::Increase { is_rate: true },
        "increase" => RangeFn::Increase { is_rate: false },
        "delta" => window(|w, c| {
            rate::extrapolated_rate(w, c.range_start, c.range_end, c.range, false, false)
        }),
        "irate" => window(|w, _| rate::instant_value(w, true)),
        "idelta" => window(|w, _| rate::instant_value(w, false)),
        "deriv" => window(|w, _| rate::deriv(w)),
        "predict_linear" => window(|w, c| rate::predict_linear(w, c.param, c.intercept)),
        "resets" => window(|w, _| rate::resets(w)),
        "changes" => window(|w, _| rate::changes(w)),
        "avg_over_time" => values_fn!(over_time::avg),
        "min_over_time" => values_fn!(over_time::min),
        "max_over_time" => values_fn!(over_time::max),
        "sum_over_time" => values_fn!(over_time::sum),
        "count_over_time" => values_fn!(over_time::count),
        "last_over_time" => values_fn!(over_time::last),
        "present_over_time" => values_fn!(over_time::present),
        "stddev_over_time" => values_fn!(over_time::stddev),
        "stdvar_over_time" => values_fn!(over_time::stdvar),
        "quantile_over_time" => window(|w, c| Some(over_time::quantile_over(c.param, w.v))),
        "absent_over_time" => window(|_, _| Some(1.0)),
        _ => return None,
    })
}

impl Evaluator<'_> {
    /// Evaluates a call whose argument `matrix_arg` is a range vector.
    pub fn eval_matrix_call(
        &mut self,
        name: &str,
        args: &[&Expr],
        matrix_arg: usize,
    ) -> Result<Matrix> {
        let f = range_function(name)
            .ok_or_else(|| QueryError::unsupported(format!("function {name:?}")))?;
        let (first, interval, n) = (self.start, self.interval.max(1), self.num_steps());
        let step_index = |t: i64| usize::try_from((t - first) / interval).ok();
        // The other arguments are scalars: one value per step.
        let mut param = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i == matrix_arg {
                continue;
            }
            param = vec![f64::NAN; n];
            let m = self.eval_matrix(a)?;
            if let Some(s) = m.first() {
                for p in &s.points {
                    if let Some(slot) = step_index(p.t).and_then(|i| param.get_mut(i)) {
                        *slot = p.v;
                    }
                }
            }
        }
        let input = match args.get(matrix_arg) {
            Some(Expr::MatrixSelector(ms)) => self.range_input_from_selector(ms)?,
            Some(Expr::Subquery(sq)) => self.eval_subquery(sq)?,
            _ => return Err(QueryError::exec("expected a range vector argument")),
        };
        let original = self.current_samples;
        let keep_name = name == "last_over_time";
        let grid = StepGrid {
            first,
            interval,
            steps: n,
            range: input.range,
            offset: input.offset,
            at: input.at,
            query_start: self.start,
            param: &param,
            deadline: self.deadline,
            max_samples: self.max_samples,
            held_samples: original,
        };
        let results = eval_series_all(&grid, f, &input.series);
        let mut out: Matrix = Vec::new();
        for (s, points) in input.series.iter().zip(results) {
            let points = points?;
            if !points.is_empty() {
                self.add_samples(points.len())?;
                out.push(MatrixSeries {
                    labels: if keep_name {
                        s.labels.to_labels()
                    } else {
                        s.labels.without_metric_name()
                    },
                    points,
                });
            }
        }
        if name == "absent_over_time" {
            return Ok(absent_over_time(&out, first, interval, n, &input));
        }
        check_matrix_same_labelset(&out)?;
        self.current_samples = original + total_points(&out);
        Ok(out)
    }
}

/// One series with value 1 at the steps where no input series had a
/// sample, labelled from the selector's equality matchers.
fn absent_over_time(
    present: &Matrix,
    first: i64,
    interval: i64,
    n: usize,
    input: &RangeInput,
) -> Matrix {
    let mut covered = vec![false; n];
    for s in present {
        for p in &s.points {
            if let Some(c) = usize::try_from((p.t - first) / interval)
                .ok()
                .and_then(|i| covered.get_mut(i))
            {
                *c = true;
            }
        }
    }
    let points: Vec<Point> = covered
        .iter()
        .enumerate()
        .filter(|(_, c)| !**c)
        .map(|(i, _)| Point {
            t: first + i as i64 * interval,
            v: 1.0,
        })
        .collect();
    if points.is_empty() {
        return Vec::new();
    }
    let labels = input
        .selector
        .as_ref()
        .map_or_else(empty_labels, absent_labels);
    vec![MatrixSeries { labels, points }]
}
