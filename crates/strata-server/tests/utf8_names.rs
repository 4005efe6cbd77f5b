//! UTF-8 metric and label names end to end, against the real Prometheus
//! 3.16 in the same run: the same series written to both (remote write 1.0
//! and 2.0; OTLP from the OpenTelemetry Python SDK under `NoTranslation`
//! and `NoUTF8EscapingWithSuffixes`), then the same JSON from both for
//! queries with quoted names, `/api/v1/series`, `/api/v1/labels` and
//! `/api/v1/label/{name}/values` with names written plainly and `U__`
//! escaped, and for the invalid names both refuse. And names that are not
//! UTF-8 on the way in: a 400 naming the problem, the rest written.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::promql_compare::{remote_write, WriteSeries};
use common::{
    free_port, http_request, now_ms, prometheus3_bin, query_string, wait_until, HttpResponse,
    PrometheusProcess, StrataProcess,
};
use strata_codec::Label;
use strata_otlp::proto::{
    any_value, metric, number_data_point, AnyValue, ExportMetricsServiceRequest, Gauge, KeyValue,
    Metric, NumberDataPoint, Resource, ResourceMetrics, ScopeMetrics,
};
use strata_remote_write::proto::v1::{Label as V1Label, Sample, TimeSeries, WriteRequest};
use strata_remote_write::{encode_v2, V2RequestBuilder};

