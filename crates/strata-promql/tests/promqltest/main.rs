//! Runs PromQL scripts in Prometheus' promqltest format against a
//! `MemSource`: Strata's own (`tests/testdata/*.test`), and Prometheus
//! 3.16's (`promql/promqltest/testdata/*.test`, read from the Go module
//! cache), whose evaluations Strata does not pass yet are listed with a
//! reason in `tests/prometheus-3.16-skips.txt`.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod at_modifier;
mod check;
mod nhcb;
mod script;
mod series;

use std::collections::{BTreeMap, BTreeSet};
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

/// The Prometheus module whose testdata the suite runs.
const PROMETHEUS_MODULE: &str = "github.com/prometheus/prometheus@v0.316.0";

/// Where Prometheus 3.16's testdata is: `STRATA_PROMETHEUS_TESTDATA`, else
/// the Go module cache (`GOMODCACHE`, `go env GOMODCACHE`, or
/// `$HOME/go/pkg/mod`).
fn prometheus_testdata() -> PathBuf {
    if let Some(dir) = std::env::var_os("STRATA_PROMETHEUS_TESTDATA") {
        return dir.into();
    }
    let cache = std::env::var_os("GOMODCACHE")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let out = std::process::Command::new("go")
                .args(["env", "GOMODCACHE"])
                .output()
                .ok()?;
            let dir = String::from_utf8(out.stdout).ok()?;
            let dir = dir.trim();
            (out.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
        })
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/pkg/mod")))
        .unwrap_or_default();
    cache
        .join(PROMETHEUS_MODULE)
        .join("promql/promqltest/testdata")
}

/// The skip file: `reason: …` lines, each followed by the evaluations
/// (`file.test:line`, then the query for the reader) it explains.
fn read_skips(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).expect("read the skip file");
    let mut skips = BTreeMap::new();
    let mut reason = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(r) = t.strip_prefix("reason:") {
            reason = Some(r.trim().to_string());
            continue;
        }
        let key = t.split_whitespace().next().unwrap_or_default().to_string();
        let reason = reason
            .clone()
            .unwrap_or_else(|| panic!("skip file line {}: an entry before any reason", n + 1));
        assert!(
            skips.insert(key.clone(), reason).is_none(),
            "skip file line {}: {key} listed twice",
            n + 1
        );
    }
    skips
}

#[tokio::test]
async fn prometheus_3_16_testdata() {
    let dir = prometheus_testdata();
    assert!(
        dir.is_dir(),
        "Prometheus 3.16's promqltest files are not at {}. Fetch the module into the Go \
         module cache with `go mod download {PROMETHEUS_MODULE}` (`.ci/run` does), or set \
         STRATA_PROMETHEUS_TESTDATA to a folder holding them.",
        dir.display()
    );
    let paths = scripts_in(&dir);
    assert!(!paths.is_empty(), "no .test files in {}", dir.display());
    let skip_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prometheus-3.16-skips.txt");
    let skips = read_skips(&skip_path);
    let mut total = 0;
    let mut passed = 0;
    let mut skipped: BTreeMap<&str, usize> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    let mut now_pass = Vec::new();
    for p in &paths {
        for o in run_script(p).await {
            total += 1;
            seen.insert(o.key.clone());
            match (o.result, skips.get(&o.key)) {
                (Ok(()), None) => passed += 1,
                (Ok(()), Some(_)) => now_pass.push(format!("{}  {}", o.key, o.query)),
                (Err(_), Some(reason)) => *skipped.entry(reason).or_default() += 1,
                (Err(e), None) => failures.push(format!("{}  {}\n    {e}", o.key, o.query)),
            }
        }
    }
    let stale: Vec<&String> = skips.keys().filter(|k| !seen.contains(*k)).collect();
    println!(
        "Prometheus 3.16 promqltest: {total} evaluations in {} files: {passed} pass, {} skipped",
        paths.len(),
        skipped.values().sum::<usize>()
    );
    for (reason, n) in &skipped {
        println!("  {n:5}  {reason}");
    }
    let mut problems = Vec::new();
    if !failures.is_empty() {
        problems.push(format!(
            "{} evaluations fail and are not in {}:\n{}",
            failures.len(),
            skip_path.display(),
            failures.join("\n")
        ));
    }
    if !now_pass.is_empty() {
        problems.push(format!(
            "{} listed evaluations now pass; remove them from {}:\n{}",
            now_pass.len(),
            skip_path.display(),
            now_pass.join("\n")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "{} entries of {} name no evaluation; remove them:\n{}",
            stale.len(),
            skip_path.display(),
            stale
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
