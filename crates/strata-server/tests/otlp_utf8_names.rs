//! OTLP metrics with UTF-8 names from a real OpenTelemetry client (the
//! Python SDK, as `otlp_e2e` uses it) to Strata and to the real Prometheus
//! 3.16 under the same settings, with the strategies that keep names as
//! sent (`NoTranslation`, `NoUTF8EscapingWithSuffixes`): the same series,
//! label names and values, and values at one moment, from both.
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

use common::promql_compare::same_answers;
use common::{
    free_port, http_request, now_ms, prometheus3_bin, query_string, HttpResponse,
    PrometheusProcess, StrataProcess,
};

fn get(port: u16, path: &str) -> HttpResponse {
    http_request(port, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"))
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
    // Both answered the exporter after writing: no need to wait.
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
            r#"{"type":"counter","unit":"","help":"Jobs done."}"#,
        ),
        (
            histogram,
            r#"{"type":"histogram","unit":"seconds","help":"Request latency."}"#,
        ),
    ] {
        let q = query_string(&[("metric", family)]);
        let got = get(strata.port, &format!("/api/v1/metadata?{q}")).json();
        let want: serde_json::Value = serde_json::from_str(want).unwrap();
        assert_eq!(got["data"][family], serde_json::json!([want]), "{got}");
    }
}
