//! Differential test of the PromQL engine: the same deterministic series are
//! remote-written to Strata and to the real Prometheus, then a few hundred
//! queries (instant at several times, range at several steps) run on both
//! and must agree value by value (relative tolerance 1e-9).
//!
//! Queries whose answers differ for a documented reason (see "Known
//! differences from Prometheus" in docs/promql.md) are listed in
//! [`KNOWN_DIFFERENT`]; they must still differ, so the list stays honest.
//! Any other difference fails the test.
//!
//! With `PROMQL_DIFF_HOLD=<seconds>` the test keeps both servers up that
//! long after writing (ports on stderr, run with `--nocapture`), to explore
//! a difference by hand.
//!
//! The test is here; beside it: the series written (`data`), the
//! expressions compared (`expressions`), the API calls made of them
//! (`calls`), and the queries known to differ (`known`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod calls;
#[path = "../common/mod.rs"]
mod common;
mod data;
mod expressions;
mod known;

use std::time::Instant;

use calls::calls;
use common::promql_compare::{answer_diff, query_answer, remote_write};
use common::{now_ms, PrometheusProcess, StrataProcess};
use data::{generate, SPAN_MS};
use expressions::expressions;
use known::KNOWN_DIFFERENT;

#[test]
fn promql_matches_prometheus() {
    common::require_binary(common::PROMETHEUS_BIN, "prometheus");
    let started = Instant::now();
    // End on a whole hour at least five minutes ago, so that every query
    // time, even past the end of the data, is in the past, and every step
    // grid (subquery steps divide an hour) falls at the same place relative
    // to the data on every run: the answers do not depend on the clock.
    let end = ((now_ms() - 5 * 60_000) / 3_600_000) * 3_600_000;
    let start = end - SPAN_MS;
    let data = generate(start, end);
    let samples: usize = data.iter().map(|s| s.samples.len()).sum();

    let dir = tempfile::tempdir().expect("temp dir");
    let strata = StrataProcess::start(dir.path(), &[]);
    let prometheus = PrometheusProcess::start(
        "global:\n  scrape_interval: 1h\n",
        &["--web.enable-remote-write-receiver"],
    );
    // One request: a fresh Prometheus head accepts any time range in its
    // first append, and Strata has no bucket sealed yet.
    remote_write(strata.port, &data);
    remote_write(prometheus.port, &data);

    if let Ok(secs) = std::env::var("PROMQL_DIFF_HOLD") {
        eprintln!(
            "strata :{}, prometheus :{}, data {start}..{end}",
            strata.port, prometheus.port
        );
        std::thread::sleep(std::time::Duration::from_secs(secs.parse().unwrap_or(600)));
    }
    let calls = calls(start, end);
    let mut unexpected = Vec::new();
    let mut known_seen = std::collections::BTreeSet::new();
    let mut compared = 0usize;
    for call in &calls {
        let want = query_answer(prometheus.port, &call.path);
        let got = query_answer(strata.port, &call.path);
        compared += 1;
        let Some(diff) = answer_diff(&want, &got, call.ordered) else {
            continue;
        };
        if KNOWN_DIFFERENT.iter().any(|(q, _)| *q == call.expr) {
            known_seen.insert(call.expr.as_str());
            continue;
        }
        unexpected.push(format!(
            "{} ({}):\n  {}",
            call.expr,
            call.what,
            diff.replace('\n', "\n  ")
        ));
    }
    let stale: Vec<&str> = KNOWN_DIFFERENT
        .iter()
        .map(|(q, _)| *q)
        .filter(|q| !known_seen.contains(q))
        .collect();
    eprintln!(
        "promql_differential: {} series, {samples} samples; {compared} calls ({} expressions) \
         compared in {:?}; {} known differences seen, {} unexpected",
        data.len(),
        expressions().len(),
        started.elapsed(),
        known_seen.len(),
        unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} answers differ from Prometheus:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed as known differences but now agree with Prometheus (remove them from \
         KNOWN_DIFFERENT and docs/promql.md): {stale:?}"
    );
}
