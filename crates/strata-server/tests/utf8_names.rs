//! UTF-8 metric and label names against the real Prometheus 3.16 in the
//! same run: the same series remote-written to both (1.0 and 2.0), then the
//! same JSON from both for queries with quoted names, `format_query`,
//! `/api/v1/series`, `/api/v1/labels` and `/api/v1/label/{name}/values`
//! with names written plainly and `U__` escaped, and for the invalid names
//! both refuse.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use common::promql_compare::{remote_write, same_answers, WriteSeries};
use common::{
    free_port, http_request, now_ms, prometheus3_bin, query_string, HttpResponse,
    PrometheusProcess, StrataProcess,
};
use strata_codec::Label;
use strata_remote_write::{encode_v2, V2RequestBuilder};

fn get(port: u16, path: &str) -> HttpResponse {
    http_request(port, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"))
}

/// One series over remote write 2.0, as Prometheus' own sender builds it.
fn remote_write_v2(port: u16, labels: &[(&str, &str)], samples: &[(i64, f64)]) {
    let mut b = V2RequestBuilder::new();
    let labels: Vec<Label> = labels.iter().map(|(n, v)| Label::new(*n, *v)).collect();
    b.add_series(&labels, samples);
    let mut body = Vec::new();
    encode_v2(&b.build(), &mut body);
    let resp = http_request(
        port,
        "POST",
        "/api/v1/write",
        &[
            (
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            ),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "2.0.0"),
        ],
        &body,
    )
    .unwrap();
    assert!(
        (200..300).contains(&resp.status),
        "remote write 2.0 to :{port} answered {}: {}",
        resp.status,
        resp.text()
    );
}

/// The series both servers hold, by remote write 1.0 and 2.0.
fn write_both(ports: [u16; 2], t0: i64) {
    let series = |labels: &[(&str, &str)], base: f64| WriteSeries {
        labels: labels
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
        samples: (0..9).map(|i| (t0 + i * 15_000, base * i as f64)).collect(),
    };
    let written = vec![
        series(
            &[
                ("__name__", "my.metric"),
                ("http.status", "200"),
                ("job", "a"),
            ],
            1.0,
        ),
        series(
            &[
                ("__name__", "my.metric"),
                ("http.status", "500"),
                ("job", "a"),
            ],
            3.0,
        ),
        series(&[("__name__", "温度"), ("場所", "東京")], 2.0),
        series(
            &[
                ("__name__", "plain_total"),
                ("k8s.pod.name", "p-1"),
                ("a_b", "x"),
                ("U__x", "literal"),
            ],
            5.0,
        ),
        series(
            &[("__name__", "quote\"d"), ("back\\slash", "v"), ("ünï", "ö")],
            7.0,
        ),
    ];
    let samples: Vec<(i64, f64)> = (0..9).map(|i| (t0 + i * 15_000, 11.0)).collect();
    for port in ports {
        remote_write(port, &written);
        remote_write_v2(
            port,
            &[("__name__", "rw2.metric"), ("service.name", "api")],
            &samples,
        );
    }
}

