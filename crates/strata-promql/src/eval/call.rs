//! Function calls on instant vectors and scalars, and the dispatch of calls
//! with a range-vector argument to [`super::matrix_call`].

use std::collections::HashMap;

use promql_parser::parser::{Call, Expr};

use super::{merge_same_labelset, unwrap_parens, Evaluator, Result};
use crate::error::QueryError;
use strata_codec::histogram::FloatHistogram;

use crate::annotations::{self as anno, Shared};
use crate::functions::histogram::{
    bucket_fraction, bucket_quantile, native_fraction, native_quantile, Bucket,
};
use crate::functions::labels::{absent_labels, label_join, sort_by_label, LabelReplace};
use crate::functions::registry::{lookup, Eval};
use crate::functions::{math, time};
use crate::value::{
    drop_metric_name, empty_labels, get_label, labels_without, set_label, Labels, Matrix, Sample,
    Vector,
};

/// A string argument of a call.
fn string_arg(args: &[&Expr], i: usize, func: &str) -> Result<String> {
    match args.get(i) {
        Some(Expr::StringLiteral(s)) => Ok(s.val.clone()),
        _ => Err(QueryError::exec(format!(
            "expected a string as argument {} of {func}()",
            i + 1
        ))),
    }
}

/// The instant-vector argument of a call, its first.
fn vector_arg<'e>(args: &[&'e Expr], func: &str) -> Result<&'e Expr> {
    args.first()
        .copied()
        .ok_or_else(|| QueryError::exec(format!("expected a vector as argument 1 of {func}()")))
}

/// Argument `i` at one step, empty when there is none.
fn vector_at(v: &[Vector], i: usize) -> &[Sample] {
    v.get(i).map_or(&[], Vec::as_slice)
}

fn scalar_at(v: &[Vector], i: usize) -> f64 {
    v.get(i).and_then(|x| x.first()).map_or(f64::NAN, |s| s.v)
}

/// `f` of each float sample (histograms are left out, as Prometheus'
/// `simpleFloatFunc` does).
fn map_values(v: &[Sample], f: impl Fn(f64) -> f64) -> Vector {
    v.iter()
        .filter(|s| s.h.is_none())
        .map(|s| Sample::float(drop_metric_name(&s.labels), f(s.v)))
        .collect()
}

fn single(v: f64) -> Vector {
    vec![Sample::float(empty_labels(), v)]
}

/// `f` of each histogram sample, floats left out, the metric name
/// dropped (Prometheus' `simpleHistogramFunc`).
fn map_histograms(v: &[Sample], f: fn(&FloatHistogram) -> f64) -> Vector {
    v.iter()
        .filter_map(|s| {
            let h = s.h.as_deref()?;
            Some(Sample::float(
                labels_without(&s.labels, |n| n == "__name__"),
                f(h),
            ))
        })
        .collect()
}

/// Sorts by value, NaN last, as `sort` (ascending) and `sort_desc`.
fn sort_by_value(mut v: Vector, descending: bool) -> Vector {
    v.sort_by(|a, b| {
        use std::cmp::Ordering;
        match (a.v.is_nan(), b.v.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = a.v.partial_cmp(&b.v).unwrap_or(Ordering::Equal);
                if descending {
                    o.reverse()
                } else {
                    o
                }
            }
        }
    });
    v
}

/// `histogram_quantile(q, buckets)` at one step: native histograms, and
/// classic buckets grouped by their labels without `le`.
fn histogram_quantile(q: f64, v: &[Sample], ts: i64, annos: &Shared) -> Vector {
    if q.is_nan() || !(0.0..=1.0).contains(&q) {
        annos.add(anno::invalid_quantile(q));
    }
    of_histograms(
        v,
        annos,
        |s, h| {
            let (value, info) = native_quantile(q, h);
            if let Some(info) = info {
                annos.add(info(get_label(&s.labels, "__name__")));
            }
            value
        },
        |buckets| {
            let (value, fix) = bucket_quantile(q, buckets);
            if let Some(fix) = fix {
                annos.forced_monotonicity(ts, fix);
            }
            value
        },
    )
}

