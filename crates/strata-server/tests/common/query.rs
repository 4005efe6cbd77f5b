//! The Prometheus query API as tests compare it: raw samples per series.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;

use super::{api_time, http_get, query_string};

/// A label set, as the query API's `metric` object.
pub type Labels = BTreeMap<String, String>;
/// A range-vector result: per series, its samples as (milliseconds, value
/// exactly as the API printed it).
pub type Matrix = BTreeMap<Labels, Vec<(i64, String)>>;

/// Runs an instant query that must answer a matrix (`selector[range]`) at
/// `time_ms` against the Prometheus API on `port`.
pub fn query_matrix(port: u16, query: &str, time_ms: i64) -> Matrix {
    let path = format!(
        "/api/v1/query?{}",
        query_string(&[("query", query), ("time", &api_time(time_ms))])
    );
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(
        resp.status,
        200,
        "GET :{port}{path} answered {}: {}",
        resp.status,
        resp.text()
    );
    let json = resp.json();
    assert_eq!(json["status"], "success", "GET :{port}{path}: {json}");
    assert_eq!(
        json["data"]["resultType"], "matrix",
        "GET :{port}{path}: {json}"
    );
    let mut out = Matrix::new();
    for series in json["data"]["result"].as_array().expect("result array") {
        let labels: Labels = series["metric"]
            .as_object()
            .expect("metric object")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
            .collect();
        let samples = series["values"]
            .as_array()
            .expect("values array")
            .iter()
            .map(|p| {
                let ts = p[0].as_f64().expect("timestamp number");
                let v = p[1].as_str().expect("value string").to_owned();
                ((ts * 1000.0).round() as i64, v)
            })
            .collect();
        let dup = out.insert(labels.clone(), samples);
        assert!(dup.is_none(), "GET :{port}{path}: series {labels:?} twice");
    }
    out
}

/// Runs an instant query and answers its vector result as label sets and
/// values.
pub fn query_vector(port: u16, query: &str) -> Vec<(Labels, String)> {
    let path = format!("/api/v1/query?{}", query_string(&[("query", query)]));
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(resp.status, 200, "GET :{port}{path}: {}", resp.text());
    let json = resp.json();
    assert_eq!(
        json["data"]["resultType"], "vector",
        "GET :{port}{path}: {json}"
    );
    json["data"]["result"]
        .as_array()
        .expect("result array")
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .expect("metric object")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
                .collect();
            (labels, s["value"][1].as_str().expect("value").to_owned())
        })
        .collect()
}

/// Describes how `actual` differs from `expected`, or `None` when equal:
/// series only in one of them, and per series the first differing sample.
pub fn matrix_diff(expected: &Matrix, actual: &Matrix) -> Option<String> {
    matrix_diff_by(expected, actual, |a, b| a == b)
}

/// [`matrix_diff`] with sample values compared by `same_value`.
pub fn matrix_diff_by(
    expected: &Matrix,
    actual: &Matrix,
    same_value: impl Fn(&str, &str) -> bool,
) -> Option<String> {
    let same = |(wt, wv): &(i64, String), (gt, gv): &(i64, String)| wt == gt && same_value(wv, gv);
    let mut out = Vec::new();
    for labels in expected.keys().filter(|l| !actual.contains_key(*l)) {
        out.push(format!("missing series {labels:?}"));
    }
    for labels in actual.keys().filter(|l| !expected.contains_key(*l)) {
        out.push(format!("unexpected series {labels:?}"));
    }
    for (labels, want) in expected {
        let Some(got) = actual.get(labels) else {
            continue;
        };
        if want.len() == got.len() && want.iter().zip(got).all(|(w, g)| same(w, g)) {
            continue;
        }
        let first = want
            .iter()
            .zip(got)
            .position(|(w, g)| !same(w, g))
            .unwrap_or(want.len().min(got.len()));
        out.push(format!(
            "series {labels:?}: {} samples expected, {} got; first difference at index {first}: \
             expected {:?}, got {:?}",
            want.len(),
            got.len(),
            want.get(first),
            got.get(first)
        ));
    }
    if out.is_empty() {
        None
    } else {
        Some(out.join("\n"))
    }
}

