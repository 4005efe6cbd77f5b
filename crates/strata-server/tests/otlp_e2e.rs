//! OTLP metrics from a real OpenTelemetry client (the Python SDK and its
//! OTLP/HTTP exporter) to Strata and to the real Prometheus 3 in the same
//! run: the same series names, labels, values and metadata come back from
//! both. Needs `python3` with the `opentelemetry-sdk` and
//! `opentelemetry-exporter-otlp-proto-http` packages (.ci/run installs
//! them from `tests/otlp/requirements.txt`) and Prometheus 3.
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

use common::{free_port, now_ms, prometheus3_bin, wait_until};
use common::{http_get, query_string, PrometheusProcess, StrataProcess};
use serde_json::Value;

/// Both sides' settings: `deployment.environment` on every series.
const PROMETHEUS_CONFIG: &str = "otlp:\n  promote_resource_attributes: [deployment.environment]\n";

fn get_json(port: u16, path: &str) -> Value {
    let r = http_get(port, path).expect("GET");
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    r.json()
}

/// Every series of `selector` at `time`: labels → value.
fn instant(port: u16, selector: &str, time: &str) -> BTreeMap<String, String> {
    let q = query_string(&[("query", selector), ("time", time)]);
    let v = get_json(port, &format!("/api/v1/query?{q}"));
    v["data"]["result"]
        .as_array()
        .expect("vector")
        .iter()
        .map(|s| {
            (
                s["metric"].to_string(),
                s["value"][1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn metadata(port: u16, metric: &str) -> Value {
    let q = query_string(&[("metric", metric)]);
    get_json(port, &format!("/api/v1/metadata?{q}"))["data"][metric][0].clone()
}

#[test]
fn python_sdk_exports_read_back_as_from_prometheus_3() {
    let dir = tempfile::tempdir().unwrap();
    let strata = StrataProcess::start(
        dir.path(),
        &[(
            "STRATA_OTLP_PROMOTE_RESOURCE_ATTRIBUTES",
            "deployment.environment",
        )],
    );
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        PROMETHEUS_CONFIG,
        &["--web.enable-otlp-receiver"],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/export.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(format!("http://127.0.0.1:{}", strata.port))
        .arg(format!("http://127.0.0.1:{}", prometheus.port))
        .output()
        .expect("run python3 (install Debian's python3)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the exporter failed (pip install -r crates/strata-server/tests/otlp/requirements.txt): {stderr}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("summary JSON");

    // Refused per metric, with a partial success that names them.
    let delta = &summary["delta"];
    assert_eq!(delta["status"], 200, "{delta}");
    assert!(delta["rejected"].as_i64().unwrap() > 0, "{delta}");
    let msg = delta["message"].as_str().unwrap();
    assert!(
        msg.contains("http.server.requests") && msg.contains("delta"),
        "{msg}"
    );
    assert!(
        !msg.contains("queue.items"),
        "a cumulative metric was refused: {msg}"
    );
    // Exponential histograms are native histograms, stored as Prometheus
    // stores them.
    let expo = &summary["exponential"];
    assert_eq!(
        (&expo["status"], expo["rejected"].as_i64()),
        (&Value::from(200), Some(0)),
        "{expo}"
    );
    let time = format!("{:.3}", now_ms() as f64 / 1000.0);
    let q = query_string(&[
        (
            "query",
            r#"{instance="pod-exponential", __name__=~".*duration.*"}"#,
        ),
        ("time", &time),
    ]);
    let answer = |port: u16| {
        let mut data = get_json(port, &format!("/api/v1/query?{q}"))["data"].clone();
        common::round_numbers(&mut data);
        data
    };
    let want = answer(prometheus.port);
    let histograms = want["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["histogram"].is_array())
        .count();
    assert!(
        histograms > 0,
        "Prometheus holds no native histogram: {want}"
    );
    let mut got = Value::Null;
    let same = (0..50).any(|_| {
        got = answer(strata.port);
        let same = got == want;
        if !same {
            std::thread::sleep(Duration::from_millis(200));
        }
        same
    });
    assert!(same, "Strata:     {got}\nPrometheus: {want}");

    // What both took reads back alike, series by series.
    let time = format!("{:.3}", now_ms() as f64 / 1000.0);
    // The instances both received (the refusal checks went to Strata only).
    let selector = r#"{job="shop/checkout", instance=~"pod-1|pod-json"}"#;
    let from_prometheus = instant(prometheus.port, selector, &time);
    assert!(
        from_prometheus.len() > 40,
        "Prometheus 3 holds too little to compare: {from_prometheus:?}"
    );
    let mut from_strata = BTreeMap::new();
    wait_until(Duration::from_secs(10), "Strata's series", || {
        from_strata = instant(strata.port, selector, &time);
        from_strata.len() >= from_prometheus.len()
    });
    let differing: Vec<_> = from_strata
        .iter()
        .filter(|(k, v)| from_prometheus.get(*k) != Some(*v))
        .chain(
            from_prometheus
                .iter()
                .filter(|(k, _)| !from_strata.contains_key(*k)),
        )
        .collect();
    assert!(differing.is_empty(), "series that differ: {differing:#?}");

    for name in [
        "http_server_requests_total",
        "http_server_duration_milliseconds_bucket",
        "system_cpu_utilization_ratio",
        "queue_items",
        "net_bytes_sent_total",
        "rpc_payload_size_bytes_sum",
        "target_info",
    ] {
        let names: Vec<&String> = from_strata
            .keys()
            .filter(|k| k.contains(&format!("\"__name__\":\"{name}\"")))
            .collect();
        assert!(!names.is_empty(), "no {name} in {:?}", from_strata.keys());
    }
    assert!(
        from_strata
            .keys()
            .any(|k| k.contains("\"instance\":\"pod-json\"")),
        "the OTLP/JSON request's series are missing"
    );
    assert!(
        from_strata
            .keys()
            .filter(|k| !k.contains("target_info"))
            .all(|k| k.contains("\"deployment_environment\":\"test\"")),
        "a promoted attribute is missing"
    );

    // The rounds agree too: each side's exporter stamps its own
    // collection time, a few milliseconds apart, so functions that
    // extrapolate over time differ slightly; these do not.
    for q in [
        r#"sum by (http_request_method) (max_over_time(http_server_requests_total{instance="pod-1"}[1m]) - min_over_time(http_server_requests_total{instance="pod-1"}[1m]))"#,
        r#"count_over_time(http_server_duration_milliseconds_count{instance="pod-1"}[1m])"#,
        r#"histogram_quantile(0.9, sum by (le) (http_server_duration_milliseconds_bucket{instance="pod-1"}))"#,
    ] {
        let (ours, theirs) = (
            instant(strata.port, q, &time),
            instant(prometheus.port, q, &time),
        );
        assert!(!theirs.is_empty(), "{q}: Prometheus has no answer");
        assert_eq!(ours, theirs, "{q}");
    }

    // Prometheus 3 keeps OTLP metadata in its TSDB but its metadata API
    // answers from scrape targets only, so this side is checked alone.
    for (family, kind, help, unit) in [
        (
            "http_server_requests_total",
            "counter",
            "Requests served.",
            "",
        ),
        (
            "http_server_duration_milliseconds",
            "histogram",
            "Request latency.",
            "milliseconds",
        ),
        (
            "system_cpu_utilization_ratio",
            "gauge",
            "CPU busy fraction.",
            "",
        ),
        ("queue_items", "gauge", "Items queued.", ""),
    ] {
        assert_eq!(
            metadata(strata.port, family),
            serde_json::json!({"type": kind, "help": help, "unit": unit}),
            "metadata of {family}"
        );
    }
}
