//! Migration of a Prometheus 3 TSDB: an OpenMetrics history built into a
//! TSDB with promtool, moved into Strata with the recipe of
//! docs/operations.md, and compared series by series with Prometheus 3
//! serving the same TSDB.

use std::process::Command;
use std::time::Instant;

use crate::common::{
    self, http_request, matrix_diff, query_matrix, Matrix, PrometheusProcess, StrataProcess,
};
use crate::send::{om_time, run};

/// A value of series `s` at step `k`: counters climb, gauges wander, one
/// series cycles through the special values.
fn value(kind: usize, s: usize, k: usize) -> String {
    let x = ((s * 7919 + k * 104_729) % 100_003) as f64;
    match kind {
        0 => format!("{}", (k * (s + 1)) as f64 * 1.5),
        1 => format!("{:?}", (x - 50_000.0) / 977.0),
        2 => format!("{:e}", x * 1e-9),
        _ => [
            "NaN",
            "+Inf",
            "-Inf",
            "0",
            "-0",
            "1.7976931348623157e+308",
            "5e-324",
        ][k % 7]
            .to_string(),
    }
}

/// An OpenMetrics file as Prometheus' backfill takes it: every series
/// sampled every `step_ms` in `[from, to]` with scrape-like jitter, label
/// values that need escaping and characters promtool's dump quotes in Go
/// syntax (a tab, a no-break space). Answers the text, series and samples.
pub(crate) fn openmetrics(from: i64, to: i64, step_ms: i64) -> (String, usize, usize) {
    let mut series: Vec<(usize, String)> = Vec::new();
    for i in 0..6 {
        for method in ["GET", "POST"] {
            series.push((
                0,
                format!("mig_requests_total{{instance=\"host-{i}:9100\",job=\"api\",method=\"{method}\"}}"),
            ));
        }
        series.push((
            1,
            format!(
                "mig_temperature_celsius{{instance=\"host-{i}:9100\",job=\"node\",room=\"r{i}\"}}"
            ),
        ));
        for le in ["0.005", "0.1", "1", "+Inf"] {
            series.push((
                0,
                format!("mig_latency_seconds_bucket{{instance=\"host-{i}:9100\",job=\"api\",le=\"{le}\"}}"),
            ));
        }
        series.push((2, format!("mig_tiny_ratio{{instance=\"host-{i}:9100\"}}")));
    }
    series.push((
        3,
        "mig_special{note=\"quote \\\" backslash \\\\ newline \\n tab\there é\u{a0}nbsp\"}"
            .to_string(),
    ));
    series.push((1, "mig_no_labels".to_string()));
    let mut text = String::new();
    let mut samples = 0;
    for (s, (kind, name)) in series.iter().enumerate() {
        let mut k = 0;
        loop {
            let t = from + k as i64 * step_ms + ((k * 37 + s * 11) % 700) as i64;
            if t > to {
                break;
            }
            text.push_str(&format!("{name} {} {}\n", value(*kind, s, k), om_time(t)));
            samples += 1;
            k += 1;
        }
    }
    text.push_str("# EOF\n");
    (text, series.len(), samples)
}

/// Builds a Prometheus 3 TSDB holding `[from, to]`, moves it into a
/// Strata (started with `strata_env`, then given `in_service`) with the
/// documented recipe, and asserts that every series reads back equal from
/// Strata and from Prometheus 3 serving the TSDB.
pub(crate) fn migrate_and_compare(
    from: i64,
    to: i64,
    strata_env: &[(&str, &str)],
    in_service: impl FnOnce(&StrataProcess),
) {
    let promtool = common::prometheus3_bin("promtool");
    let prometheus = common::prometheus3_bin("prometheus");
    let work = tempfile::tempdir().unwrap();
    let (om, series, samples) = openmetrics(from, to, 15_000);
    let om_file = work.path().join("history.om");
    std::fs::write(&om_file, om).unwrap();
    let tsdb = work.path().join("tsdb");
    run(Command::new(&promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om_file)
        .arg(&tsdb));

    // Prometheus 3 serves the TSDB: the reference, and the running server
    // whose snapshot is moved, as docs/operations.md does it.
    let reference = PrometheusProcess::start_binary_on_tsdb(
        &prometheus,
        "global: {}\n",
        &tsdb,
        &["--web.enable-admin-api"],
    );
    let snap = http_request(
        reference.port,
        "POST",
        "/api/v1/admin/tsdb/snapshot",
        &[],
        b"",
    )
    .unwrap()
    .json();
    let name = snap["data"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("snapshot answer: {snap}"));
    let snapshot = tsdb.join("snapshots").join(name);

    let strata_dir = tempfile::tempdir().unwrap();
    let strata = StrataProcess::start(strata_dir.path(), strata_env);
    in_service(&strata);
    // The recipe of docs/operations.md, word for word but for the paths.
    let recipe = format!(
        "set -o pipefail; mkdir -p \"$SNAPSHOT/wal\"; \
         \"$PROMTOOL\" tsdb dump-openmetrics \"$SNAPSHOT\" \
         | curl -sS --fail-with-body -w '%{{http_code}}' -X POST -T - \
           -H 'Content-Type: application/openmetrics-text' \
           http://127.0.0.1:{}/api/v1/import/prometheus",
        strata.port
    );
    let started = Instant::now();
    let answer = run(Command::new("bash")
        .args(["-c", &recipe])
        .env("PROMTOOL", &promtool)
        .env("SNAPSHOT", &snapshot));
    eprintln!(
        "imported {samples} samples of {series} series in {:?}",
        started.elapsed()
    );
    assert_eq!(answer.trim(), "204", "import answered: {answer}");

    let range = format!("{}s", (to - from) / 1000 + 60);
    let query = format!("{{__name__=~\"mig_.+\"}}[{range}]");
    let want: Matrix = query_matrix(reference.port, &query, to);
    let got: Matrix = query_matrix(strata.port, &query, to);
    assert_eq!(want.len(), series, "series in the TSDB");
    assert_eq!(
        want.values().map(Vec::len).sum::<usize>(),
        samples,
        "samples in the TSDB"
    );
    if let Some(diff) = matrix_diff(&want, &got) {
        panic!("Strata differs from the Prometheus 3 TSDB:\n{diff}");
    }
}

/// The value of an unlabelled counter on a `/metrics` page.
pub(crate) fn metric(port: u16, name: &str) -> f64 {
    let page = http_request(port, "GET", "/metrics", &[], b"")
        .unwrap()
        .text();
    page.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