/// `histogram_quantiles(v, label, qs...)` at one step: `histogram_quantile`
/// at each of `qs` in turn, its results labelled `label` with the quantile
/// in OpenMetrics' form (`0.0`, `0.25`, `1.0`).
fn histogram_quantiles(
    v: &[Sample],
    label: &str,
    qs: &[Vector],
    ts: i64,
    annos: &Shared,
) -> Vector {
    let mut out = Vec::new();
    for q in qs.iter().map(|q| q.first().map_or(f64::NAN, |s| s.v)) {
        let text = open_metrics_float(q);
        for s in histogram_quantile(q, v, ts, annos) {
            out.push(Sample::float(set_label(&s.labels, label, &text), s.v));
        }
    }
    out
}

/// Prometheus' `labels.FormatOpenMetricsFloat`: Go's shortest `%g`, with
/// `.0` added to a whole number.
fn open_metrics_float(f: f64) -> String {
    if f == 0.0 {
        // Negative zero too.
        return "0.0".into();
    }
    let mut s = crate::float_histogram::go_g(f);
    if f.is_finite() && !s.contains(['.', 'e']) {
        s.push_str(".0");
    }
    s
}

/// `histogram_fraction(lower, upper, v)` at one step, of native
/// histograms and of classic buckets.
fn histogram_fraction(lower: f64, upper: f64, v: &[Sample], annos: &Shared) -> Vector {
    of_histograms(
        v,
        annos,
        |s, h| {
            let (f, nans) = native_fraction(lower, upper, h);
            if nans {
                annos.add(anno::fraction_nans(get_label(&s.labels, "__name__")));
            }
            f
        },
        |buckets| bucket_fraction(lower, upper, buckets),
    )
}

/// A function of the histograms of `v` at one step: of each native
/// histogram (`native`), and of the classic buckets of each label set
/// without `le` (`classic`); a native histogram with the labels of a
/// classic group drops both, with a warning (Prometheus'
/// `resetHistograms`). Native results come first.
fn of_histograms(
    v: &[Sample],
    annos: &Shared,
    native: impl Fn(&Sample, &FloatHistogram) -> f64,
    classic: impl Fn(&mut Vec<Bucket>) -> f64,
) -> Vector {
    let mut groups: HashMap<Labels, usize> = HashMap::new();
    let mut out: Vec<(Labels, Vec<Bucket>)> = Vec::new();
    for s in v.iter().filter(|s| s.h.is_none()) {
        let le = crate::value::get_label(&s.labels, "le");
        // A NaN bound is malformed too, as in Prometheus.
        let Some(upper_bound) = parse_go_float(le).filter(|b| !b.is_nan()) else {
            annos.add(anno::bad_bucket_label(le));
            continue;
        };
        let key = labels_without(&s.labels, |n| n == "le");
        let i = *groups.entry(key.clone()).or_insert_with(|| {
            out.push((
                labels_without(&s.labels, |n| {
                    n == "le" || crate::value::is_metadata_label(n)
                }),
                Vec::new(),
            ));
            out.len() - 1
        });
        if let Some((_, buckets)) = out.get_mut(i) {
            buckets.push(Bucket {
                upper_bound,
                count: s.v,
            });
        }
    }
    let mut result = Vec::new();
    for s in v {
        let Some(h) = s.h.as_deref() else {
            continue;
        };
        if let Some(buckets) = groups
            .get(&s.labels)
            .and_then(|&i| out.get_mut(i))
            .map(|(_, b)| b)
            .filter(|b| !b.is_empty())
        {
            buckets.clear();
            annos.add(anno::mixed_classic_native(""));
            continue;
        }
        let value = native(s, h);
        result.push(Sample::float(drop_metric_name(&s.labels), value));
    }
    result.extend(
        out.into_iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(labels, mut buckets)| Sample::float(labels, classic(&mut buckets))),
    );
    result
}

