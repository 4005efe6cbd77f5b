//! Running one evaluation and comparing what Strata answers with what the
//! script expects, as Prometheus' runner compares them: values within a
//! relative 1e-6, histograms bucket by bucket, errors and annotations by
//! their texts.

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Span, CUSTOM_BUCKETS_SCHEMA};
use strata_codec::Label;
use strata_promql::float_histogram as fh;
use strata_promql::{Annotations, Engine, QueryError, QueryValue};

use crate::script::{Eval, Expected, TextMatch, Time};
use crate::series::Slot;

/// Runs `eval` and checks its answer. An instant query is also run with
/// every selector pinned to its time by `@`, at other times, as Prometheus'
/// runner does.
pub async fn run(engine: &Engine, eval: &Eval) -> Result<(), String> {
    let at = match eval.time {
        Time::Range { start, end, step } => {
            let got = engine
                .range_query_stats(&eval.query, start, end, step, None)
                .await;
            return check_answer(eval, got);
        }
        Time::Instant(at) => eval.range_vector.map_or(at, |(_, end, _)| end),
    };
    run_instant(engine, eval, &eval.query, at).await?;
    for (query, t) in crate::at_modifier::variants(&eval.query, at) {
        run_instant(engine, eval, &query, t)
            .await
            .map_err(|e| format!("as {query} at {t}ms: {e}"))?;
    }
    Ok(())
}

/// Checks an error, or the annotations and the value of an answer.
fn check_answer(
    eval: &Eval,
    got: Result<(QueryValue, strata_promql::QueryStats), QueryError>,
) -> Result<(), String> {
    let (value, stats) = match (got, eval.fail) {
        (Err(e), true) => return check_failure(eval, &e),
        (Ok(_), true) => return Err("expected an error, got none".into()),
        (Err(e), false) => return Err(format!("unexpected error: {e}")),
        (Ok(v), false) => v,
    };
    check_annotations(eval, &stats.annotations)?;
    compare(eval, value, eval.time)
}

async fn run_instant(engine: &Engine, eval: &Eval, query: &str, at: i64) -> Result<(), String> {
    let got = engine.instant_query_stats(query, at, None).await;
    let scalar = matches!(got, Ok((QueryValue::Scalar { .. }, _)));
    check_answer(eval, got)?;
    if eval.fail || !eval.range_mode_check() {
        return Ok(());
    }
    // Prometheus' runner also asks for an instant query's answer as the
    // middle step of a range query.
    let range = engine
        .range_query(query, at - 60_000, at + 60_000, 60_000, None)
        .await
        .map_err(|e| format!("in range mode: unexpected error: {e}"))?;
    let QueryValue::Matrix(m) = range else {
        return Err("in range mode: the answer is not a matrix".into());
    };
    check_sorted(&m).map_err(|e| format!("in range mode: {e}"))?;
    let vector: Vec<strata_promql::value::InstantSample> = m
        .into_iter()
        .filter_map(|s| {
            let h = s.histograms.iter().find(|(t, _)| *t == at);
            let v = s.points.iter().find(|p| p.t == at);
            let (v, h) = match (v, h) {
                (_, Some((_, h))) => (0.0, Some(Box::new(h.clone()))),
                (Some(p), None) => (p.v, None),
                (None, None) => return None,
            };
            Some(strata_promql::value::InstantSample {
                labels: s.labels,
                t: at,
                v,
                h,
            })
        })
        .collect();
    let value = if scalar {
        let v = vector
            .first()
            .map(|s| s.v)
            .ok_or("in range mode: no point")?;
        QueryValue::Scalar { t: at, v }
    } else {
        QueryValue::Vector(vector)
    };
    compare(eval, value, eval.time).map_err(|e| format!("in range mode: {e}"))
}

