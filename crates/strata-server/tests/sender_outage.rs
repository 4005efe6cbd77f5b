//! A sender's backlog after an outage. Prometheus 3 scrapes itself and
//! node_exporter every second and remote-writes to Strata, whose buckets
//! are 20 s wide with a 2 s grace. Strata is stopped for longer than a
//! bucket and its grace, so when it comes back the buckets of the outage
//! are past their seal: Prometheus' backlog (its WAL, retried) lands in
//! them as late samples. Prometheus must fail none of them, and Strata must
//! hold exactly Prometheus' raw samples over the whole run, before and
//! after another restart.
// Real processes run in real time: the wall clock and sleeps are the point.
#![allow(clippy::disallowed_methods)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{
    matrix_diff, metrics_sum, newest_sample, now_ms, raw_snapshot, vector_sum,
    wait_same_as_prometheus, wait_until, Matrix, NodeExporterProcess, PrometheusProcess,
    StrataProcess,
};

const SELECTORS: &[&str] = &[
    "up",
    "scrape_duration_seconds",
    "prometheus_tsdb_head_series",
    "prometheus_http_requests_total",
    "prometheus_http_request_duration_seconds_bucket",
    "node_cpu_seconds_total",
    "node_network_receive_bytes_total",
    "node_memory_MemAvailable_bytes",
    "node_time_seconds",
];

/// Strata's bucket width and seal grace for this test: the outage must
/// outlast both, as an hour and five minutes would in production.
const BUCKET: &str = "20s";
const GRACE: &str = "2s";
/// Longer than a bucket and its grace: at least one bucket boundary and
/// its grace pass while Strata is down.
const OUTAGE: Duration = Duration::from_secs(30);
/// `BUCKET` in milliseconds.
const BUCKET_MS: i64 = 20_000;
/// Where in its bucket the outage starts: early, so that most of the
/// bucket open at the stop is scraped while Strata is down. The backlog
/// of that bucket, sealed by the time it arrives, is the late samples;
/// an outage that started in a bucket's last second could leave none.
const STOP_PHASE_MS: std::ops::Range<i64> = 3_000..6_000;
/// The compared window reaches back over the whole run.
const WINDOW: &str = "3m";
/// How far in the past the compared window ends.
const SETTLE: Duration = Duration::from_secs(6);
/// How long to keep retrying while the backlog is delivered.
const CATCH_UP: Duration = Duration::from_secs(40);

fn strata_env() -> [(&'static str, &'static str); 4] {
    [
        ("STRATA_STORAGE_BUCKET_DURATION", BUCKET),
        ("STRATA_STORAGE_SEAL_GRACE", GRACE),
        ("STRATA_STORAGE_SEAL_CHECK_INTERVAL", "1s"),
        ("STRATA_STORAGE_SEAL_SPREAD", "1s"),
    ]
}

fn snapshot(port: u16, t: i64) -> BTreeMap<&'static str, Matrix> {
    raw_snapshot(port, SELECTORS, WINDOW, t)
}

/// Answers the `/metrics` counter `name` of Strata, which must be there.
fn strata_metric(strata: &StrataProcess, name: &str) -> f64 {
    metrics_sum(strata.port, name).unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

fn newest_up(strata: &StrataProcess) -> Option<i64> {
    newest_sample(strata.port, "up[1m]")
}

#[test]
fn prometheus_backlog_after_an_outage_lands_in_sealed_buckets() {
    let prometheus_bin = common::prometheus3_bin("prometheus");
    let started = Instant::now();
    let data = tempfile::tempdir().expect("temp dir");
    let strata = StrataProcess::start(data.path(), &strata_env());
    let node = NodeExporterProcess::start();
    let prometheus_port = common::free_port();
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus_bin,
        prometheus_port,
        &common::prometheus_config(prometheus_port, node.port, strata.port),
        &[],
    );
    wait_until(Duration::from_secs(20), "Strata has `up` samples", || {
        newest_up(&strata).is_some()
    });
    std::thread::sleep(Duration::from_secs(8));
    while !STOP_PHASE_MS.contains(&now_ms().rem_euclid(BUCKET_MS)) {
        std::thread::sleep(Duration::from_millis(200));
    }

    // The outage: Prometheus keeps scraping into its WAL and retries.
    let port = strata.port;
    let status = strata.stop();
    assert!(status.success(), "strata exited with {status} on SIGTERM");
    let down = now_ms();
    std::thread::sleep(OUTAGE);
    let strata = StrataProcess::start_on(port, data.path(), &strata_env());
    let back = now_ms();

    // Prometheus delivers its backlog, then keeps up again.
    wait_until(
        Duration::from_secs(60),
        "Strata receives samples scraped after its restart",
        || newest_up(&strata).is_some_and(|t| t > back + SETTLE.as_millis() as i64 + 2000),
    );
    let t = now_ms() - SETTLE.as_millis() as i64;
    assert!(t > back, "the window must reach past the restart");
    let matched = wait_same_as_prometheus(
        &snapshot(prometheus.port, t),
        strata.port,
        WINDOW,
        t,
        CATCH_UP,
    );
    let outage_samples: usize = matched["up"]
        .values()
        .flatten()
        .filter(|(ts, _)| (down..back).contains(ts))
        .count();
    assert!(
        outage_samples >= 2 * 20,
        "the backlog holds the outage's `up` samples, 2 targets each second: {outage_samples}"
    );

    // They went into buckets already past their seal.
    let late = strata_metric(&strata, "strata_late_samples_total");
    assert!(
        late > 0.0,
        "no late samples: the outage did not outlast a bucket's seal"
    );
    assert_eq!(strata_metric(&strata, "strata_samples_rejected_total"), 0.0);
    let retried = vector_sum(
        prometheus.port,
        "prometheus_remote_storage_samples_retried_total",
    );
    assert!(
        retried > 0.0,
        "Prometheus retried nothing: the outage was not felt"
    );
    for counter in [
        "prometheus_remote_storage_samples_failed_total",
        "prometheus_remote_storage_samples_dropped_total",
    ] {
        let n = vector_sum(prometheus.port, counter);
        assert_eq!(n, 0.0, "{counter} = {n}; see the Prometheus log");
    }

    // A restart keeps it all: the late samples were made durable.
    let status = strata.stop();
    assert!(status.success(), "strata exited with {status} on SIGTERM");
    let strata = StrataProcess::start_on(port, data.path(), &strata_env());
    let after = snapshot(strata.port, t);
    for sel in SELECTORS {
        if let Some(d) = matrix_diff(&matched[sel], &after[sel]) {
            panic!("{sel}: samples changed across a restart:\n{d}");
        }
    }
    let samples: usize = matched
        .values()
        .flat_map(Matrix::values)
        .map(Vec::len)
        .sum();
    eprintln!(
        "sender_outage: {samples} samples equal to Prometheus' after a {OUTAGE:?} outage \
         ({outage_samples} `up` samples from the outage, {late} late samples, {retried} retried), \
         in {:?}",
        started.elapsed()
    );
}