/// Go's `strconv.ParseFloat` for the values an `le` label holds.
fn parse_go_float(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "+inf" | "inf" | "+infinity" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

impl Evaluator<'_> {
    pub fn eval_call(&mut self, c: &Call) -> Result<Matrix> {
        let name = c.func.name;
        let function =
            lookup(name).ok_or_else(|| QueryError::unsupported(format!("function {name:?}")))?;
        let args: Vec<&Expr> = c.args.args.iter().map(|a| unwrap_parens(a)).collect();
        if matches!(function.eval, Eval::Sort { .. } | Eval::SortByLabel { .. })
            && self.start != self.end
        {
            self.annotations.add(anno::sort_in_range_query());
        }
        match function.eval {
            Eval::Range(f, output) => {
                let i = function
                    .range_arg()
                    .ok_or_else(|| QueryError::exec("expected a range vector argument"))?;
                return self.eval_matrix_call(f, name, output, &args, i);
            }
            Eval::Info => return self.eval_info(c, &args),
            Eval::LabelReplace => {
                let lr = LabelReplace::new(
                    &string_arg(&args, 1, name)?,
                    &string_arg(&args, 2, name)?,
                    &string_arg(&args, 3, name)?,
                    &string_arg(&args, 4, name)?,
                )?;
                let mut m = self.eval_matrix(vector_arg(&args, name)?)?;
                for s in &mut m {
                    if let Some(l) = lr.apply(&s.labels) {
                        s.labels = l;
                    }
                }
                return merge_same_labelset(m);
            }
            Eval::LabelJoin => {
                let dst = string_arg(&args, 1, name)?;
                let sep = string_arg(&args, 2, name)?;
                let srcs = (3..args.len())
                    .map(|i| string_arg(&args, i, name))
                    .collect::<Result<Vec<_>>>()?;
                // Sources first, as Prometheus checks them.
                if srcs.iter().any(String::is_empty) {
                    return Err(QueryError::exec(
                        "invalid source label name in label_join(): ",
                    ));
                }
                if dst.is_empty() {
                    return Err(QueryError::exec(
                        "invalid destination label name in label_join(): ",
                    ));
                }
                let mut m = self.eval_matrix(vector_arg(&args, name)?)?;
                for s in &mut m {
                    s.labels = label_join(&s.labels, &dst, &sep, &srcs);
                }
                return merge_same_labelset(m);
            }
            Eval::Timestamp => {
                // A selector's own sample times, not the steps they are
                // looked up at.
                if let Some(Expr::VectorSelector(vs)) = args.first() {
                    let mut m = self.vector_selector_points(vs, true)?;
                    for s in &mut m {
                        s.labels = drop_metric_name(&s.labels);
                    }
                    super::check_matrix_same_labelset(&m)?;
                    return Ok(m);
                }
            }
            Eval::Map(f) => return self.map_points(&args, name, |x, _| Some(f(x))),
            Eval::Date(f) if !args.is_empty() => {
                return self.map_points(&args, name, |x, _| Some(time::apply(f, x)))
            }
            Eval::Clamp => {
                let (min, max) = (self.scalar_arg(&args, 1)?, self.scalar_arg(&args, 2)?);
                return self.map_points(&args, name, |x, i| {
                    let (lo, hi) = (step_value(&min, i), step_value(&max, i));
                    (hi >= lo || lo.is_nan() || hi.is_nan()).then(|| math::clamp(x, lo, hi))
                });
            }
            Eval::ClampMin => {
                let min = self.scalar_arg(&args, 1)?;
                return self.map_points(&args, name, |x, i| {
                    Some(math::clamp(x, step_value(&min, i), f64::INFINITY))
                });
            }
            Eval::ClampMax => {
                let max = self.scalar_arg(&args, 1)?;
                return self.map_points(&args, name, |x, i| {
                    Some(math::clamp(x, f64::NEG_INFINITY, step_value(&max, i)))
                });
            }
            Eval::Round if args.len() > 1 => {
                let to = self.scalar_arg(&args, 1)?;
                return self
                    .map_points(&args, name, |x, i| Some(math::round(x, step_value(&to, i))));
            }
            Eval::Round => return self.map_points(&args, name, |x, _| Some(math::round(x, 1.0))),
            _ => {}
        }
        let mut f = vector_function(function.eval, &args, self.annotations.clone())?;
        self.range_eval(&args, &mut |v, ts| Ok(f(v, ts)))
    }
}

