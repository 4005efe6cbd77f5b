//! Runs PromQL scripts in Prometheus' promqltest format against a
//! `MemSource`: Strata's own (`tests/testdata/*.test`), and any given by
//! `STRATA_PROMQLTEST_EXTRA`.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod check;
mod nhcb;
mod script;
mod series;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_codec::histogram::{CounterResetHint, FloatHistogram};
use strata_promql::float_histogram as fh;
use strata_promql::{Engine, MemSource, QueryLimits};

use script::Command;
use series::Slot;

/// One evaluation's (or unreadable command's) outcome.
struct Outcome {
    /// `file.test:line`.
    key: String,
    query: String,
    result: Result<(), String>,
}

async fn run_script(path: &Path) -> Vec<Outcome> {
    let text = std::fs::read_to_string(path).expect("read script");
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let source = Arc::new(MemSource::new());
    let engine = Engine::new(source.clone(), QueryLimits::default());
    let mut out = Vec::new();
    for (line, cmd) in script::parse(&text) {
        let key = format!("{name}:{line}");
        let outcome = |query: &str, result| Outcome {
            key: key.clone(),
            query: query.to_string(),
            result,
        };
        match cmd {
            Err(e) => out.push(outcome("", Err(e))),
            Ok(Command::Clear) => source.clear(),
            Ok(Command::Load(load)) => {
                if let Err(e) = load_into(&source, &load) {
                    out.push(outcome("", Err(e)));
                }
            }
            Ok(Command::Eval(eval)) => {
                let result = check::run(&engine, &eval).await;
                out.push(outcome(&eval.query, result));
            }
        }
    }
    out
}

fn load_into(source: &MemSource, load: &script::Load) -> Result<(), String> {
    for (labels, values) in &load.series {
        let mut previous: Option<&FloatHistogram> = None;
        for (k, v) in values.iter().enumerate() {
            let t = k as i64 * load.step_ms;
            match v {
                Slot::Value(v) => {
                    source.append(labels, t, *v);
                    previous = None;
                }
                Slot::Hist { h, .. } => {
                    source.append_histogram(labels, t, as_stored(h, previous));
                    previous = Some(h);
                }
                Slot::Missing => {}
            }
        }
    }
    if load.nhcb {
        for (labels, points) in nhcb::convert(&load.series, load.step_ms)? {
            let mut previous: Option<FloatHistogram> = None;
            for (t, h) in points {
                source.append_histogram(&labels, t, as_stored(&h, previous.as_ref()));
                previous = Some(h);
            }
        }
    }
    Ok(())
}

/// A histogram as Prometheus' TSDB gives it back: one that follows
/// another counter histogram in its chunk is read as `not_reset`. A reset
/// starts a new chunk, whose first histogram reads as `unknown` (see
/// prometheus/prometheus#15346), as does a series' first.
fn as_stored(h: &FloatHistogram, previous: Option<&FloatHistogram>) -> FloatHistogram {
    let mut h = h.clone();
    let gauge = |x: &FloatHistogram| x.counter_reset_hint == CounterResetHint::Gauge;
    if let Some(p) = previous {
        if h.counter_reset_hint == CounterResetHint::Unknown
            && !gauge(p)
            && !h.sum.is_nan()
            && !fh::detect_reset(&h, p)
        {
            h.counter_reset_hint = CounterResetHint::NotReset;
        }
    }
    h
}

fn scripts_in(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    paths.sort();
    paths
}

#[tokio::test]
async fn promql_scripts() {
    let mut paths = scripts_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata"));
    assert!(!paths.is_empty(), "no scripts found");
    // More scripts to run, from outside the repository, separated by `:`.
    if let Ok(extra) = std::env::var("STRATA_PROMQLTEST_EXTRA") {
        paths.extend(extra.split(':').filter(|p| !p.is_empty()).map(Into::into));
    }
    let mut total = 0;
    let mut failures = Vec::new();
    for p in &paths {
        for o in run_script(p).await {
            total += 1;
            if let Err(e) = o.result {
                failures.push(format!("{}: {}: {e}", o.key, o.query));
            }
        }
    }
    println!("{total} evaluations in {} scripts", paths.len());
    assert!(
        failures.is_empty(),
        "{} of {total} evaluations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
