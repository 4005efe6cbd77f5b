//! `/api/v1/admin/tsdb/delete_series` answers as Prometheus 3.16 does: the
//! same data written to both, the same deletions asked of both (POST with
//! a form body and PUT with a URL query), then the same queries, series
//! calls and error answers compared as JSON. A reader node on the writer's
//! folder leaves the deleted samples out too, and refuses to delete.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::promql_compare::{remote_write, WriteSeries};
use common::{
    free_port, http_request, now_ms, prometheus3_bin, query_string, wait_until, HttpResponse,
    PrometheusProcess, StrataProcess,
};

const PATH: &str = "/api/v1/admin/tsdb/delete_series";

fn request(port: u16, method: &str, path: &str, body: &[u8]) -> HttpResponse {
    let headers: &[(&str, &str)] = if body.is_empty() {
        &[]
    } else {
        &[("Content-Type", "application/x-www-form-urlencoded")]
    };
    http_request(port, method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} :{port}{path}: {e}"))
}

/// The answer's status and JSON (`null` for an empty body).
fn answer(resp: &HttpResponse) -> (u16, serde_json::Value) {
    let json = if resp.body.is_empty() {
        serde_json::Value::Null
    } else {
        resp.json()
    };
    (resp.status, json)
}

#[test]
fn deletions_answer_as_prometheus_3_16_and_reader_nodes_honour_them() {
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        "global:\n  scrape_interval: 1h\n",
        &[
            "--web.enable-remote-write-receiver",
            "--web.enable-admin-api",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let srv = StrataProcess::start(&data, &[("STRATA_STORAGE_FLUSH_INTERVAL", "20ms")]);
    // Twenty minutes a sample every 15 s, ending a minute ago.
    let t0 = (now_ms() / 60_000 - 21) * 60_000;
    let series = |name: &str, job: &str| WriteSeries {
        labels: vec![
            ("__name__".into(), name.into()),
            ("instance".into(), "h1".into()),
            ("job".into(), job.into()),
        ],
        samples: (0..80).map(|i| (t0 + i * 15_000, (i * 3) as f64)).collect(),
    };
    let written = vec![
        series("req_total", "api"),
        series("req_total", "db"),
        series("req_total", "web"),
        series("temp", "api"),
    ];
    remote_write(prometheus.port, &written);
    remote_write(srv.port, &written);

    let at = |offset_s: i64| format!("{}", t0 / 1000 + offset_s);
    // Every error form first: nothing is deleted by them. The first three
    // answer word for word as Prometheus.
    let refused = [
        ("POST", PATH.to_owned(), String::new()),
        (
            "POST",
            format!("{PATH}?match[]=req_total&start=x"),
            String::new(),
        ),
        (
            "POST",
            format!("{PATH}?match[]=req_total&end=yesterday"),
            String::new(),
        ),
        (
            "POST",
            format!("{PATH}?match[]=sum(req_total)"),
            String::new(),
        ),
        (
            "POST",
            format!("{PATH}?match[]=req_total%7B"),
            String::new(),
        ),
    ];
    for (i, (method, path, body)) in refused.iter().enumerate() {
        let want = request(prometheus.port, method, path, body.as_bytes());
        let got = request(srv.port, method, path, body.as_bytes());
        assert_eq!(got.status, 400, "{method} {path}: {}", got.text());
        let (got, want) = (answer(&got), answer(&want));
        if i < 3 {
            assert_eq!(got, want, "{method} {path}");
        } else {
            // A selector that does not parse: the parsers word it apart.
            assert_eq!(
                (got.0, &got.1["errorType"]),
                (want.0, &want.1["errorType"]),
                "{method} {path}: {got:?} against {want:?}"
            );
        }
    }
    // The deletions: part of one series' history (a form body), all of
    // another's (a URL query, PUT), and a selector matching nothing.
    let deletions = [
        (
            "POST",
            PATH.to_owned(),
            query_string(&[
                ("match[]", "req_total{job=\"api\"}"),
                ("start", &at(300)),
                ("end", &at(600)),
            ]),
        ),
        (
            "PUT",
            format!("{PATH}?{}", query_string(&[("match[]", "{job=\"db\"}")])),
            String::new(),
        ),
        (
            "POST",
            format!("{PATH}?{}", query_string(&[("match[]", "nothing_here")])),
            String::new(),
        ),
    ];
    for (method, path, body) in &deletions {
        let want = request(prometheus.port, method, path, body.as_bytes());
        let got = request(srv.port, method, path, body.as_bytes());
        assert_eq!(answer(&got), answer(&want), "{method} {path} {body}");
        assert_eq!(got.status, 204, "{method} {path}: {}", got.text());
    }

    let range = |query: &str| {
        format!(
            "/api/v1/query_range?{}&start={}&end={}&step=15",
            query_string(&[("query", query)]),
            at(0),
            at(1200)
        )
    };
    let reads = [
        range("req_total"),
        range("temp"),
        range("sum by (job) (rate(req_total[2m]))"),
        format!(
            "/api/v1/query?{}&time={}",
            query_string(&[("query", "count_over_time(req_total[20m])")]),
            at(1200)
        ),
        format!(
            "/api/v1/series?{}&start={}&end={}",
            query_string(&[("match[]", "{__name__=~\".+\"}")]),
            at(0),
            at(1200)
        ),
    ];
    for path in &reads {
        let want = request(prometheus.port, "GET", path, b"");
        let got = request(srv.port, "GET", path, b"");
        assert_eq!(
            answer(&got),
            answer(&want),
            "{path}\nStrata:     {}\nPrometheus: {}",
            got.text(),
            want.text()
        );
    }

    // A reader node on the same folder: the same answers, and no deletion
    // of its own.
    let reader = StrataProcess::start(&data, &[("STRATA_SERVER_ROLE", "reader")]);
    for path in &reads {
        let want = answer(&request(srv.port, "GET", path, b""));
        wait_until(
            Duration::from_secs(30),
            &format!("the reader reads {path}"),
            || answer(&request(reader.port, "GET", path, b"")) == want,
        );
    }
    let refused = request(reader.port, "POST", &format!("{PATH}?match[]=temp"), b"");
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.text().contains("reader node"), "{}", refused.text());
    srv.stop();
}
