//! Functions over a range vector (`rate(x[5m])`, `avg_over_time(x[1h:1m])`):
//! one series at a time, each step seeing the samples in its window.

use promql_parser::parser::Expr;

use super::hist_range::{eval_series_mixed, HistFn};
use super::range_steps::{eval_series_all, RangeFn, StepGrid};
use super::selector::{reduced_matrix, RangeInput, SeriesLabels};
use super::{check_matrix_same_labelset, total_points, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::labels::absent_labels;
use crate::functions::registry::RangeOutput;
use crate::range_modifier::{self, RangeMode};
use crate::source::Series;
use crate::value::{empty_labels, Matrix, MatrixSeries, Point};

impl Evaluator<'_> {
    /// Evaluates the range function `name` (`f`) on the range vector
    /// `args[matrix_arg]`, the other arguments being scalars.
    pub fn eval_matrix_call(
        &mut self,
        f: RangeFn,
        name: &str,
        output: RangeOutput,
        args: &[&Expr],
        matrix_arg: usize,
    ) -> Result<Matrix> {
        if let Some(Expr::MatrixSelector(ms)) = args.get(matrix_arg) {
            let mode = range_modifier::mode(&ms.vs);
            if mode != RangeMode::Plain {
                return self.eval_extended_call(name, ms, mode);
            }
        }
        let params = self.scalar_params(args, matrix_arg)?;
        let param = params.first().map_or(&[][..], Vec::as_slice);
        let param2 = params.get(1).map_or(&[][..], Vec::as_slice);
        let hf = super::hist_range::hist_fn(name);
        let out = self.range_call(f, hf, output, args, matrix_arg, (param, param2))?;
        if name == "quantile_over_time" {
            self.warn_invalid_quantiles(param, &out);
        }
        if name == "integral" {
            self.warn_invalid_strategies(param, &out);
        }
        if name == "double_exponential_smoothing" && !out.is_empty() {
            check_smoothing_factors(param, param2)?;
        }
        Ok(out)
    }

    /// The scalar arguments' values, one list per argument in order, one
    /// value per step (NaN where a step has none).
    fn scalar_params(&mut self, args: &[&Expr], matrix_arg: usize) -> Result<Vec<Vec<f64>>> {
        let (first, interval, n) = (self.start, self.interval.max(1), self.num_steps());
        let step_index = |t: i64| usize::try_from((t - first) / interval).ok();
        let mut params = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i == matrix_arg {
                continue;
            }
            let mut param = vec![f64::NAN; n];
            let m = self.eval_matrix(a)?;
            if let Some(s) = m.first() {
                for p in &s.points {
                    if let Some(slot) = step_index(p.t).and_then(|i| param.get_mut(i)) {
                        *slot = p.v;
                    }
                }
            }
            params.push(param);
        }
        Ok(params)
    }

    /// Prometheus warns about a quantile outside [0, 1] (or NaN) at each
    /// step where a window held floats.
    fn warn_invalid_quantiles(&self, param: &[f64], out: &Matrix) {
        if param.iter().all(|q| (0.0..=1.0).contains(q)) {
            return;
        }
        let (first, interval) = (self.start, self.interval.max(1));
        let mut answered = vec![false; param.len()];
        for p in out.iter().flat_map(|s| &s.points) {
            let i = usize::try_from((p.t - first) / interval).ok();
            if let Some(slot) = i.and_then(|i| answered.get_mut(i)) {
                *slot = true;
            }
        }
        for (q, _) in param.iter().zip(answered).filter(|(_, a)| *a) {
            if !(0.0..=1.0).contains(q) {
                self.annotations
                    .add(crate::annotations::invalid_quantile(*q));
            }
        }
    }

    /// Prometheus warns about an `integral` strategy other than 0, 1 or 2
    /// at each step where a window held floats.
    fn warn_invalid_strategies(&self, param: &[f64], out: &Matrix) {
        let (first, interval) = (self.start, self.interval.max(1));
        for p in out.iter().flat_map(|s| &s.points) {
            let i = usize::try_from((p.t - first) / interval).ok();
            if let Some(&x) = i.and_then(|i| param.get(i)) {
                if crate::functions::over_time::integral_strategy(x).is_none() {
                    self.annotations
                        .add(crate::annotations::invalid_integral_strategy(x));
                }
            }
        }
    }

    fn range_call(
        &mut self,
        f: RangeFn,
        hf: HistFn,
        output: RangeOutput,
        args: &[&Expr],
        matrix_arg: usize,
        (param, param2): (&[f64], &[f64]),
    ) -> Result<Matrix> {
        let (first, interval, n) = (self.start, self.interval.max(1), self.num_steps());
        if let Some(Expr::MatrixSelector(ms)) = args.get(matrix_arg) {
            if let Some(series) = self.reduced_series(&ms.vs)? {
                return self.reduced_call(series, output);
            }
        }
        let input = match args.get(matrix_arg) {
            Some(Expr::MatrixSelector(ms)) => self.range_input_from_selector(ms)?,
            Some(Expr::Subquery(sq)) => self.eval_subquery(sq)?,
            _ => return Err(QueryError::exec("expected a range vector argument")),
        };
        let original = self.current_samples;
        let keep_name = output == RangeOutput::SeriesWithName;
        let grid = StepGrid {
            first,
            interval,
            steps: n,
            range: input.range,
            offset: input.offset,
            at: input.at,
            param,
            param2,
            deadline: self.deadline,
            max_samples: self.max_samples,
            held_samples: original,
        };
        let results = eval_series_all(&grid, f, &input.series);
        let mut out: Matrix = Vec::new();
        for (s, points) in input.series.iter().zip(results) {
            let (points, histograms) = if s.h.is_empty() {
                (points?, Vec::new())
            } else {
                eval_series_mixed(&grid, f, hf, s, &self.annotations)
            };
            if !points.is_empty() || !histograms.is_empty() {
                self.add_samples(points.len() + histograms.len())?;
                out.push(MatrixSeries {
                    labels: if keep_name {
                        s.labels.to_labels()
                    } else {
                        s.labels.without_metric_name()
                    },
                    points,
                    histograms,
                });
            }
        }
        if output == RangeOutput::Absent {
            return Ok(absent_over_time(&out, first, interval, n, &input));
        }
        check_matrix_same_labelset(&out)?;
        self.hold_samples(original + total_points(&out));
        Ok(out)
    }
}

