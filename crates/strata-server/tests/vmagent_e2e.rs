//! Real vmagents, as users run them, scrape node_exporter every second and
//! remote-write to Strata and to VictoriaMetrics side by side: Debian's
//! vmagent 1.79 (snappy) and a current one, 1.150 (zstd first). Both send
//! each series' labels in scrape order (`instance` after `quantile` and
//! `mode`). Strata must refuse nothing, the current vmagent must keep
//! sending zstd to it, and Strata must hold exactly the raw samples
//! VictoriaMetrics holds for each sender.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{
    http_get, matrix_diff_by, metrics_sum, now_ms, query_matrix, query_string, wait_until, Labels,
    Matrix, NodeExporterProcess, StrataProcess, VictoriaMetricsProcess, VmagentProcess,
};

/// The window compared: every sample of the run fits in it.
const WINDOW_MS: i64 = 120_000;
/// How far in the past the compared window ends, so that everything
/// scraped up to then has been delivered to both stores.
const SETTLE: Duration = Duration::from_secs(6);
/// How long to keep retrying a comparison while delivery catches up.
const CATCH_UP: Duration = Duration::from_secs(20);
/// How long the senders run before the comparison.
const RUN: Duration = Duration::from_secs(15);

const SENDERS: [&str; 2] = ["vmagent-1.79", "vmagent-1.150"];

fn scrape_config(node_port: u16) -> String {
    format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:{node_port}"]
"#
    )
}

/// VictoriaMetrics' raw samples of `sender` in `(t - WINDOW_MS, t]`, from
/// `/api/v1/export` (JSON lines), with staleness markers left out as a
/// range selector leaves them out.
fn victoria_metrics_raw(port: u16, sender: &str, t: i64) -> Matrix {
    let path = format!(
        "/api/v1/export?{}",
        query_string(&[
            ("match[]", &format!("{{sender=\"{sender}\"}}")),
            ("start", &common::api_time(t - WINDOW_MS + 1)),
            ("end", &common::api_time(t)),
        ])
    );
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(resp.status, 200, "GET :{port}{path}: {}", resp.text());
    let mut out = Matrix::new();
    for line in resp.text().lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("export line is JSON");
        let labels: Labels = v["metric"]
            .as_object()
            .expect("metric object")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
            .collect();
        let samples: Vec<(i64, String)> = v["timestamps"]
            .as_array()
            .expect("timestamps")
            .iter()
            .zip(v["values"].as_array().expect("values"))
            .filter(|(_, v)| v.as_f64().is_some_and(|f| !f.is_nan()))
            .map(|(t, v)| (t.as_i64().expect("timestamp"), v.to_string()))
            .collect();
        if !samples.is_empty() {
            out.entry(labels).or_default().extend(samples);
        }
    }
    for samples in out.values_mut() {
        samples.sort_by_key(|&(t, _)| t);
    }
    out
}

