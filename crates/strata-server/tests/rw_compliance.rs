//! The prometheus/compliance remote-write receiver suite (built from its Go
//! module by .ci/run) against a Strata server: every test must pass, and
//! the exemplars it sends must read back through `/api/v1/query_exemplars`
//! (the suite only checks the answers, not what was stored).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{http_get, query_string, rw_compliance_bin, StrataProcess};

#[test]
fn the_receiver_compliance_suite_passes() {
    let bin = rw_compliance_bin();
    let dir = tempfile::tempdir().unwrap();
    let strata = StrataProcess::start(dir.path(), &[]);
    let config = dir.path().join("compliance.yml");
    std::fs::write(
        &config,
        format!(
            "remote_write:\n  - name: strata\n    url: http://127.0.0.1:{}/api/v1/write\n",
            strata.port
        ),
    )
    .unwrap();
    let out = Command::new(&bin)
        .args(["-test.v", "-test.count=1", "-test.timeout=5m"])
        .env("PROMETHEUS_RW2_COMPLIANCE_CONFIG_FILE", &config)
        .current_dir(dir.path())
        .output()
        .expect("run the compliance suite");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let failed: Vec<&str> = text.lines().filter(|l| l.contains("--- FAIL")).collect();
    let passed_top = text
        .lines()
        .filter(|l| l.starts_with("--- PASS: Test"))
        .count();
    assert!(
        out.status.success() && failed.is_empty(),
        "compliance suite failed:\n{}\n\nfull output:\n{text}",
        failed.join("\n")
    );
    // The suite's 39 tests as of the pinned version; fewer means it did not
    // run what it should.
    assert!(passed_top >= 39, "only {passed_top} tests passed:\n{text}");
    assert!(
        text.contains("--- PASS: TestExemplars "),
        "the exemplar tests did not run:\n{text}"
    );

    // The suite's native histograms are stored, not refused: some series
    // reads back as a histogram.
    let q = query_string(&[("query", "{__name__=~\".+\"}")]);
    let r = http_get(strata.port, &format!("/api/v1/query?{q}")).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let all = r.json();
    let histograms = all["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["histogram"].is_array())
        .count();
    assert!(histograms > 0, "no native histogram read back: {all}");

    // What the suite's exemplars left: `{__name__="http_requests_total",
    // job="api"}` with trace_id `abc123def456` among them.
    let q = query_string(&[
        ("query", "http_requests_total{job=\"api\"}"),
        ("start", "0"),
        ("end", &format!("{}", common::now_ms() / 1000 + 3600)),
    ]);
    let mut found = serde_json::Value::Null;
    common::wait_until(Duration::from_secs(10), "the exemplars read back", || {
        let r = http_get(strata.port, &format!("/api/v1/query_exemplars?{q}")).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        found = r.json();
        found["data"].as_array().is_some_and(|a| !a.is_empty())
    });
    let series = found["data"].as_array().unwrap();
    let traces: Vec<&str> = series
        .iter()
        .flat_map(|s| s["exemplars"].as_array().unwrap())
        .filter_map(|e| e["labels"]["trace_id"].as_str())
        .collect();
    assert!(traces.contains(&"abc123def456"), "{found}");
    for s in series {
        assert_eq!(s["seriesLabels"]["job"], "api", "{found}");
        for e in s["exemplars"].as_array().unwrap() {
            assert!(e["value"].is_string() && e["timestamp"].is_number(), "{e}");
        }
    }
    drop(strata);
}