fn check_failure(eval: &Eval, e: &QueryError) -> Result<(), String> {
    let text = e.to_string();
    match eval.fail_match.iter().find(|m| !m.matches(&text)) {
        Some(m) => Err(format!("expected an error matching {m}, got {text:?}")),
        None => Ok(()),
    }
}

/// Prometheus' `checkAnnotations`: with no expectation of a kind, any
/// annotations of that kind are accepted.
fn check_annotations(eval: &Eval, got: &Annotations) -> Result<(), String> {
    let texts = |list: &[String]| -> Vec<String> {
        list.iter().map(|t| t.trim_end().to_string()).collect()
    };
    let (warnings, infos) = (texts(&got.warnings), texts(&got.infos));
    if eval.any_warn && warnings.is_empty() {
        return Err("expected warnings, got none".into());
    }
    if eval.any_info && infos.is_empty() {
        return Err("expected infos, got none".into());
    }
    of_kind("warn", &eval.warn, &warnings)?;
    of_kind("info", &eval.info, &infos)?;
    if eval.no_warn && !warnings.is_empty() {
        return Err(format!("unexpected warnings: {warnings:?}"));
    }
    if eval.no_info && !infos.is_empty() {
        return Err(format!("unexpected infos: {infos:?}"));
    }
    Ok(())
}

/// Every expected annotation of a kind is met, and every one met was
/// expected.
fn of_kind(kind: &str, expected: &[TextMatch], got: &[String]) -> Result<(), String> {
    if expected.is_empty() {
        return Ok(());
    }
    if got.is_empty() {
        return Err(format!("expected {kind} annotations, got none"));
    }
    if let Some(e) = expected.iter().find(|e| !got.iter().any(|g| e.matches(g))) {
        return Err(format!(
            "expected a {kind} annotation matching {e}, got {got:?}"
        ));
    }
    if let Some(g) = got.iter().find(|g| !expected.iter().any(|e| e.matches(g))) {
        return Err(format!("unexpected {kind} annotation {g:?}"));
    }
    Ok(())
}

pub fn almost_equal(a: f64, b: f64) -> bool {
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if a == b {
        return true;
    }
    let diff = (a - b).abs();
    let sum = a.abs() + b.abs();
    if a == 0.0 || b == 0.0 || sum < f64::MIN_POSITIVE {
        return diff < 1e-6 * f64::MIN_POSITIVE;
    }
    diff / sum.min(f64::MAX) < 1e-6
}