/// Whether two sample values agree. VictoriaMetrics keeps about 15
/// significant decimal digits (node_time_seconds has 19), so values are
/// compared to a relative 1e-12.
fn same_value(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// A counter of Strata's `/metrics` summed over the series that start with
/// `series` (0 when none does).
fn strata_metric(strata: &StrataProcess, series: &str) -> f64 {
    metrics_sum(strata.port, series).unwrap_or(0.0)
}

#[test]
fn vmagents_lose_nothing_and_the_current_one_keeps_zstd() {
    common::require_binary(common::VMAGENT_BIN, "victoria-metrics");
    let current = common::current_vmagent_bin();
    let started = Instant::now();
    let data = tempfile::tempdir().expect("temp dir");
    let strata = StrataProcess::start(data.path(), &[]);
    let vm = VictoriaMetricsProcess::start();
    let node = NodeExporterProcess::start();
    let urls = [
        format!("http://127.0.0.1:{}/api/v1/write", strata.port),
        format!("http://127.0.0.1:{}/api/v1/write", vm.port),
    ];
    let config = scrape_config(node.port);
    let old = VmagentProcess::start(
        std::path::Path::new(common::VMAGENT_BIN),
        &config,
        &urls,
        &["sender=vmagent-1.79"],
    );
    let new = VmagentProcess::start(&current, &config, &urls, &["sender=vmagent-1.150"]);

    wait_until(Duration::from_secs(30), "both senders reach Strata", || {
        SENDERS.iter().all(|s| {
            !query_matrix(strata.port, &format!("up{{sender=\"{s}\"}}[1m]"), now_ms()).is_empty()
        })
    });
    std::thread::sleep(RUN);
    let t = now_ms() - SETTLE.as_millis() as i64;

    let mut matched = BTreeMap::new();
    for sender in SENDERS {
        let deadline = Instant::now() + CATCH_UP;
        loop {
            let expected = victoria_metrics_raw(vm.port, sender, t);
            let actual = query_matrix(strata.port, &format!("{{sender=\"{sender}\"}}[2m]"), t);
            match matrix_diff_by(&expected, &actual, same_value) {
                None => {
                    matched.insert(sender, expected);
                    break;
                }
                Some(d) => assert!(
                    Instant::now() < deadline,
                    "{sender}: Strata's raw samples differ from VictoriaMetrics' in the window \
                     ending at {t} ms (still after {CATCH_UP:?}):\n{d}"
                ),
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    for (sender, m) in &matched {
        let samples: usize = m.values().map(Vec::len).sum();
        assert!(
            m.len() > 100 && samples > 5 * m.len(),
            "{sender}: too little data to compare: {} series, {samples} samples",
            m.len()
        );
        // The series whose labels the senders do not send sorted.
        for (name, label) in [
            ("node_cpu_seconds_total", "mode"),
            ("go_gc_duration_seconds", "quantile"),
        ] {
            assert!(
                m.keys()
                    .any(|l| l.get("__name__").map(String::as_str) == Some(name)
                        && l.contains_key(label)
                        && l.contains_key("instance")),
                "{sender}: no {name} series with {label} and instance"
            );
        }
        eprintln!(
            "vmagent_e2e: {sender}: {} series, {samples} samples equal in Strata and VictoriaMetrics",
            m.len()
        );
    }

    // Nothing refused, by Strata or by the senders.
    assert_eq!(strata_metric(&strata, "strata_samples_rejected_total"), 0.0);
    assert_eq!(
        strata_metric(
            &strata,
            "strata_http_requests_total{handler=\"write\",code=\"400\"}"
        ),
        0.0
    );
    for (name, agent) in [("vmagent 1.79", &old), ("vmagent 1.150", &new)] {
        let dropped =
            metrics_sum(agent.port, "vmagent_remotewrite_packets_dropped_total").unwrap_or(0.0);
        assert_eq!(dropped, 0.0, "{name} dropped blocks:\n{}", agent.log_text());
        let log = agent.log_text();
        assert!(
            !log.contains("rejected"),
            "{name} logged a rejection:\n{log}"
        );
    }
    // The current vmagent sent zstd to Strata and never fell back to snappy
    // for it (it does for Debian's VictoriaMetrics 1.79, which predates zstd).
    let zstd = strata_metric(
        &strata,
        "strata_remote_write_requests_total{encoding=\"zstd\"}",
    );
    let snappy = strata_metric(
        &strata,
        "strata_remote_write_requests_total{encoding=\"snappy\"}",
    );
    assert!(zstd > 0.0 && snappy > 0.0, "zstd {zstd}, snappy {snappy}");
    let strata_url = format!("127.0.0.1:{}", strata.port);
    let log = new.log_text();
    assert!(
        !log.lines()
            .any(|l| l.contains("Downgrading") && l.contains(&strata_url)),
        "vmagent 1.150 fell back to snappy for Strata:\n{log}"
    );
    eprintln!(
        "vmagent_e2e: {zstd} zstd and {snappy} snappy requests, nothing refused, in {:?}",
        started.elapsed()
    );
}