#[test]
fn remote_written_utf8_names_read_back_as_from_prometheus_3_16() {
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        "global:\n  scrape_interval: 1h\n",
        &["--web.enable-remote-write-receiver"],
    );
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(&dir.path().join("data"), &[]);
    let t0 = (now_ms() / 60_000 - 10) * 60_000;
    write_both([prometheus.port, srv.port], t0);

    let at = format!("{}", t0 / 1000 + 60);
    let instant = |query: &str| {
        format!(
            "/api/v1/query?{}",
            query_string(&[("query", query), ("time", &at)])
        )
    };
    let range = |query: &str| {
        format!(
            "/api/v1/query_range?{}",
            query_string(&[
                ("query", query),
                ("start", &format!("{}", t0 / 1000)),
                ("end", &format!("{}", t0 / 1000 + 120)),
                ("step", "30"),
            ])
        )
    };
    let matching = |endpoint: &str, selector: &str| {
        format!("{endpoint}?{}", query_string(&[("match[]", selector)]))
    };
    let mut paths: Vec<String> = [
        r#"{"my.metric"}"#,
        r#"{"my.metric", "http.status"="200"}"#,
        r#"{"my.metric", "http.status"=~"5.."}"#,
        r#"{__name__="my.metric", "http.status"!="200"}"#,
        r#"{__name__=~"my\\..+"}"#,
        r#"{"rw2.metric"}"#,
        r#"{"温度"}"#,
        r#"{"場所"="東京"}"#,
        r#"{"quote\"d"}"#,
        r#"{"ünï"="ö"}"#,
        r#"{"k8s.pod.name"="p-1"}"#,
        r#"{"U__x"="literal"}"#,
        r#"sum by ("http.status") ({"my.metric"})"#,
        r#"sum without ("http.status") ({"my.metric"})"#,
        r#"count by ("場所", "back\\slash") ({"温度"} or {"quote\"d"})"#,
        r#"max by ("http.status", job) (max_over_time({"my.metric"}[1m]))"#,
        r#"{"my.metric"}[30s]"#,
        r#"{"my.metric"} offset 30s"#,
        r#"topk(1, {"my.metric"})"#,
        r#"sort_desc({"my.metric"})"#,
        r#"count_values("value.seen", {"my.metric", "http.status"="200"})"#,
        r#"label_replace({"my.metric"}, "status.copy", "$1", "http.status", "(.*)")"#,
        r#"label_join({"my.metric"}, "joined.label", "-", "http.status", "job")"#,
        r#"absent({"no.such.metric", "a.b"="c"})"#,
        r#"absent_over_time({"no.such.metric", "a.b"="c"}[1m])"#,
        r#"{"my.metric"} / on ("http.status") {"my.metric"}"#,
        r#"{"my.metric"} * on (job) group_left ("service.name") label_replace({"rw2.metric"}, "job", "a", "", "")"#,
        r#"{"my.metric"} * ignoring ("http.status") group_left sum by (job) ({"my.metric"})"#,
        // Refused alike: an empty quoted name is no name, nor are bytes
        // that are not UTF-8.
        r#"{"my.metric", ""="x"}"#,
        r#"sum by ("") ({"my.metric"})"#,
        r#"sum by ("http.status", "\xff") ({"my.metric"})"#,
        r#"{"my.metric"} * on ('') {"my.metric"}"#,
        r#"count_values("\xff", {"my.metric"})"#,
        r#"label_replace({"my.metric"}, "\xff", "", "", "")"#,
        r#"label_join({"my.metric"}, "dst", "-", "job", "a\xe2\x82b")"#,
        r#"{"\xff"="x"}"#,
        r#"{"my.metric", "\xff"="x"}"#,
        r#"{"my.metric", "\xff"!="x"}"#,
        r#"{"\xff"}"#,
        r#"{__name__="\xff"}"#,
        r#"count_values("", {"my.metric"})"#,
        r#"label_replace({"my.metric"}, "", "", "", "")"#,
        r#"label_join({"my.metric"}, "", "-", "job")"#,
        r#"label_join({"my.metric"}, "x", "-", "")"#,
        r#"sum by ("my.metric") ({"my.metric"})"#,
        r#"{"my.metric", "http.status"}"#,
        r#"{"my.metric" , "my.metric"}"#,
        r#"{__name__="my.metric", "other.name"}"#,
    ]
    .iter()
    .map(|q| instant(q))
    .collect();
    for query in [
        r#"{"my.metric", "http.status"="200"}"#,
        r#"{__name__="my.metric"}"#,
        r#"sum by ("http.status", job) (rate({"my.metric"}[5m]))"#,
        r#"{"my.metric"} * on ("http.status") group_left ("k8s.pod.name") {"温度"}"#,
        r#"{"quote\"d", "back\\slash"=~"v"}"#,
        r#"{"U__x"="1", a_b="2", "a:b"="3"}"#,
        r#"my_metric{"http.status"="200"}"#,
    ] {
        paths.push(format!(
            "/api/v1/format_query?{}",
            query_string(&[("query", query)])
        ));
    }
    paths.push(range(r#"sum by ("http.status") ({"my.metric"})"#));
    paths.push(range(r#"{"温度"}"#));
    for selector in [
        r#"{"my.metric"}"#,
        r#"{"my.metric","http.status"="200"}"#,
        r#"{__name__=~"my\\..*"}"#,
        r#"{"温度"}"#,
        r#"{"場所"="東京"}"#,
        r#"{"rw2.metric"}"#,
        r#"{"quote\"d"}"#,
    ] {
        paths.push(matching("/api/v1/series", selector));
        paths.push(matching("/api/v1/labels", selector));
        paths.push(matching("/api/v1/label/__name__/values", selector));
    }
    paths.push("/api/v1/labels".into());
    paths.push("/api/v1/label/__name__/values".into());
    for name in [
        // Plain, and `U__` escaped: `_2e_` is `.`, `__` is `_`.
        "http.status",
        "U__http_2e_status",
        "U___5834__6240_",
        "U__k8s_2e_pod_2e_name",
        "U__a__b",
        "a_b",
        "U__U____x",
        "U__x",
        "U___fc_n_ef_",
        "back%5Cslash",
        "U__back_5c_slash",
        // Escapes Prometheus cannot read are taken as the name itself.
        "U__http_2e",
        "U__http_2g_status",
        "U__x_110000_",
        "U__x_d800_",
        "U__x_1234567_",
        "U___",
        // Not a name.
        "U__",
        "%FF",
        "U__%FF",
        "U___ff_",
    ] {
        paths.push(format!("/api/v1/label/{name}/values"));
    }
    same_answers(srv.port, prometheus.port, &paths);

    // `{""}` names nothing: refused alike, in the parsers' own words.
    // (Unquoted names, `my.metric`, are left out: Prometheus reads them
    // only behind a feature flag.)
    let mut refused = vec![instant(r#"{""}"#)];
    for endpoint in [
        "/api/v1/series",
        "/api/v1/labels",
        "/api/v1/label/__name__/values",
    ] {
        refused.push(matching(endpoint, r#"{""}"#));
    }
    for path in &refused {
        let kind = |port: u16| {
            let r = get(port, path);
            (r.status, r.json()["errorType"].clone())
        };
        assert_eq!(kind(srv.port), kind(prometheus.port), "{path}");
    }
    // A path that is not percent-encoded correctly: Go's server answers a
    // plain 400 before routing; Strata answers 400 `bad_data`.
    let path = "/api/v1/label/a%ZZb/values";
    assert_eq!(get(prometheus.port, path).status, 400);
    let answer = get(srv.port, path);
    assert_eq!(
        (answer.status, answer.json()["errorType"].as_str()),
        (400, Some("bad_data")),
        "{}",
        answer.text()
    );
    srv.stop();
}
