//! Exemplars from a real sender: Prometheus 3 scrapes a target that exposes
//! exemplars (OpenMetrics), keeps them (`exemplar-storage`), and
//! remote-writes them to Strata, over 1.0 to one server and 2.0 to another.
//! `/api/v1/query_exemplars` must answer on each what Prometheus answers.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{api_time, http_get, now_ms, prometheus3_bin, query_string, PrometheusProcess};
use common::{free_port, wait_until, StrataProcess};

/// Scrapes after which the target's exemplars stop changing.
const CHANGING_SCRAPES: u64 = 6;

/// An OpenMetrics target: a counter and a classic histogram, each sample
/// with an exemplar whose trace id changes on every scrape (up to
/// [`CHANGING_SCRAPES`]).
fn serve_target(listener: TcpListener, scrapes: Arc<AtomicU64>) {
    // Exemplar times as a target gives them: when the event happened.
    let base = u64::try_from(now_ms() / 1000).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            // The request line and headers; the body is empty.
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let n = scrapes
                .fetch_add(1, Ordering::Relaxed)
                .min(CHANGING_SCRAPES);
            let t = base + n;
            let body = format!(
                "# TYPE app_requests counter\n\
                 app_requests_total{{path=\"/a\"}} {n} # {{trace_id=\"t{n}\",span_id=\"s{n}\"}} 1 {t}.250\n\
                 # TYPE app_latency_seconds histogram\n\
                 app_latency_seconds_bucket{{le=\"0.1\"}} {n} # {{trace_id=\"l{n}\"}} 0.05 {t}.500\n\
                 app_latency_seconds_bucket{{le=\"+Inf\"}} {n}\n\
                 app_latency_seconds_sum {n}\n\
                 app_latency_seconds_count {n}\n\
                 # EOF\n"
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

fn exemplars(port: u16, query: &str) -> serde_json::Value {
    let q = query_string(&[
        ("query", query),
        ("start", &api_time(1_600_000_000_000)),
        ("end", &api_time(now_ms() + 3_600_000)),
    ]);
    let r = http_get(port, &format!("/api/v1/query_exemplars?{q}")).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["data"].clone()
}

#[test]
fn prometheus_exemplars_read_back_as_prometheus_answers() {
    let prometheus = prometheus3_bin("prometheus");
    let (dir1, dir2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let v1 = StrataProcess::start(dir1.path(), &[]);
    let v2 = StrataProcess::start(dir2.path(), &[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().port();
    let scrapes = Arc::new(AtomicU64::new(0));
    serve_target(listener, Arc::clone(&scrapes));
    let port = free_port();
    let config = format!(
        r#"global:
  scrape_interval: 1s
scrape_configs:
  - job_name: app
    scrape_protocols: [OpenMetricsText1.0.0]
    static_configs:
      - targets: ['127.0.0.1:{target}']
remote_write:
  - url: http://127.0.0.1:{}/api/v1/write
    send_exemplars: true
    queue_config: {{batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}}
  - url: http://127.0.0.1:{}/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    send_exemplars: true
    queue_config: {{batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}}
"#,
        v1.port, v2.port
    );
    let prom = PrometheusProcess::start_binary_on(
        &prometheus,
        port,
        &config,
        &["--enable-feature=exemplar-storage"],
    );
    wait_until(
        Duration::from_secs(60),
        "the target's exemplars settle",
        || scrapes.load(Ordering::Relaxed) > CHANGING_SCRAPES + 2,
    );
    for query in [
        "app_requests_total",
        "app_latency_seconds_bucket",
        "sum(rate(app_requests_total[5m])) + app_latency_seconds_bucket{le=\"0.1\"}",
    ] {
        let want = exemplars(prom.port, query);
        let n = want.as_array().map_or(0, Vec::len);
        assert!(n > 0, "Prometheus holds no exemplars for {query}: {want}");
        for (version, strata) in [("1.0", &v1), ("2.0", &v2)] {
            let mut got = serde_json::Value::Null;
            let settled = (0..100).any(|_| {
                got = exemplars(strata.port, query);
                let same = got == want;
                if !same {
                    std::thread::sleep(Duration::from_millis(200));
                }
                same
            });
            assert!(
                settled,
                "remote write {version}, {query}:\nStrata:     {got}\nPrometheus: {want}"
            );
        }
    }
    // Distinct exemplars, not one repeated: every changing scrape's.
    let traces = exemplars(v2.port, "app_requests_total")[0]["exemplars"]
        .as_array()
        .unwrap()
        .len();
    assert!(traces as u64 >= CHANGING_SCRAPES, "{traces}");
    let held = common::metrics_sum(v2.port, "strata_head_exemplars").unwrap();
    assert!(held >= traces as f64, "strata_head_exemplars {held}");
    drop(prom);
}