/// The raw samples of each of `selectors` in the `window` (a range such as
/// `5m`) ending at `t`, from the query API on `port`.
pub fn raw_snapshot<'a>(
    port: u16,
    selectors: &[&'a str],
    window: &str,
    t: i64,
) -> BTreeMap<&'a str, Matrix> {
    selectors
        .iter()
        .map(|sel| (*sel, query_matrix(port, &format!("{sel}[{window}]"), t)))
        .collect()
}

/// Waits until Strata on `port` holds exactly `expected` (a
/// [`raw_snapshot`] of Prometheus in the `window` ending at `t`), retrying
/// for `catch_up` while remote write may still be delivering; answers
/// Strata's snapshot, or panics naming the differences.
pub fn wait_same_as_prometheus<'a>(
    expected: &BTreeMap<&'a str, Matrix>,
    port: u16,
    window: &str,
    t: i64,
    catch_up: std::time::Duration,
) -> BTreeMap<&'a str, Matrix> {
    let selectors: Vec<&'a str> = expected.keys().copied().collect();
    let deadline = std::time::Instant::now() + catch_up;
    loop {
        let actual = raw_snapshot(port, &selectors, window, t);
        let diffs: Vec<String> = selectors
            .iter()
            .filter_map(|sel| {
                matrix_diff(&expected[sel], &actual[sel]).map(|d| format!("{sel}:\n{d}"))
            })
            .collect();
        if diffs.is_empty() {
            return actual;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Strata's raw samples differ from Prometheus' in the window ending at {t} ms \
             (still after {catch_up:?}):\n{}",
            diffs.join("\n")
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The newest sample timestamp (ms) of a range query such as `up[1m]`,
/// evaluated now.
pub fn newest_sample(port: u16, range_query: &str) -> Option<i64> {
    query_matrix(port, range_query, super::now_ms())
        .values()
        .filter_map(|samples| samples.last().map(|(ts, _)| *ts))
        .max()
}

/// The sum of an instant query's values over its series (a counter over
/// all its series; 0 when there is none).
pub fn vector_sum(port: u16, query: &str) -> f64 {
    query_vector(port, query)
        .iter()
        .map(|(_, v)| v.parse::<f64>().expect("sample value"))
        .sum()
}

/// The sum of the samples on `port`'s `/metrics` whose series starts with
/// `series` (see [`page_values`]); `None` when no line matches.
pub fn metrics_sum(port: u16, series: &str) -> Option<f64> {
    let text = http_get(port, "/metrics")
        .unwrap_or_else(|e| panic!("GET :{port}/metrics: {e}"))
        .text();
    let values = page_values(&text, series);
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The values of a `/metrics` page's samples whose series starts with
/// `series`: a metric name (its labelled series and itself), or a name
/// with some of its labels (`name{code="400"`, or a whole series).
pub fn page_values(text: &str, series: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(series)?;
            let whole = series.ends_with('}') || rest.starts_with([' ', '{', ',']);
            whole.then(|| l.rsplit(' ').next()?.parse::<f64>().ok())?
        })
        .collect()
}

/// Every number in `v`'s strings cut to 10 significant digits: the last
/// bits of a float sum depend on the order of addition, and Prometheus'
/// table of exponential bucket bounds is not correctly rounded (its bounds
/// of schemas 1 to 8 are up to 4 ulps from Strata's, which are).
pub fn round_numbers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Ok(f) = s.parse::<f64>() {
                if f.is_finite() && s.chars().any(|c| c.is_ascii_digit()) {
                    *s = format!("{f:.9e}");
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(round_numbers),
        serde_json::Value::Object(o) => o.values_mut().for_each(round_numbers),
        _ => {}
    }
}