impl<'a> Evaluator<'a> {
    /// The call's output from its selector's series, each reduced to the
    /// call's points as it was read.
    fn reduced_call(&mut self, series: &'a [Series], output: RangeOutput) -> Result<Matrix> {
        self.add_samples(
            series
                .iter()
                .map(|s| s.timestamps.len() + s.histograms.len())
                .sum(),
        )?;
        let out = reduced_matrix(series, |s| {
            let labels = SeriesLabels::Loaded(&s.labels);
            if output == RangeOutput::SeriesWithName {
                labels.to_labels()
            } else {
                labels.without_metric_name()
            }
        });
        check_matrix_same_labelset(&out)?;
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
        let times = s.points.iter().map(|p| p.t);
        for t in times.chain(s.histograms.iter().map(|(t, _)| *t)) {
            if let Some(c) = usize::try_from((t - first) / interval)
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
    vec![MatrixSeries::floats(labels, points)]
}

/// Prometheus' check of `double_exponential_smoothing`'s smoothing and
/// trend factors, both in (0, 1). Prometheus makes it wherever a window has
/// a sample; Strata when the call gave a value, so a call whose windows all
/// hold fewer than two floats is not refused.
fn check_smoothing_factors(sf: &[f64], tf: &[f64]) -> Result<()> {
    // Go's `%f`.
    let go_f = |x: f64| {
        if x.is_finite() {
            format!("{x:.6}")
        } else {
            crate::functions::format_go_float(x)
        }
    };
    if let Some(&x) = sf.iter().find(|&&x| x <= 0.0 || x >= 1.0) {
        return Err(QueryError::exec(format!(
            "invalid smoothing factor. Expected: 0 < sf < 1, got: {}",
            go_f(x)
        )));
    }
    if let Some(&x) = tf.iter().find(|&&x| x <= 0.0 || x >= 1.0) {
        return Err(QueryError::exec(format!(
            "invalid trend factor. Expected: 0 < tf < 1, got: {}",
            go_f(x)
        )));
    }
    Ok(())
}
