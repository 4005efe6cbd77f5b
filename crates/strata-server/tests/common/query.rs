//! The Prometheus query API as tests compare it: raw samples per series.

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
        if want == got {
            continue;
        }
        let first = want
            .iter()
            .zip(got)
            .position(|(w, g)| w != g)
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
