//! Functions over a range vector (`rate(x[5m])`, `avg_over_time(x[1h:1m])`):
//! one series at a time, each step seeing the samples in its window.

use promql_parser::parser::Expr;

use super::selector::{window, RangeInput};
use super::{check_matrix_same_labelset, total_points, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::labels::absent_labels;
use crate::functions::{over_time, rate};
use crate::value::{drop_metric_name, empty_labels, Matrix, MatrixSeries, Point};

/// What a range-vector function sees at one step besides the samples.
struct StepContext {
    range_start: i64,
    range_end: i64,
    range: i64,
    /// The timestamp predict_linear extrapolates from.
    intercept: i64,
    /// The scalar argument (quantile_over_time's q, predict_linear's t).
    param: f64,
}

type RangeFn = fn(&[Point], &StepContext) -> Option<f64>;

/// The range-vector function called `name`, if Strata implements it.
fn range_function(name: &str) -> Option<RangeFn> {
    Some(match name {
        "rate" => {
            |p, c| rate::extrapolated_rate(p, c.range_start, c.range_end, c.range, true, true)
        }
        "increase" => {
            |p, c| rate::extrapolated_rate(p, c.range_start, c.range_end, c.range, true, false)
        }
        "delta" => {
            |p, c| rate::extrapolated_rate(p, c.range_start, c.range_end, c.range, false, false)
        }
        "irate" => |p, _| rate::instant_value(p, true),
        "idelta" => |p, _| rate::instant_value(p, false),
        "deriv" => |p, _| rate::deriv(p),
        "predict_linear" => |p, c| rate::predict_linear(p, c.param, c.intercept),
        "resets" => |p, _| rate::resets(p),
        "changes" => |p, _| rate::changes(p),
        "avg_over_time" => |p, _| Some(over_time::avg(p)),
        "min_over_time" => |p, _| Some(over_time::min(p)),
        "max_over_time" => |p, _| Some(over_time::max(p)),
        "sum_over_time" => |p, _| Some(over_time::sum(p)),
        "count_over_time" => |p, _| Some(over_time::count(p)),
        "last_over_time" => |p, _| Some(over_time::last(p)),
        "present_over_time" => |p, _| Some(over_time::present(p)),
        "stddev_over_time" => |p, _| Some(over_time::stddev(p)),
        "stdvar_over_time" => |p, _| Some(over_time::stdvar(p)),
        "quantile_over_time" => |p, c| Some(over_time::quantile_over(c.param, p)),
        "absent_over_time" => |_, _| Some(1.0),
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
        let mut out: Matrix = Vec::new();
        for s in &input.series {
            self.check_deadline()?;
            let mut points = Vec::new();
            for i in 0..n {
                let ts = first + i as i64 * interval;
                let r = input.at.unwrap_or(ts).saturating_sub(input.offset);
                let w = window(&s.points, r.saturating_sub(input.range), r);
                if w.is_empty() {
                    continue;
                }
                if original + w.len() > self.max_samples {
                    return Err(QueryError::too_many_samples());
                }
                let ctx = StepContext {
                    range_start: r.saturating_sub(input.range),
                    range_end: r,
                    range: input.range,
                    intercept: if input.at.is_some() { self.start } else { ts },
                    param: param.get(i).copied().unwrap_or(f64::NAN),
                };
                if let Some(v) = f(w, &ctx) {
                    points.push(Point { t: ts, v });
                }
            }
            if !points.is_empty() {
                self.add_samples(points.len())?;
                out.push(MatrixSeries {
                    labels: if keep_name {
                        s.labels.clone()
                    } else {
                        drop_metric_name(&s.labels)
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
