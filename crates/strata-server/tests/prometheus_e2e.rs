//! The real Prometheus scrapes itself and node_exporter every second and
//! remote-writes to Strata. Strata must then hold exactly the raw samples
//! Prometheus holds, across a graceful restart, and catch up on what
//! Prometheus retried while it was down; and `/api/v1/metadata` must answer
//! what Prometheus' own does, from the metadata it sent.
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
    http_get, matrix_diff, newest_sample, now_ms, raw_snapshot, vector_sum,
    wait_same_as_prometheus, wait_until, Matrix, NodeExporterProcess, PrometheusProcess,
    StrataProcess,
};

/// Series compared: Prometheus' own gauges and counters, a classic
/// histogram, scrape meta-series, and node_exporter counters and gauges.
const SELECTORS: &[&str] = &[
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "prometheus_tsdb_head_series",
    "prometheus_http_requests_total",
    "prometheus_http_request_duration_seconds_bucket",
    "node_cpu_seconds_total",
    "node_network_receive_bytes_total",
    "node_memory_MemAvailable_bytes",
    "node_load1",
    "node_time_seconds",
];

/// Every sample of the run fits in the window, so whole histories compare.
const WINDOW: &str = "5m";
/// How far in the past the compared window ends, so that everything
/// Prometheus holds up to then has been remote-written.
const SETTLE: Duration = Duration::from_secs(8);
/// How long Strata stays down between stop and restart.
const DOWNTIME: Duration = Duration::from_secs(2);
/// How much data after the restart the second window holds.
const AFTER_RESTART: Duration = Duration::from_secs(4);
/// How long to keep retrying a comparison while remote write catches up.
const CATCH_UP: Duration = Duration::from_secs(15);

/// The raw samples of every selector in the window ending at `t`.
fn snapshot(port: u16, t: i64) -> BTreeMap<&'static str, Matrix> {
    raw_snapshot(port, SELECTORS, WINDOW, t)
}

/// Asserts Strata holds exactly Prometheus' samples in the window ending
/// at `t`, retrying while remote write may still be delivering them.
/// Answers Strata's snapshot.
fn assert_same_as_prometheus(
    prometheus: &PrometheusProcess,
    strata: &StrataProcess,
    t: i64,
) -> BTreeMap<&'static str, Matrix> {
    let expected = snapshot(prometheus.port, t);
    for (sel, m) in &expected {
        assert!(
            !m.is_empty(),
            "Prometheus has no {sel} series in the window"
        );
    }
    wait_same_as_prometheus(&expected, strata.port, WINDOW, t, CATCH_UP)
}

/// The newest `up` timestamp Strata holds, in milliseconds.
fn newest_up(strata: &StrataProcess) -> Option<i64> {
    newest_sample(strata.port, &format!("up[{WINDOW}]"))
}

/// `/api/v1/metadata` as metric → sorted `(type, help, unit)` entries.
fn metadata(port: u16) -> BTreeMap<String, Vec<(String, String, String)>> {
    let answer = http_get(port, "/api/v1/metadata").expect("metadata").json();
    let data = answer["data"].as_object().expect("data").clone();
    data.into_iter()
        .map(|(metric, entries)| {
            let mut list: Vec<_> = entries
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| {
                    let f = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                    (f("type"), f("help"), f("unit"))
                })
                .collect();
            list.sort();
            (metric, list)
        })
        .collect()
}

#[test]
fn prometheus_remote_write_round_trip() {
    common::require_binary(common::PROMETHEUS_BIN, "prometheus");
    common::require_binary(common::NODE_EXPORTER_BIN, "prometheus-node-exporter");
    let started = Instant::now();
    let data = tempfile::tempdir().expect("temp dir");
    let strata = StrataProcess::start(data.path(), &[]);
    let node = NodeExporterProcess::start();
    let prometheus_port = common::free_port();
    let prometheus = PrometheusProcess::start_on(
        prometheus_port,
        &common::prometheus_config(prometheus_port, node.port, strata.port),
        &[],
    );

    wait_until(Duration::from_secs(20), "Strata has `up` samples", || {
        newest_up(&strata).is_some()
    });
    // Let about fifteen scrapes flow, then compare a window that ended a
    // few seconds ago.
    let first_data = Instant::now();
    std::thread::sleep(Duration::from_secs(15).saturating_sub(first_data.elapsed()));
    let t = now_ms() - SETTLE.as_millis() as i64;
    let before_restart = assert_same_as_prometheus(&prometheus, &strata, t);
    let up_samples: usize = before_restart["up"].values().map(Vec::len).sum();
    assert!(
        up_samples >= 2 * 5,
        "expected at least 5 `up` samples per target before {t} ms, got {up_samples}: {:?}",
        before_restart["up"]
    );

    // A graceful restart keeps every sample written before it.
    let port = strata.port;
    let status = strata.stop();
    assert!(status.success(), "strata exited with {status} on SIGTERM");
    // Stay down long enough for Prometheus to fail sends and retry them.
    std::thread::sleep(DOWNTIME);
    let strata = StrataProcess::start_on(port, data.path(), &[]);
    let after_restart = snapshot(strata.port, t);
    for sel in SELECTORS {
        if let Some(d) = matrix_diff(&before_restart[sel], &after_restart[sel]) {
            panic!("{sel}: samples before {t} ms changed across a restart:\n{d}");
        }
    }

    // Prometheus retried what Strata missed while it was down; a window
    // ending after the restart must again match exactly.
    let restarted = now_ms();
    wait_until(
        Duration::from_secs(20),
        "Strata receives samples again after its restart",
        || {
            newest_up(&strata)
                .is_some_and(|ts| ts > restarted + (SETTLE + AFTER_RESTART).as_millis() as i64)
        },
    );
    let t2 = now_ms() - SETTLE.as_millis() as i64;
    assert!(
        t2 >= restarted + AFTER_RESTART.as_millis() as i64,
        "the second window must reach past the restart"
    );
    let final_snapshot = assert_same_as_prometheus(&prometheus, &strata, t2);
    let retried = vector_sum(
        prometheus.port,
        "prometheus_remote_storage_samples_retried_total",
    );
    assert!(
        retried > 0.0,
        "Prometheus retried no samples: the restart did not exercise catching up"
    );

    // The metadata Prometheus sent (every second) is what its own API
    // answers, across Strata's restart.
    wait_until(
        Duration::from_secs(20),
        "Strata's metadata equals Prometheus'",
        || metadata(prometheus.port) == metadata(strata.port),
    );
    let described = metadata(strata.port);
    assert!(
        described.len() >= 50 && described.contains_key("node_cpu_seconds_total"),
        "{} metrics described: {:?}",
        described.len(),
        described.keys().take(20).collect::<Vec<_>>()
    );

    for counter in [
        "prometheus_remote_storage_samples_failed_total",
        "prometheus_remote_storage_metadata_failed_total",
    ] {
        let failed = vector_sum(prometheus.port, counter);
        assert_eq!(
            failed, 0.0,
            "{counter} = {failed}: Strata rejected remote writes; see the Prometheus log"
        );
    }
    for (sel, m) in &final_snapshot {
        let n: usize = m.values().map(Vec::len).sum();
        eprintln!("prometheus_e2e: {sel}: {} series, {n} samples", m.len());
    }
    let series: usize = final_snapshot.values().map(Matrix::len).sum();
    let samples: usize = final_snapshot
        .values()
        .flat_map(Matrix::values)
        .map(Vec::len)
        .sum();
    eprintln!(
        "prometheus_e2e: {series} series, {samples} samples matched Prometheus across a restart in {:?}",
        started.elapsed()
    );
}
