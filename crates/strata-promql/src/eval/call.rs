//! Function calls on instant vectors and scalars, and the dispatch of calls
//! with a range-vector argument to [`super::matrix_call`].

use std::collections::HashMap;

use promql_parser::parser::{Call, Expr};

use super::{merge_same_labelset, unwrap_parens, Evaluator, Result};
use crate::error::QueryError;
use crate::functions::histogram::{bucket_quantile, Bucket};
use crate::functions::labels::{absent_labels, label_join, LabelReplace};
use crate::functions::{math, time};
use crate::value::{
    drop_metric_name, empty_labels, labels_without, Labels, Matrix, Sample, Vector,
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

fn scalar_at(v: &[Vector], i: usize) -> f64 {
    v.get(i).and_then(|x| x.first()).map_or(f64::NAN, |s| s.v)
}

fn map_values(v: &Vector, f: impl Fn(f64) -> f64) -> Vector {
    v.iter()
        .map(|s| Sample {
            labels: drop_metric_name(&s.labels),
            v: f(s.v),
        })
        .collect()
}

fn single(v: f64) -> Vector {
    vec![Sample {
        labels: empty_labels(),
        v,
    }]
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

/// `histogram_quantile(q, buckets)` over classic buckets at one step.
fn histogram_quantile(q: f64, v: &Vector) -> Vector {
    let mut groups: HashMap<Labels, usize> = HashMap::new();
    let mut out: Vec<(Labels, Vec<Bucket>)> = Vec::new();
    for s in v {
        let le = crate::value::get_label(&s.labels, "le");
        let Some(upper_bound) = parse_go_float(le) else {
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
        out[i].1.push(Bucket {
            upper_bound,
            count: s.v,
        });
    }
    out.into_iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(labels, mut buckets)| Sample {
            labels,
            v: bucket_quantile(q, &mut buckets),
        })
        .collect()
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
        let args: Vec<&Expr> = c.args.args.iter().map(|a| unwrap_parens(a)).collect();
        if let Some(i) = args
            .iter()
            .position(|a| matches!(a, Expr::MatrixSelector(_) | Expr::Subquery(_)))
        {
            return self.eval_matrix_call(name, &args, i);
        }
        match name {
            "label_replace" => {
                let lr = LabelReplace::new(
                    &string_arg(&args, 1, name)?,
                    &string_arg(&args, 2, name)?,
                    &string_arg(&args, 3, name)?,
                    &string_arg(&args, 4, name)?,
                )?;
                let mut m = self.eval_matrix(args[0])?;
                for s in &mut m {
                    if let Some(l) = lr.apply(&s.labels) {
                        s.labels = l;
                    }
                }
                return merge_same_labelset(m);
            }
            "label_join" => {
                let dst = string_arg(&args, 1, name)?;
                let sep = string_arg(&args, 2, name)?;
                let srcs = (3..args.len())
                    .map(|i| string_arg(&args, i, name))
                    .collect::<Result<Vec<_>>>()?;
                if dst.is_empty() {
                    return Err(QueryError::exec(
                        "invalid destination label name in label_join(): ",
                    ));
                }
                let mut m = self.eval_matrix(args[0])?;
                for s in &mut m {
                    s.labels = label_join(&s.labels, &dst, &sep, &srcs);
                }
                return merge_same_labelset(m);
            }
            "timestamp" => {
                if let Some(Expr::VectorSelector(vs)) = args.first() {
                    let mut m = self.vector_selector_points(vs, true)?;
                    for s in &mut m {
                        s.labels = drop_metric_name(&s.labels);
                    }
                    super::check_matrix_same_labelset(&m)?;
                    return Ok(m);
                }
            }
            _ => {}
        }
        let f = self.vector_function(name, &args)?;
        let mut f = f;
        self.range_eval(&args, &mut |v, ts| Ok(f(v, ts)))
    }

    /// The per-step computation of a function on instant vectors and
    /// scalars.
    #[allow(clippy::type_complexity)]
    fn vector_function(
        &self,
        name: &str,
        args: &[&Expr],
    ) -> Result<Box<dyn FnMut(&[Vector], i64) -> Vector>> {
        if let Some(f) = math::simple(name) {
            return Ok(Box::new(move |v, _| map_values(&v[0], f)));
        }
        if let Some(f) = time::date_function(name) {
            if args.is_empty() {
                return Ok(Box::new(move |_, ts| {
                    single(time::apply(f, ts as f64 / 1000.0))
                }));
            }
            return Ok(Box::new(move |v, _| {
                map_values(&v[0], |x| time::apply(f, x))
            }));
        }
        Ok(match name {
            "clamp" => Box::new(|v, _| {
                let (min, max) = (scalar_at(v, 1), scalar_at(v, 2));
                if max < min {
                    return Vec::new();
                }
                map_values(&v[0], |x| math::clamp(x, min, max))
            }),
            "clamp_min" => Box::new(|v, _| {
                let min = scalar_at(v, 1);
                map_values(&v[0], |x| math::clamp(x, min, f64::INFINITY))
            }),
            "clamp_max" => Box::new(|v, _| {
                let max = scalar_at(v, 1);
                map_values(&v[0], |x| math::clamp(x, f64::NEG_INFINITY, max))
            }),
            "round" => Box::new(|v, _| {
                let to = if v.len() > 1 { scalar_at(v, 1) } else { 1.0 };
                map_values(&v[0], |x| math::round(x, to))
            }),
            "histogram_quantile" => Box::new(|v, _| {
                if v.len() < 2 || v[0].is_empty() {
                    return Vec::new();
                }
                histogram_quantile(scalar_at(v, 0), &v[1])
            }),
            "absent" => {
                let labels = match args.first() {
                    Some(Expr::VectorSelector(vs)) => absent_labels(vs),
                    _ => empty_labels(),
                };
                Box::new(move |v, _| {
                    if v[0].is_empty() {
                        vec![Sample {
                            labels: labels.clone(),
                            v: 1.0,
                        }]
                    } else {
                        Vec::new()
                    }
                })
            }
            "vector" => Box::new(|v, _| single(scalar_at(v, 0))),
            "scalar" => Box::new(|v, _| {
                let v = if v[0].len() == 1 { v[0][0].v } else { f64::NAN };
                single(v)
            }),
            "time" => Box::new(|_, ts| single(ts as f64 / 1000.0)),
            "pi" => Box::new(|_, _| single(std::f64::consts::PI)),
            "timestamp" => Box::new(|v, ts| map_values(&v[0], |_| ts as f64 / 1000.0)),
            "sort" => Box::new(|v, _| sort_by_value(v[0].clone(), false)),
            "sort_desc" => Box::new(|v, _| sort_by_value(v[0].clone(), true)),
            _ => return Err(QueryError::unsupported(format!("function {name:?}"))),
        })
    }
}