fn fmt_labels(l: &[Label]) -> String {
    let inner: Vec<String> = l
        .iter()
        .map(|l| format!("{}={:?}", l.name, l.value))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// Prometheus' `compareNativeHistogram` over compacted histograms: the
/// populated buckets are compared, empty ones ignored; the counter reset
/// hint only when the script names one.
fn histograms_match(exp: &FloatHistogram, got: &FloatHistogram, hint_set: bool) -> bool {
    let side = |spans: &[Span], buckets: &[f64]| -> Vec<(i32, f64)> {
        fh::sparse(spans, buckets)
            .into_iter()
            .filter(|(_, c)| *c != 0.0)
            .collect()
    };
    let same = |x: Vec<(i32, f64)>, y: Vec<(i32, f64)>| {
        x.len() == y.len()
            && x.iter()
                .zip(&y)
                .all(|(p, q)| p.0 == q.0 && almost_equal(p.1, q.1))
    };
    exp.schema == got.schema
        && almost_equal(exp.count, got.count)
        && almost_equal(exp.sum, got.sum)
        && (exp.schema != CUSTOM_BUCKETS_SCHEMA || exp.custom_values == got.custom_values)
        && exp.zero_threshold == got.zero_threshold
        && almost_equal(exp.zero_count, got.zero_count)
        && same(
            side(&exp.negative_spans, &exp.negative_buckets),
            side(&got.negative_spans, &got.negative_buckets),
        )
        && same(
            side(&exp.positive_spans, &exp.positive_buckets),
            side(&got.positive_spans, &got.positive_buckets),
        )
        && (!hint_set || hint(exp) == hint(got))
}

fn hint(h: &FloatHistogram) -> u8 {
    match h.counter_reset_hint {
        CounterResetHint::Unknown => 0,
        CounterResetHint::Reset => 1,
        CounterResetHint::NotReset => 2,
        CounterResetHint::Gauge => 3,
    }
}

/// Whether an expected slot matches a float or a histogram answer.
fn slot_matches(exp: &Slot, v: f64, h: Option<&FloatHistogram>) -> bool {
    match (exp, h) {
        (Slot::Hist { h: e, hint_set }, Some(h)) => histograms_match(e, h, *hint_set),
        (Slot::Hist { .. }, None) => false,
        (_, Some(_)) => false,
        (Slot::Value(e), None) => almost_equal(*e, v),
        // An omitted value in an instant expectation reads as 0.
        (Slot::Missing, None) => almost_equal(0.0, v),
    }
}

fn check_sorted(m: &[strata_promql::value::MatrixSeries]) -> Result<(), String> {
    match m
        .windows(2)
        .find(|w| w[0].labels.to_vec() > w[1].labels.to_vec())
    {
        Some(w) => Err(format!(
            "matrix not sorted by labels: {} before {}",
            fmt_labels(&w[0].labels),
            fmt_labels(&w[1].labels)
        )),
        None => Ok(()),
    }
}

/// Prometheus' `compareResult`.
fn compare(eval: &Eval, value: QueryValue, time: Time) -> Result<(), String> {
    let expected: &[(Vec<Label>, Vec<Slot>)] = match (&eval.expected, &value) {
        (_, QueryValue::String { v, .. }) => {
            let e = eval.expected_string.as_deref().unwrap_or("");
            return if e == v {
                Ok(())
            } else {
                Err(format!("expected string {e:?}, got {v:?}"))
            };
        }
        (Expected::Scalar(e), QueryValue::Scalar { v, .. }) => {
            return if almost_equal(*e, *v) {
                Ok(())
            } else {
                Err(format!("expected scalar {e}, got {v}"))
            };
        }
        (Expected::Series(_), QueryValue::Scalar { v, .. }) => {
            return Err(format!("expected a vector or matrix, got scalar {v}"))
        }
        (Expected::Scalar(_), _) => return Err("expected a scalar, got a vector or matrix".into()),
        (Expected::Series(s), _) => s,
    };
    let find = |labels: &[Label]| expected.iter().position(|(l, _)| l.as_slice() == labels);
    match value {
        QueryValue::Vector(v) => {
            for (pos, s) in v.iter().enumerate() {
                let labels = s.labels.to_vec();
                let Some(i) = find(&labels) else {
                    return Err(format!(
                        "unexpected series {} = {}",
                        fmt_labels(&labels),
                        show(s.v, s.h.as_deref())
                    ));
                };
                if eval.ordered && i != pos {
                    return Err(format!(
                        "series {} at position {pos}, expected at {i}",
                        fmt_labels(&labels)
                    ));
                }
                let exp = expected[i].1.first().unwrap_or(&Slot::Missing);
                if !slot_matches(exp, s.v, s.h.as_deref()) {
                    return Err(format!(
                        "series {}: expected {}, got {}",
                        fmt_labels(&labels),
                        show_slot(exp),
                        show(s.v, s.h.as_deref())
                    ));
                }
            }
            if let Some((l, _)) = expected
                .iter()
                .find(|(l, _)| !v.iter().any(|s| s.labels.to_vec() == *l))
            {
                return Err(format!("expected series {} not found", fmt_labels(l)));
            }
            Ok(())
        }
        QueryValue::Matrix(m) => {
            if eval.ordered {
                return Err("expected an ordered result, got a matrix".into());
            }
            check_sorted(&m)?;
            let (start, end, step) = match (time, eval.range_vector) {
                (Time::Range { start, end, step }, _) | (_, Some((start, end, step))) => {
                    (start, end, step)
                }
                // Strata's own scripts expect an instant query's range
                // vector as its values in order, without their times.
                (Time::Instant(_), None) => return compare_values_only(expected, &m),
            };
            for s in &m {
                let labels = s.labels.to_vec();
                let Some(i) = find(&labels) else {
                    return Err(format!("unexpected series {}", fmt_labels(&labels)));
                };
                let mut want = Vec::new();
                for (k, slot) in expected[i].1.iter().enumerate() {
                    let t = start + k as i64 * step;
                    if t > end {
                        return Err(format!(
                            "{} expected points for {}, more than the range holds",
                            expected[i].1.len(),
                            fmt_labels(&labels)
                        ));
                    }
                    if !matches!(slot, Slot::Missing) {
                        want.push((t, slot));
                    }
                }
                let got = points(s);
                let same = want.len() == got.len()
                    && want
                        .iter()
                        .zip(&got)
                        .all(|((wt, w), (gt, v, h))| wt == gt && slot_matches(w, *v, *h));
                if !same {
                    return Err(format!(
                        "series {}: expected {}, got {}",
                        fmt_labels(&labels),
                        want.iter()
                            .map(|(t, s)| format!("{} @{t}", show_slot(s)))
                            .collect::<Vec<_>>()
                            .join(" "),
                        show_points(&got)
                    ));
                }
            }
            if let Some((l, _)) = expected
                .iter()
                .find(|(l, _)| !m.iter().any(|s| s.labels.to_vec() == *l))
            {
                return Err(format!("expected series {} not found", fmt_labels(l)));
            }
            Ok(())
        }
        QueryValue::Scalar { .. } | QueryValue::String { .. } => Ok(()),
    }
}

type Point<'a> = (i64, f64, Option<&'a FloatHistogram>);