/// A scalar argument's value at step `i`; NaN where it has none.
fn step_value(values: &[f64], i: usize) -> f64 {
    values.get(i).copied().unwrap_or(f64::NAN)
}

impl Evaluator<'_> {
    /// A function applied point by point to its first argument's series, a
    /// series at a time: the metric name dropped once per series instead of
    /// once per sample and step, and no per-step regrouping of the output
    /// (series whose labels then coincide are merged as Prometheus merges
    /// them). `f` gets a point's value and step index; `None` drops it.
    fn map_points(
        &mut self,
        args: &[&Expr],
        name: &str,
        f: impl Fn(f64, usize) -> Option<f64>,
    ) -> Result<Matrix> {
        let original = self.current_samples;
        let mut m = self.eval_matrix(vector_arg(args, name)?)?;
        let (start, interval) = (self.start, self.interval.max(1));
        for s in &mut m {
            s.labels = drop_metric_name(&s.labels);
            // Functions of floats leave histograms out.
            s.histograms.clear();
            s.points.retain_mut(|p| {
                let i = usize::try_from((p.t - start) / interval).unwrap_or(usize::MAX);
                match f(p.v, i) {
                    Some(v) => {
                        p.v = v;
                        true
                    }
                    None => false,
                }
            });
        }
        m.retain(|s| !s.points.is_empty());
        let out = merge_same_labelset(m)?;
        self.hold_samples(original + super::total_points(&out));
        Ok(out)
    }

    /// Scalar argument `i` of a call, its value at each step.
    fn scalar_arg(&mut self, args: &[&Expr], i: usize) -> Result<Vec<f64>> {
        let mut values = vec![f64::NAN; self.num_steps()];
        let Some(arg) = args.get(i) else {
            return Ok(values);
        };
        let held = self.current_samples;
        let m = self.eval_matrix(arg)?;
        self.hold_samples(held);
        let (start, interval) = (self.start, self.interval.max(1));
        if let Some(s) = m.first() {
            for p in &s.points {
                let at = usize::try_from((p.t - start) / interval).unwrap_or(usize::MAX);
                if let Some(v) = values.get_mut(at) {
                    *v = p.v;
                }
            }
        }
        Ok(values)
    }
}

/// The per-step computation of a function on instant vectors and scalars:
/// the arguments' vectors at one step and the step's time give the output.
type StepFn = Box<dyn FnMut(&[Vector], i64) -> Vector>;

