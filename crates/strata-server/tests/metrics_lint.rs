//! `/metrics` of a writer, a reader and a distributor passes Prometheus 3's
//! `promtool check metrics` whole: every family has help text and the
//! conventional name (counters in `_total`, base units), SlateDB's
//! included; and the process and build families are there.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::process::{Command, Stdio};

use common::promql_compare::{remote_write, WriteSeries};
use common::{
    http_get, metrics_sum, now_ms, page_values, prometheus3_bin, query_vector, StrataProcess,
};
use strata_storage::slatedb_metrics::FAMILIES;

/// `promtool check metrics` on `port`'s page: whether it passed, and its
/// problems, one a line.
fn promtool_check(promtool: &std::path::Path, port: u16) -> (bool, String) {
    let page = http_get(port, "/metrics").unwrap();
    assert_eq!(page.status, 200, "{}", page.text());
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &page.body).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let problems =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), problems)
}

/// The families on `port`'s page, from their `# TYPE` lines.
fn families(port: u16) -> Vec<String> {
    http_get(port, "/metrics")
        .unwrap()
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// Where a page has the head's memory, its total is the sum of its parts
/// on that page: one count, not two walks that disagree under ingest.
fn head_memory_adds_up(port: u16, role: &str) {
    let page = http_get(port, "/metrics").unwrap().text();
    let total = page_values(&page, "strata_head_memory_bytes")
        .first()
        .copied();
    let parts = page_values(&page, "strata_head_memory_part_bytes");
    if let Some(total) = total {
        assert_eq!(parts.len(), 5, "{role}: {parts:?}");
        assert!(total > 0.0 || role != "writer", "{role}");
        assert_eq!(total, parts.iter().sum::<f64>(), "{role}: {parts:?}");
    }
}

fn check(promtool: &std::path::Path, port: u16, role: &str) {
    let (passed, problems) = promtool_check(promtool, port);
    assert!(
        passed && problems.trim().is_empty(),
        "{role}: promtool says:\n{problems}"
    );
    assert!(
        metrics_sum(port, "process_resident_memory_bytes").unwrap_or(0.0) > 0.0,
        "{role}"
    );
    assert!(
        metrics_sum(port, "process_cpu_seconds_total").is_some(),
        "{role}"
    );
    assert!(
        metrics_sum(port, "process_open_fds").unwrap_or(0.0) > 0.0,
        "{role}"
    );
    assert_eq!(metrics_sum(port, "strata_build_info"), Some(1.0), "{role}");
    head_memory_adds_up(port, role);
    for family in families(port).iter().filter(|f| f.starts_with("slatedb_")) {
        assert!(
            FAMILIES.iter().any(|f| f.name == family),
            "{role}: {family} is not in the table of SlateDB's metrics"
        );
    }
}

#[test]
fn metrics_pass_promtool_on_every_role() {
    let promtool = prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let writer = StrataProcess::start(
        &data,
        &[
            ("STRATA_SERVER_ROLE", "writer"),
            ("STRATA_STORAGE_FLUSH_INTERVAL", "50ms"),
        ],
    );
    let t = now_ms();
    remote_write(
        writer.port,
        &[WriteSeries {
            labels: vec![
                ("__name__".into(), "lint_total".into()),
                ("job".into(), "lint".into()),
            ],
            samples: vec![(t - 1_000, 1.0), (t, 2.0)],
        }],
    );
    assert_eq!(query_vector(writer.port, "lint_total").len(), 1);
    let slatedb = families(writer.port)
        .iter()
        .filter(|f| f.starts_with("slatedb_"))
        .count();
    assert!(slatedb >= 40, "{slatedb} SlateDB families");
    check(&promtool, writer.port, "writer");

    let reader = StrataProcess::start(
        &data,
        &[
            ("STRATA_SERVER_ROLE", "reader"),
            ("STRATA_READER_POLL_INTERVAL", "100ms"),
        ],
    );
    query_vector(reader.port, "lint_total");
    check(&promtool, reader.port, "reader");

    let distributor = StrataProcess::start(
        &data,
        &[
            ("STRATA_SERVER_ROLE", "distributor"),
            (
                "STRATA_SHARDS_WRITERS",
                &format!("http://127.0.0.1:{}", writer.port),
            ),
        ],
    );
    check(&promtool, distributor.port, "distributor");
    distributor.stop();
    reader.stop();
    writer.stop();
}