/// A series' floats and histograms, in time order.
fn points(s: &strata_promql::value::MatrixSeries) -> Vec<Point<'_>> {
    let mut out: Vec<Point<'_>> = s
        .points
        .iter()
        .map(|p| (p.t, p.v, None))
        .chain(s.histograms.iter().map(|(t, h)| (*t, 0.0, Some(h))))
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

fn compare_values_only(
    expected: &[(Vec<Label>, Vec<Slot>)],
    m: &[strata_promql::value::MatrixSeries],
) -> Result<(), String> {
    if expected.len() != m.len() {
        return Err(format!(
            "expected {} series, got {}",
            expected.len(),
            m.len()
        ));
    }
    for (labels, slots) in expected {
        let Some(s) = m.iter().find(|s| s.labels.to_vec() == *labels) else {
            return Err(format!("missing series {}", fmt_labels(labels)));
        };
        let want: Vec<&Slot> = slots
            .iter()
            .filter(|s| !matches!(s, Slot::Missing))
            .collect();
        let got = points(s);
        if want.len() != got.len()
            || !want
                .iter()
                .zip(&got)
                .all(|(w, (_, v, h))| slot_matches(w, *v, *h))
        {
            return Err(format!(
                "series {}: got {}",
                fmt_labels(labels),
                show_points(&got)
            ));
        }
    }
    Ok(())
}

fn show(v: f64, h: Option<&FloatHistogram>) -> String {
    match h {
        Some(h) => format!("{h:?}"),
        None => v.to_string(),
    }
}

fn show_slot(s: &Slot) -> String {
    match s {
        Slot::Value(v) => v.to_string(),
        Slot::Hist { h, .. } => format!("{h:?}"),
        Slot::Missing => "_".into(),
    }
}

fn show_points(p: &[Point<'_>]) -> String {
    p.iter()
        .map(|(t, v, h)| format!("{} @{t}", show(*v, *h)))
        .collect::<Vec<_>>()
        .join(" ")
}
