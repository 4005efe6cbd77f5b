//! Differential PromQL checks: remote-writing the same series to two
//! servers, running the same query API call on both, and comparing the
//! answers value by value.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use serde_json::Value;
use strata_remote_write::encode_v1;
use strata_remote_write::proto::v1::{Label, Sample, TimeSeries, WriteRequest};

use super::{http_get, http_request, HttpResponse};

/// One series to write: labels (the metric name under `__name__`) and its
/// samples in time order.
pub struct WriteSeries {
    pub labels: Vec<(String, String)>,
    pub samples: Vec<(i64, f64)>,
}

/// Remote-writes `series` (1.0 protocol, one request) to the server on
/// `port`, panicking unless it answers 2xx.
pub fn remote_write(port: u16, series: &[WriteSeries]) {
    let timeseries = series
        .iter()
        .map(|s| {
            let mut labels: Vec<Label> = s
                .labels
                .iter()
                .map(|(name, value)| Label {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            TimeSeries {
                labels,
                samples: s
                    .samples
                    .iter()
                    .map(|&(timestamp, value)| Sample { value, timestamp })
                    .collect(),
                ..TimeSeries::default()
            }
        })
        .collect();
    let mut body = Vec::new();
    encode_v1(
        &WriteRequest {
            timeseries,
            ..WriteRequest::default()
        },
        &mut body,
    );
    let resp = http_request(
        port,
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
        &body,
    )
    .unwrap_or_else(|e| panic!("remote write to :{port}: {e}"));
    assert!(
        (200..300).contains(&resp.status),
        "remote write to :{port} answered {}: {}",
        resp.status,
        resp.text()
    );
}

/// A result series' labels.
pub type SeriesLabels = BTreeMap<String, String>;

/// A query API answer reduced to what must agree between two servers.
#[derive(Debug)]
pub enum Answer {
    /// `status: error`: the HTTP status and `errorType` (message texts
    /// differ between parsers and are not compared).
    Error {
        status: u16,
        error_type: String,
    },
    Scalar(f64, f64),
    String(f64, String),
    /// Series in the order the server gave them: labels, (time, value).
    Vector(Vec<(SeriesLabels, f64, f64)>),
    Matrix(Vec<(SeriesLabels, Vec<(f64, f64)>)>),
}

fn parse_value(v: &Value) -> f64 {
    let s = v.as_str().expect("value string");
    match s {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => s.parse().unwrap_or_else(|e| panic!("value {s:?}: {e}")),
    }
}

fn parse_point(p: &Value) -> (f64, f64) {
    (p[0].as_f64().expect("timestamp"), parse_value(&p[1]))
}

fn parse_labels(m: &Value) -> BTreeMap<String, String> {
    m.as_object()
        .expect("metric object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
        .collect()
}

/// GETs `path_and_query` (a `/api/v1/query…` call) on `port` and reduces
/// the answer.
pub fn query_answer(port: u16, path_and_query: &str) -> Answer {
    let resp = http_get(port, path_and_query)
        .unwrap_or_else(|e| panic!("GET :{port}{path_and_query}: {e}"));
    let json = resp.json();
    if json["status"] != "success" {
        return Answer::Error {
            status: resp.status,
            error_type: json["errorType"].as_str().unwrap_or("").to_owned(),
        };
    }
    let data = &json["data"];
    let result = &data["result"];
    match data["resultType"].as_str() {
        Some("scalar") => {
            let (t, v) = parse_point(result);
            Answer::Scalar(t, v)
        }
        Some("string") => Answer::String(
            result[0].as_f64().expect("timestamp"),
            result[1].as_str().expect("string").to_owned(),
        ),
        Some("vector") => Answer::Vector(
            result
                .as_array()
                .expect("result array")
                .iter()
                .map(|s| {
                    let (t, v) = parse_point(&s["value"]);
                    (parse_labels(&s["metric"]), t, v)
                })
                .collect(),
        ),
        Some("matrix") => Answer::Matrix(
            result
                .as_array()
                .expect("result array")
                .iter()
                .map(|s| {
                    let points = s["values"]
                        .as_array()
                        .expect("values array")
                        .iter()
                        .map(parse_point)
                        .collect();
                    (parse_labels(&s["metric"]), points)
                })
                .collect(),
        ),
        other => panic!("GET :{port}{path_and_query}: result type {other:?}"),
    }
}

/// Relative tolerance of value comparisons.
pub const REL_TOLERANCE: f64 = 1e-9;
/// Below this magnitude values compare absolutely: a result that cancels to
/// zero in one summation order is a few ulps of the operands in another.
pub const ABS_TOLERANCE: f64 = 1e-12;

/// Equal within the tolerances; NaN equals NaN, infinities equal
/// themselves.
pub fn values_match(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    let diff = (a - b).abs();
    diff <= ABS_TOLERANCE || diff <= REL_TOLERANCE * a.abs().max(b.abs())
}

fn describe_labels(l: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// How `actual` differs from `expected`, or `None` when they agree. With
/// `ordered`, the sequence of values of a vector must also agree (series
/// with equal values may come in any order, as Go's sort is not stable).
pub fn answer_diff(expected: &Answer, actual: &Answer, ordered: bool) -> Option<String> {
    match (expected, actual) {
        (
            Answer::Error {
                status: s1,
                error_type: e1,
            },
            Answer::Error {
                status: s2,
                error_type: e2,
            },
        ) => (s1 != s2 || e1 != e2).then(|| format!("error {s1} {e1} expected, got {s2} {e2}")),
        (Answer::Scalar(t1, v1), Answer::Scalar(t2, v2)) => (t1 != t2 || !values_match(*v1, *v2))
            .then(|| format!("scalar ({t1}, {v1}) expected, got ({t2}, {v2})")),
        (Answer::String(t1, s1), Answer::String(t2, s2)) => (t1 != t2 || s1 != s2)
            .then(|| format!("string ({t1}, {s1:?}) expected, got ({t2}, {s2:?})")),
        (Answer::Vector(want), Answer::Vector(got)) => {
            let mut out = Vec::new();
            let w: BTreeMap<_, _> = want.iter().map(|(l, t, v)| (l, (t, v))).collect();
            let g: BTreeMap<_, _> = got.iter().map(|(l, t, v)| (l, (t, v))).collect();
            if w.len() != want.len() || g.len() != got.len() {
                out.push("duplicate label sets in a vector".to_owned());
            }
            for (l, (t, v)) in &w {
                match g.get(l) {
                    None => out.push(format!("missing {} = {v} @ {t}", describe_labels(l))),
                    Some((t2, v2)) if t != t2 || !values_match(**v, **v2) => out.push(format!(
                        "{}: {v} @ {t} expected, got {v2} @ {t2}",
                        describe_labels(l)
                    )),
                    Some(_) => {}
                }
            }
            for (l, (t, v)) in &g {
                if !w.contains_key(l) {
                    out.push(format!("unexpected {} = {v} @ {t}", describe_labels(l)));
                }
            }
            if ordered && out.is_empty() {
                let wv = want.iter().map(|(_, _, v)| *v);
                let gv = got.iter().map(|(_, _, v)| *v);
                if !wv.zip(gv).all(|(a, b)| values_match(a, b)) {
                    out.push(format!(
                        "order differs: expected {:?}, got {:?}",
                        want.iter().map(|(_, _, v)| v).collect::<Vec<_>>(),
                        got.iter().map(|(_, _, v)| v).collect::<Vec<_>>()
                    ));
                }
            }
            (!out.is_empty()).then(|| out.join("\n"))
        }
        (Answer::Matrix(want), Answer::Matrix(got)) => {
            let mut out = Vec::new();
            let w: BTreeMap<_, _> = want.iter().map(|(l, p)| (l, p)).collect();
            let g: BTreeMap<_, _> = got.iter().map(|(l, p)| (l, p)).collect();
            if w.len() != want.len() || g.len() != got.len() {
                out.push("duplicate label sets in a matrix".to_owned());
            }
            for (l, pw) in &w {
                let Some(pg) = g.get(l) else {
                    out.push(format!("missing series {}", describe_labels(l)));
                    continue;
                };
                let first = pw
                    .iter()
                    .zip(pg.iter())
                    .position(|((t1, v1), (t2, v2))| t1 != t2 || !values_match(*v1, *v2));
                if first.is_some() || pw.len() != pg.len() {
                    let i = first.unwrap_or(pw.len().min(pg.len()));
                    out.push(format!(
                        "{}: {} points expected, {} got; first difference at {i}: expected {:?}, got {:?}",
                        describe_labels(l),
                        pw.len(),
                        pg.len(),
                        pw.get(i),
                        pg.get(i)
                    ));
                }
            }
            for l in g.keys() {
                if !w.contains_key(l) {
                    out.push(format!("unexpected series {}", describe_labels(l)));
                }
            }
            (!out.is_empty()).then(|| out.join("\n"))
        }
        _ => Some(format!("{expected:?} expected, got {actual:?}")),
    }
}

/// What must agree of an answer: a success byte for byte, but for the
/// order of `/api/v1/series` (Prometheus gives a single `match[]`'s series
/// in the order its head created them, which no client may rely on); an
/// error as JSON (Go writes a byte that is not UTF-8 as `\ufffd`, Strata
/// the character itself), or as text when it is not JSON.
fn comparable_body(path: &str, r: &HttpResponse) -> Value {
    let series = path.starts_with("/api/v1/series");
    if r.status == 200 && !series {
        return r.text().into();
    }
    let mut json: Value = serde_json::from_slice(&r.body).unwrap_or_else(|_| r.text().into());
    if series {
        if let Some(series) = json["data"].as_array_mut() {
            series.sort_by_key(|s| s.to_string());
        }
    }
    json
}

/// GETs every path from both servers and requires the same status and
/// answer from both (as [`comparable_body`] compares them), naming every
/// path that differs.
pub fn same_answers(strata: u16, prometheus: u16, paths: &[String]) {
    let get = |port: u16, path: &str| {
        http_get(port, path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"))
    };
    let mut differing = Vec::new();
    for path in paths {
        let want = get(prometheus, path);
        let got = get(strata, path);
        if (got.status, comparable_body(path, &got)) != (want.status, comparable_body(path, &want))
        {
            differing.push(format!(
                "{path}\n  Strata:     {} {}\n  Prometheus: {} {}",
                got.status,
                got.text(),
                want.status,
                want.text()
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{} of {} answers differ:\n{}",
        differing.len(),
        paths.len(),
        differing.join("\n")
    );
}
