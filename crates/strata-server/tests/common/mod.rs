//! Harness for end-to-end tests: the `strata` binary and real external
//! systems (Prometheus, node_exporter) as child processes on free ports,
//! killed on drop, their logs kept in files and printed when a test fails.
//!
//! Each test binary compiles this module on its own and uses part of it,
//! hence the allowances for what a given test leaves unused.
#![allow(dead_code, unused_imports, clippy::disallowed_methods)]

mod http;
pub mod inproc;
mod processes;
pub mod promql_compare;
mod query;
pub mod s3;
pub mod webdriver;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use http::{http_get, http_request, query_string, HttpResponse};
pub use processes::{
    NodeExporterProcess, PrometheusProcess, StrataProcess, VictoriaMetricsProcess, VmagentProcess,
};
pub use query::{
    matrix_diff, matrix_diff_by, metrics_sum, newest_sample, page_values, query_matrix,
    query_vector, raw_snapshot, round_numbers, vector_sum, wait_same_as_prometheus, Labels, Matrix,
};

pub const PROMETHEUS_BIN: &str = "/usr/bin/prometheus";
pub const NODE_EXPORTER_BIN: &str = "/usr/bin/prometheus-node-exporter";
pub const VICTORIA_METRICS_BIN: &str = "/usr/bin/victoria-metrics";
/// Debian's vmagent (1.79): snappy bodies, labels in scrape order.
pub const VMAGENT_BIN: &str = "/usr/bin/vmagent";

/// The path the environment variable `var` names, or else `rel` in the
/// cache folder .ci/run builds current peers into.
pub fn env_or_test_cache(var: &str, rel: &str) -> std::path::PathBuf {
    std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/strata-test-bin").join(rel)
        })
}

/// A current vmagent (1.150), which sends zstd bodies first: built from its
/// Go module by .ci/run into the test-binary cache, or named by
/// `STRATA_VMAGENT_BIN`.
pub fn current_vmagent_bin() -> std::path::PathBuf {
    let bin = env_or_test_cache("STRATA_VMAGENT_BIN", "vmagent-1.150.0/vmagent");
    assert!(
        bin.is_file(),
        "{} not found: build vmagent 1.150 as .ci/run does (go install \
         github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent@v1.150.0 with GOBIN set to \
         its folder), or set STRATA_VMAGENT_BIN",
        bin.display()
    );
    bin
}

/// A port nobody listens on right now (the kernel's pick for 127.0.0.1:0).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// A Prometheus API timestamp: seconds with millisecond precision.
pub fn api_time(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Polls `ready` every 100 ms until it holds; panics naming `what` after
/// `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Panics with install instructions when an external binary is missing:
/// these tests must fail, not skip, on a machine without it.
pub fn require_binary(path: &str, debian_package: &str) {
    assert!(
        Path::new(path).is_file(),
        "{path} not found: install Debian's `{debian_package}` package \
         (apt-get install {debian_package}); .ci/run does this"
    );
}

/// The prometheus/compliance remote-write receiver suite, compiled as a Go
/// test binary by .ci/run (`go test -c` in the module), or named by
/// `STRATA_RW_COMPLIANCE_BIN`.
pub fn rw_compliance_bin() -> std::path::PathBuf {
    let bin = env_or_test_cache(
        "STRATA_RW_COMPLIANCE_BIN",
        "rw-compliance/rw-compliance.test",
    );
    assert!(
        bin.is_file(),
        "{} not found: build the remote-write receiver compliance suite as .ci/run does \
         (go mod download github.com/prometheus/compliance/remotewrite/receiver@<version>, \
         then go test -c in a writable copy of it), or set STRATA_RW_COMPLIANCE_BIN",
        bin.display()
    );
    bin
}

/// Alertmanager 0.35 as .ci/run builds it, or `STRATA_ALERTMANAGER_BIN`;
/// missing, the test fails.
pub fn alertmanager_bin() -> std::path::PathBuf {
    let bin = env_or_test_cache(
        "STRATA_ALERTMANAGER_BIN",
        "alertmanager-0.35.0/alertmanager",
    );
    assert!(
        bin.is_file(),
        "{} not found: build Alertmanager 0.35 as .ci/run does, or set STRATA_ALERTMANAGER_BIN",
        bin.display()
    );
    bin
}

/// Where Prometheus 3's `prometheus` and `promtool` are.
pub fn prometheus3_bin(name: &str) -> std::path::PathBuf {
    let dir = env_or_test_cache("STRATA_PROMETHEUS3_BIN_DIR", "prometheus-3.16.0");
    let bin = dir.join(name);
    assert!(
        bin.is_file(),
        "{} not found: build Prometheus 3's {name} as .ci/run does (go install \
         github.com/prometheus/prometheus/cmd/{name}@v0.316.0 with GOBIN={}), or set \
         STRATA_PROMETHEUS3_BIN_DIR to a folder holding prometheus and promtool 3.x",
        bin.display(),
        dir.display()
    );
    let out = std::process::Command::new(&bin)
        .arg("--version")
        .output()
        .expect("run prometheus --version");
    let version =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        version.contains("version 3."),
        "{} is not Prometheus 3: {version}",
        bin.display()
    );
    bin
}

/// A Prometheus configuration that scrapes itself (on `prometheus_port`)
/// and node_exporter every second and remote-writes to Strata, retrying
/// quickly.
pub fn prometheus_config(prometheus_port: u16, node_port: u16, strata_port: u16) -> String {
    format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:{prometheus_port}"]
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:{node_port}"]
remote_write:
  - url: http://127.0.0.1:{strata_port}/api/v1/write
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 50ms
      max_backoff: 1s
    metadata_config:
      send_interval: 1s
"#
    )
}