/// How `eval`, a function of instant vectors and scalars, computes a step.
fn vector_function(eval: Eval, args: &[&Expr], annos: Shared) -> Result<StepFn> {
    Ok(match eval {
        Eval::Map(f) => Box::new(move |v, _| map_values(vector_at(v, 0), f)),
        Eval::Date(f) if args.is_empty() => {
            Box::new(move |_, ts| single(time::apply(f, ts as f64 / 1000.0)))
        }
        Eval::Date(f) => Box::new(move |v, _| map_values(vector_at(v, 0), |x| time::apply(f, x))),
        Eval::Clamp => Box::new(|v, _| {
            let (min, max) = (scalar_at(v, 1), scalar_at(v, 2));
            if max < min {
                return Vec::new();
            }
            map_values(vector_at(v, 0), |x| math::clamp(x, min, max))
        }),
        Eval::ClampMin => Box::new(|v, _| {
            let min = scalar_at(v, 1);
            map_values(vector_at(v, 0), |x| math::clamp(x, min, f64::INFINITY))
        }),
        Eval::ClampMax => Box::new(|v, _| {
            let max = scalar_at(v, 1);
            map_values(vector_at(v, 0), |x| math::clamp(x, f64::NEG_INFINITY, max))
        }),
        Eval::Round => Box::new(|v, _| {
            let to = if v.len() > 1 { scalar_at(v, 1) } else { 1.0 };
            map_values(vector_at(v, 0), |x| math::round(x, to))
        }),
        Eval::HistogramQuantile => Box::new(move |v, ts| match v {
            [q, buckets, ..] if !q.is_empty() => {
                histogram_quantile(scalar_at(v, 0), buckets, ts, &annos)
            }
            _ => Vec::new(),
        }),
        Eval::HistogramQuantiles => {
            let label = string_arg(args, 1, "histogram_quantiles")?;
            Box::new(move |v, ts| {
                let qs = v.get(2..).unwrap_or(&[]);
                histogram_quantiles(vector_at(v, 0), &label, qs, ts, &annos)
            })
        }
        Eval::HistogramFraction => Box::new(move |v, _| match v {
            [lo, hi, hs, ..] if !lo.is_empty() && !hi.is_empty() => {
                histogram_fraction(scalar_at(v, 0), scalar_at(v, 1), hs, &annos)
            }
            _ => Vec::new(),
        }),
        Eval::HistogramStat(f) => Box::new(move |v, _| map_histograms(vector_at(v, 0), f)),
        Eval::Absent => {
            let labels = match args.first() {
                Some(Expr::VectorSelector(vs)) => absent_labels(vs),
                _ => empty_labels(),
            };
            Box::new(move |v, _| {
                if vector_at(v, 0).is_empty() {
                    vec![Sample::float(labels.clone(), 1.0)]
                } else {
                    Vec::new()
                }
            })
        }
        Eval::Vector => Box::new(|v, _| single(scalar_at(v, 0))),
        Eval::Scalar => Box::new(|v, _| {
            let mut floats = vector_at(v, 0).iter().filter(|s| s.h.is_none());
            let v = match (floats.next(), floats.next()) {
                (Some(only), None) => only.v,
                _ => f64::NAN,
            };
            single(v)
        }),
        Eval::Time => Box::new(|_, ts| single(ts as f64 / 1000.0)),
        Eval::Pi => Box::new(|_, _| single(std::f64::consts::PI)),
        Eval::Extremum { max } => {
            Box::new(move |v, _| single(math::go_extremum(scalar_at(v, 0), scalar_at(v, 1), max)))
        }
        Eval::QueryContext => {
            return Err(QueryError::Internal(
                "start(), end(), range() and step() are folded into numbers before evaluation"
                    .into(),
            ))
        }
        Eval::Timestamp => Box::new(|v, ts| {
            vector_at(v, 0)
                .iter()
                .map(|s| Sample::float(drop_metric_name(&s.labels), ts as f64 / 1000.0))
                .collect()
        }),
        Eval::Sort { descending } => Box::new(move |v, _| {
            let floats = vector_at(v, 0).iter().filter(|s| s.h.is_none()).cloned();
            sort_by_value(floats.collect(), descending)
        }),
        Eval::SortByLabel { descending } => {
            let names = (1..args.len())
                .map(|i| string_arg(args, i, "sort_by_label"))
                .collect::<Result<Vec<_>>>()?;
            Box::new(move |v, _| sort_by_label(vector_at(v, 0).to_vec(), &names, descending))
        }
        Eval::Range(..) | Eval::Info | Eval::LabelJoin | Eval::LabelReplace => {
            return Err(QueryError::exec(
                "expected a function of instant vectors and scalars",
            ))
        }
    })
}
