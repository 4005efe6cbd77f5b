//! The queries the writer and the readers must answer alike: instant and
//! range queries over the sealed history and the fresh series, run on a
//! node and compared with the writer's answers.

use crate::cluster::HOUR_MS;
use crate::common::{api_time, http_get, query_string};

/// One query of the agreement set: the path and query string.
pub(crate) fn instant(q: &str, t: i64) -> String {
    format!(
        "/api/v1/query?{}",
        query_string(&[("query", q), ("time", &api_time(t))])
    )
}

fn range(q: &str, start: i64, end: i64, step: &str) -> String {
    format!(
        "/api/v1/query_range?{}",
        query_string(&[
            ("query", q),
            ("start", &api_time(start)),
            ("end", &api_time(end)),
            ("step", step),
        ])
    )
}

/// Instant and range queries over the sealed history (read from the
/// store) and the fresh series (in the head): raw selectors, `sum by`,
/// `rate`.
pub(crate) fn query_set(hist_start: i64, hist_end: i64, now: i64) -> Vec<String> {
    vec![
        instant("hist", hist_end),
        instant("hist[10m]", hist_end - 30 * 60_000),
        instant("sum by (job) (rate(hist[5m]))", hist_end - HOUR_MS),
        instant("fresh", now),
        instant("count(fresh)", now),
        instant("fresh[1m]", now),
        range("hist", hist_start, hist_end, "60"),
        range("sum by (job) (hist)", hist_start, hist_end, "120"),
        range("rate(hist[5m])", hist_start, hist_end, "300"),
        range("sum by (job) (rate(hist[5m]))", hist_start, hist_end, "60"),
        range("fresh", now - 60_000, now, "1"),
    ]
}

/// The `data` of every query in `set` on `port`; each must succeed with a
/// non-empty result.
pub(crate) fn run_queries(port: u16, set: &[String]) -> Vec<serde_json::Value> {
    set.iter()
        .map(|path| {
            let r = http_get(port, path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
            assert_eq!(r.status, 200, "GET :{port}{path}: {}", r.text());
            let json = r.json();
            let data = json["data"].clone();
            assert!(
                data["result"].as_array().is_some_and(|a| !a.is_empty()),
                "GET :{port}{path}: empty result: {json}"
            );
            data
        })
        .collect()
}

pub(crate) fn assert_agree(what: &str, set: &[String], want: &[serde_json::Value], port: u16) {
    let got = run_queries(port, set);
    for ((path, w), g) in set.iter().zip(want).zip(&got) {
        assert!(
            w == g,
            "{what}: :{port} disagrees with the writer on {path}\nwriter: {w}\nreader: {g}"
        );
    }
}

/// Series `fresh{seq=...}` a reader answers right now.
pub(crate) fn fresh_seqs(port: u16) -> Vec<u32> {
    let Ok(r) = http_get(
        port,
        &format!("/api/v1/query?{}", query_string(&[("query", "fresh")])),
    ) else {
        return Vec::new();
    };
    if r.status != 200 {
        return Vec::new();
    }
    r.json()["data"]["result"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["metric"]["seq"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
