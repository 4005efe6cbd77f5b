//! `/api/v1/status/tsdb`: the series count and what accounts for it, per
//! tenant, as Prometheus answers it (top metric names, label names by
//! distinct values and by bytes, label pairs), with its `limit`.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::inproc::{body, now_ms, post, ts, Server};

async fn tsdb(url: &str, query: &str, tenant: Option<&str>) -> (u16, serde_json::Value) {
    let mut req = reqwest::Client::new().get(format!("{url}/api/v1/status/tsdb{query}"));
    if let Some(t) = tenant {
        req = req.header("X-Scope-OrgID", t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn list(v: &serde_json::Value, key: &str) -> Vec<(String, u64)> {
    v["data"][key]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_counts_per_tenant_with_a_limit() {
    let srv = Server::start(&[]).await;
    let t = now_ms() - 60_000;
    // Default tenant: 30 `http_requests_total` series over 3 jobs and 10
    // paths, 5 `up` series.
    let mut series = Vec::new();
    for i in 0..30 {
        let (job, path) = (format!("job{}", i % 3), format!("/p{}", i % 10));
        series.push(ts(
            &[
                ("__name__", "http_requests_total"),
                ("job", &job),
                ("path", &path),
            ],
            &[(t, 1.0)],
        ));
    }
    for i in 0..5 {
        series.push(ts(
            &[("__name__", "up"), ("job", &format!("job{i}"))],
            &[(t, 1.0)],
        ));
    }
    let (status, text, _) = post(&srv.url, body(series), &[]).await;
    assert_eq!(status, 204, "{text}");
    // Another tenant's series are not counted for the default one.
    let (status, text, _) = post(
        &srv.url,
        body(vec![ts(
            &[("__name__", "other"), ("job", "x")],
            &[(t, 1.0)],
        )]),
        &[("X-Scope-OrgID", "team-b")],
    )
    .await;
    assert_eq!(status, 204, "{text}");

    let (status, v) = tsdb(&srv.url, "", None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "success");
    assert_eq!(v["data"]["headStats"]["numSeries"], 35);
    // __name__: 2 values, job: 5 (job0..job4), path: 10.
    assert_eq!(v["data"]["headStats"]["numLabelPairs"], 17);
    assert_eq!(
        list(&v, "seriesCountByMetricName"),
        [("http_requests_total".into(), 30), ("up".into(), 5)]
    );
    assert_eq!(
        list(&v, "labelValueCountByLabelName"),
        [
            ("path".into(), 10),
            ("job".into(), 5),
            ("__name__".into(), 2)
        ]
    );
    let pairs = list(&v, "seriesCountByLabelValuePair");
    assert_eq!(pairs[0], ("__name__=http_requests_total".into(), 30));
    assert_eq!(pairs.len(), 10, "the default limit is 10");
    assert!(!pairs.iter().any(|(p, _)| p.starts_with("__tenant__")));

    let (_, v) = tsdb(&srv.url, "?limit=1", None).await;
    assert_eq!(list(&v, "seriesCountByMetricName").len(), 1);
    assert_eq!(list(&v, "memoryInBytesByLabelName").len(), 1);

    let (_, v) = tsdb(&srv.url, "", Some("team-b")).await;
    assert_eq!(v["data"]["headStats"]["numSeries"], 1);
    assert_eq!(list(&v, "seriesCountByMetricName"), [("other".into(), 1)]);

    let (status, v) = tsdb(&srv.url, "?limit=0", None).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["errorType"], "bad_data");
}