fn get(port: u16, path: &str) -> HttpResponse {
    http_request(port, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"))
}

/// The answer's JSON, or its text when it is not JSON. Series are sorted:
/// Prometheus gives a single `match[]`'s series in the order its head
/// created them, which no client may rely on.
fn body(path: &str, r: &HttpResponse) -> serde_json::Value {
    let mut json: serde_json::Value =
        serde_json::from_slice(&r.body).unwrap_or_else(|_| r.text().into());
    if path.starts_with("/api/v1/series") {
        if let Some(series) = json["data"].as_array_mut() {
            series.sort_by_key(|s| s.to_string());
        }
    }
    json
}

/// Requires the same status and JSON from both servers for every path,
/// naming every path that differs.
fn same_answers(strata: u16, prometheus: u16, paths: &[String]) {
    let mut differing = Vec::new();
    for path in paths {
        let want = get(prometheus, path);
        let got = get(strata, path);
        if (got.status, body(path, &got)) != (want.status, body(path, &want)) {
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

    // Unquoted dots need a feature flag in Prometheus, and `{""}` names
    // nothing: refused alike, with the parsers' own words.
    let mut refused = vec![instant("my.metric"), instant(r#"{""}"#)];
    for endpoint in [
        "/api/v1/series",
        "/api/v1/labels",
        "/api/v1/label/__name__/values",
    ] {
        refused.push(matching(endpoint, "my.metric"));
    }
    for path in &refused {
        let kind = |port: u16| {
            let r = get(port, path);
            (r.status, r.json()["errorType"].clone())
        };
        assert_eq!(kind(srv.port), kind(prometheus.port), "{path}");
    }
    srv.stop();
}

#[test]
fn otlp_without_translation_reads_back_as_from_prometheus_3_16() {
    otlp_reads_back_as_from_prometheus_3_16(
        "NoTranslation",
        ("jobs.done", "http.server.request.duration"),
    );
}

#[test]
fn otlp_utf8_with_suffixes_reads_back_as_from_prometheus_3_16() {
    otlp_reads_back_as_from_prometheus_3_16(
        "NoUTF8EscapingWithSuffixes",
        ("jobs.done_total", "http.server.request.duration_seconds"),
    );
}

/// OTLP metrics under `strategy` (names as sent, with or without unit and
/// type suffixes), which names the counter and histogram families `names`,
/// and a resource attribute with dots promoted to a label, on both sides.
fn otlp_reads_back_as_from_prometheus_3_16(strategy: &str, names: (&str, &str)) {
    let (counter, histogram) = names;
    let dir = tempfile::tempdir().unwrap();
    let strata = StrataProcess::start(
        dir.path(),
        &[
            ("STRATA_OTLP_TRANSLATION_STRATEGY", strategy),
            ("STRATA_OTLP_PROMOTE_RESOURCE_ATTRIBUTES", "k8s.pod.name"),
        ],
    );
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        &format!(
            "otlp:\n  translation_strategy: {strategy}\n  \
             promote_resource_attributes: [k8s.pod.name]\n"
        ),
        &["--web.enable-otlp-receiver"],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/export_utf8.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(format!("http://127.0.0.1:{}", strata.port))
        .arg(format!("http://127.0.0.1:{}", prometheus.port))
        .output()
        .expect("run python3 (install Debian's python3)");
    assert!(
        out.status.success(),
        "the exporter failed (pip install -r crates/strata-server/tests/otlp/requirements.txt): {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Series and label names carry no timestamps: they must agree exactly.
    let job = r#"{job="shop/utf8"}"#;
    let mut paths = Vec::new();
    let jobs = format!(r#"{{"{counter}"}}"#);
    for selector in [job, &jobs, r#"{__name__=~"http\\.server\\..+"}"#] {
        for endpoint in [
            "/api/v1/series",
            "/api/v1/labels",
            "/api/v1/label/__name__/values",
            "/api/v1/label/U__http_2e_request_2e_method/values",
            "/api/v1/label/k8s.pod.name/values",
        ] {
            paths.push(format!(
                "{endpoint}?{}",
                query_string(&[("match[]", selector)])
            ));
        }
    }
    // Strata applies a write before answering it; wait for the series
    // anyway, as a follower would.
    let _ = std::panic::catch_unwind(|| {
        wait_until(Duration::from_secs(10), "Strata's series", || {
            get(strata.port, &paths[0]).json() == get(prometheus.port, &paths[0]).json()
        })
    });
    same_answers(strata.port, prometheus.port, &paths);

    // Values: each exporter stamps its own collection time, so compare
    // labels and values at one moment.
    let time = format!("{:.3}", now_ms() as f64 / 1000.0);
    for query in [
        jobs.as_str(),
        &format!(r#"sum by ("job.kind") ({jobs})"#),
        r#"{__name__=~"http\\.server\\.request\\.duration.*_bucket", "http.request.method"="GET"}"#,
        r#"{__name__=~"http\\.server\\.request\\.duration.*_count"}"#,
        r#"{__name__=~"system\\.cpu\\.utilization.*"}"#,
        r#"{"queue.depth"}"#,
        r#"{__name__="target_info"}"#,
    ] {
        let answer = |port: u16| -> BTreeMap<String, String> {
            let q = query_string(&[("query", query), ("time", &time)]);
            let v = get(port, &format!("/api/v1/query?{q}")).json();
            v["data"]["result"]
                .as_array()
                .unwrap_or_else(|| panic!("{query}: {v}"))
                .iter()
                .map(|s| {
                    (
                        s["metric"].to_string(),
                        s["value"][1].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        let want = answer(prometheus.port);
        assert!(!want.is_empty(), "{query}: Prometheus has no answer");
        assert_eq!(answer(strata.port), want, "{query}");
    }
    // Prometheus' metadata API answers from scrape targets only: Strata's
    // is checked alone, under the names the series have.
    for (family, want) in [
        (
            counter,
            r#"{"type":"counter","help":"Jobs done.","unit":""}"#,
        ),
        (
            histogram,
            r#"{"type":"histogram","help":"Request latency.","unit":"seconds"}"#,
        ),
    ] {
        let q = query_string(&[("metric", family)]);
        let got = get(strata.port, &format!("/api/v1/metadata?{q}")).json();
        let want: serde_json::Value = serde_json::from_str(want).unwrap();
        assert_eq!(got["data"][family], serde_json::json!([want]), "{got}");
    }
}

/// `body` with the first `~~` replaced by two bytes that are not UTF-8.
fn spoil(mut body: Vec<u8>) -> Vec<u8> {
    let at = body.windows(2).position(|w| w == b"~~").unwrap();
    body[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    body
}

/// A name that is not UTF-8 is refused with a 400 naming the problem, in
/// remote write 1.0 and 2.0 and in OTLP; the request's valid series are
/// written (remote write) and the server stays up.
#[test]
fn names_not_utf8_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(
        &dir.path().join("data"),
        &[("STRATA_OTLP_TRANSLATION_STRATEGY", "NoTranslation")],
    );
    let t = now_ms();
    let v1_series = |name: &str, label: &str| TimeSeries {
        labels: vec![
            V1Label {
                name: "__name__".into(),
                value: name.into(),
            },
            V1Label {
                name: label.into(),
                value: "v".into(),
            },
        ],
        samples: vec![Sample {
            value: 1.0,
            timestamp: t,
        }],
        ..TimeSeries::default()
    };
    let v1 = WriteRequest {
        timeseries: vec![
            v1_series("bad.v1", "http.~~status"),
            v1_series("good.v1", "http.status"),
        ],
        ..WriteRequest::default()
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&spoil(prost::Message::encode_to_vec(&v1)))
        .unwrap();
    let v1_answer = http_request(
        srv.port,
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
        &body,
    )
    .unwrap();

    let mut b = V2RequestBuilder::new();
    for (name, label) in [("bad.v2", "k8s.~~pod"), ("good.v2", "k8s.pod")] {
        b.add_series(
            &[Label::new("__name__", name), Label::new(label, "p")],
            &[(t, 2.0)],
        );
    }
    let body = snap::raw::Encoder::new()
        .compress_vec(&spoil(prost::Message::encode_to_vec(&b.build())))
        .unwrap();
    let v2_answer = http_request(
        srv.port,
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

    let attribute = |key: &str| KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue("x".into())),
        }),
    };
    let otlp = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![attribute("service.name")],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics: vec![Metric {
                    name: "otlp.gauge".into(),
                    description: String::new(),
                    unit: String::new(),
                    data: Some(metric::Data::Gauge(Gauge {
                        data_points: vec![NumberDataPoint {
                            attributes: vec![attribute("state.~~name")],
                            time_unix_nano: u64::try_from(t).unwrap() * 1_000_000,
                            value: Some(number_data_point::Value::AsDouble(3.0)),
                            ..NumberDataPoint::default()
                        }],
                    })),
                }],
                schema_url: String::new(),
            }],
        }],
    };
    let otlp_answer = http_request(
        srv.port,
        "POST",
        "/api/v1/otlp/v1/metrics",
        &[("Content-Type", "application/x-protobuf")],
        &spoil(prost::Message::encode_to_vec(&otlp)),
    )
    .unwrap();

    for (answer, names) in [
        (&v1_answer, r#"a label name is not valid UTF-8: "http."#),
        (
            &v2_answer,
            "(a label name) refers to symbol 3, which is not valid UTF-8",
        ),
        (&otlp_answer, "KeyValue.key"),
    ] {
        assert_eq!(answer.status, 400, "{}", answer.text());
        assert!(answer.text().contains(names), "{}", answer.text());
    }
    assert!(
        otlp_answer.text().contains("not UTF-8"),
        "{}",
        otlp_answer.text()
    );

    let path = format!(
        "/api/v1/query?{}",
        query_string(&[
            ("query", r#"{__name__=~"(good|bad|otlp)\\..+"}"#),
            ("time", &format!("{}", t / 1000 + 1)),
        ])
    );
    let answer = get(srv.port, &path);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let json = answer.json();
    let names: Vec<&str> = json["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"]["__name__"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["good.v1", "good.v2"], "{}", answer.text());
    srv.stop();
}
