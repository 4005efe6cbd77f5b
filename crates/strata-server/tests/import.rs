//! `POST /api/v1/import/prometheus`: the answers at the HTTP level (bad
//! lines, rejections, limits, tenants, credentials, encodings), and the
//! migrations of docs/operations.md with real components: a Prometheus 3
//! TSDB moved with `promtool tsdb dump-openmetrics | curl`, read back
//! series by series against Prometheus 3 serving the same TSDB; and
//! VictoriaMetrics' `/api/v1/export?format=prometheus` piped in, read back
//! against its own JSON export.
//!
//! The migration tests need Prometheus 3's `prometheus` and `promtool`:
//! they look in `$STRATA_PROMETHEUS3_BIN_DIR`, else in
//! `~/.cache/strata-test-bin/prometheus-3.16.0`, where `.ci/run` builds
//! them, and fail (never skip) without them.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::io::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use common::inproc::{now_ms, raw, raw_as, Server};
use common::{
    http_request, matrix_diff, query_matrix, wait_until, Labels, Matrix, PrometheusProcess,
    StrataProcess, VictoriaMetricsProcess,
};

const PATH: &str = "/api/v1/import/prometheus";

async fn import(
    url: &str,
    query: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{PATH}{query}"))
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

fn expect(name: &str, got: &(u16, String), want: u16, needles: &[&str]) {
    assert_eq!(got.0, want, "{name}: {}", got.1);
    for n in needles {
        assert!(got.1.contains(n), "{name}: answer {:?} lacks {n:?}", got.1);
    }
}

/// Seconds with three decimals, as OpenMetrics and promtool write them.
fn om_time(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

fn values(series: &[(serde_json::Value, Vec<(f64, String)>)]) -> Vec<Vec<String>> {
    series
        .iter()
        .map(|(_, s)| s.iter().map(|(_, v)| v.clone()).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_and_openmetrics_lines_read_back() {
    let srv = Server::start(&[]).await;
    let t = now_ms() - 60_000;
    let body = format!(
        "# HELP imp_requests_total Requests.\n\
         # TYPE imp_requests_total counter\n\
         imp_requests_total{{code=\"200\",path=\"/a\\\"b\\\\c\\nd\"}} 10 {t0}\n\
         imp_requests_total{{code=\"200\",path=\"/a\\\"b\\\\c\\nd\"}} 12 {t1}\n\
         \n\
         # TYPE imp_odd gauge\n\
         imp_odd{{kind=\"nan\"}} NaN {s0}\n\
         imp_odd{{kind=\"inf\"}} +Inf {s0}\n\
         imp_odd{{kind=\"ninf\"}} -Inf {s0}\n\
         {{\"imp.utf8\", \"k8s.pod\"=\"p-1\"}} 1.5e-7 {s1} # {{trace_id=\"x\"}} 1\n\
         imp_untimed 7\n\
         # EOF\n",
        t0 = t,
        t1 = t + 15_000,
        s0 = om_time(t + 1),
        s1 = om_time(t + 2),
    );
    // Lines without a timestamp take `timestamp`; extra_label lands on
    // every series.
    let query = format!("?timestamp={}&extra_label=source=test", t + 3);
    let got = import(&srv.url, &query, body, &[]).await;
    expect("import", &got, 204, &[]);

    let counter = raw(&srv.url, "imp_requests_total").await;
    assert_eq!(counter.len(), 1, "{counter:?}");
    assert_eq!(counter[0].0["path"], "/a\"b\\c\nd");
    assert_eq!(counter[0].0["source"], "test");
    assert_eq!(
        counter[0].1,
        vec![
            (t as f64 / 1000.0, "10".to_string()),
            ((t + 15_000) as f64 / 1000.0, "12".to_string())
        ]
    );
    let odd = raw(&srv.url, "imp_odd").await;
    let by_kind: Vec<(String, String)> = odd
        .iter()
        .map(|(m, s)| (m["kind"].as_str().unwrap().to_string(), s[0].1.clone()))
        .collect();
    assert_eq!(
        by_kind,
        vec![
            ("inf".to_string(), "+Inf".to_string()),
            ("nan".to_string(), "NaN".to_string()),
            ("ninf".to_string(), "-Inf".to_string())
        ]
    );
    assert_eq!(odd[0].1[0].0, (t + 1) as f64 / 1000.0);
    let utf8 = raw(&srv.url, "{__name__=\"imp.utf8\"}").await;
    assert_eq!(utf8.len(), 1);
    assert_eq!(utf8[0].0["k8s.pod"], "p-1");
    assert_eq!(
        utf8[0].1,
        vec![((t + 2) as f64 / 1000.0, "1.5e-07".to_string())]
    );
    let untimed = raw(&srv.url, "imp_untimed").await;
    assert_eq!(
        untimed[0].1,
        vec![((t + 3) as f64 / 1000.0, "7".to_string())]
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_answer_400_by_number_and_the_rest_is_written() {
    let srv = Server::start(&[]).await;
    let t = now_ms() - 60_000;
    let body = format!(
        "imp_good 1 {t}\n\
         imp_bad{{a=\"1\" 2 {t}\n\
         imp_good 2 {}\n\
         imp_good three {}\n\
         imp_good 4 {}\n",
        t + 1000,
        t + 2000,
        t + 3000
    );
    let got = import(&srv.url, "", body, &[]).await;
    expect(
        "bad lines",
        &got,
        400,
        &[
            "5 lines read, 2 not parsed; 3 of 3 samples written, 0 rejected",
            "line 2: missing closing brace",
            "line 4: cannot parse value \"three\"",
        ],
    );
    assert!(srv.healthy().await);
    assert_eq!(
        values(&raw(&srv.url, "imp_good").await),
        vec![vec!["1", "2", "4"]]
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_samples_are_answered_like_remote_write() {
    let srv = Server::start(&[("STRATA_LIMITS_MAX_LABELS_PER_SERIES", "3")]).await;
    let t = now_ms() - 60_000;
    let future = now_ms() + 3_600_000;
    let body = format!(
        "imp_ok{{a=\"1\"}} 1 {t}\n\
         imp_ok{{a=\"1\"}} 2 {future}\n\
         imp_wide{{a=\"1\",b=\"2\",c=\"3\"}} 1 {t}\n\
         imp_tenant{{__tenant__=\"x\"}} 1 {t}\n"
    );
    let got = import(&srv.url, "", body, &[]).await;
    expect(
        "rejections",
        &got,
        400,
        &[
            "1 of 4 samples written, 3 rejected",
            "4 labels, more than limits.max_labels_per_series (3)",
            "label name __tenant__ is reserved",
            "sample too far in the future",
        ],
    );
    assert_eq!(values(&raw(&srv.url, "imp_ok").await), vec![vec!["1"]]);
    assert!(raw(&srv.url, "imp_wide").await.is_empty());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_and_request_checks() {
    let srv = Server::start(&[]).await;
    let t = now_ms() - 60_000;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for i in 0..100 {
        writeln!(gz, "imp_gz{{i=\"{}\"}} {i} {}", i % 3, t + i).unwrap();
    }
    let compressed = gz.finish().unwrap();
    let got = import(
        &srv.url,
        "",
        compressed.clone(),
        &[("Content-Encoding", "gzip")],
    )
    .await;
    expect("gzip", &got, 204, &[]);
    let series = raw(&srv.url, "imp_gz").await;
    assert_eq!(series.iter().map(|s| s.1.len()).sum::<usize>(), 100);

    // Compressed bytes sent as plain text: not one line parses.
    let got = import(&srv.url, "", compressed, &[]).await;
    assert_eq!(got.0, 400, "{}", got.1);
    let got = import(&srv.url, "", "x 1\n", &[("Content-Encoding", "snappy")]).await;
    expect(
        "encoding",
        &got,
        415,
        &["unsupported Content-Encoding \"snappy\""],
    );
    let got = import(&srv.url, "?timestamp=yesterday", "x 1\n", &[]).await;
    expect("timestamp", &got, 400, &["Unix milliseconds"]);
    let got = import(&srv.url, "?extra_label=nope", "x 1\n", &[]).await;
    expect("extra_label", &got, 400, &["not name=value"]);
    let got = import(&srv.url, "", "x 1\n", &[("X-Strata-Durability", "maybe")]).await;
    expect("durability", &got, 400, &["X-Strata-Durability"]);
    let got = import(
        &srv.url,
        "",
        format!("imp_durable 1 {t}\n"),
        &[("X-Strata-Durability", "durable")],
    )
    .await;
    expect("durable", &got, 204, &[]);
    // A gzip stream cut short stops the import where it broke.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for i in 0..1000 {
        writeln!(gz, "imp_cut {i} {}", t + i).unwrap();
    }
    let mut cut = gz.finish().unwrap();
    cut.truncate(cut.len() / 2);
    let got = import(&srv.url, "", cut, &[("Content-Encoding", "gzip")]).await;
    expect(
        "cut gzip",
        &got,
        400,
        &["import stopped: cannot read the body after line"],
    );
    assert!(srv.healthy().await);
    srv.stop().await;
}

/// When storage cannot take writes the import stops with remote write's
/// 503 and `Retry-After`, saying how far it got; what was written stays,
/// and once the store heals imports answer 204 again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_failure_stops_the_import_with_503() {
    use strata_storage::{Fault, Faults, Op, When};
    let faults = Faults::new();
    let layer = faults.clone();
    let srv = Server::start_layered(
        tempfile::tempdir().unwrap(),
        &[("STRATA_STORAGE_WRITE_TIMEOUT", "1s")],
        std::sync::Arc::new(move |store| layer.wrap(store)),
    )
    .await;
    let t = now_ms() - 60_000;
    let lines = |name: &str, from: i64| -> String {
        (0..100)
            .map(|i| format!("{name}{{i=\"{}\"}} {i} {}\n", i % 5, from + i))
            .collect()
    };
    let durable = [("X-Strata-Durability", "durable")];
    expect(
        "before",
        &import(&srv.url, "", lines("imp_before", t), &durable).await,
        204,
        &[],
    );
    faults.set_all(&Op::WRITES, Fault::Status(503), When::Always);
    let r = reqwest::Client::new()
        .post(format!("{}{PATH}", srv.url))
        .header("X-Strata-Durability", "durable")
        .body(lines("imp_during", t + 1000))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let msg = r.text().await.unwrap();
    assert!(
        msg.starts_with("import stopped after line 100: ")
            && msg.contains("100 lines read, 0 not parsed; 0 of 100 samples written"),
        "{msg}"
    );
    faults.heal();
    assert!(srv.healthy().await);
    // Once healed, an import succeeds again without a restart; SlateDB's
    // retry of the failed flush may take a moment, which a sender covers
    // by retrying after Retry-After, as here (an import is idempotent).
    let started = std::time::Instant::now();
    let after = loop {
        let r = import(&srv.url, "", lines("imp_after", t + 2000), &durable).await;
        if r.0 != 503 || started.elapsed() > std::time::Duration::from_secs(30) {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    expect("after", &after, 204, &[]);
    let before = raw(&srv.url, "imp_before").await;
    assert_eq!(before.iter().map(|s| s.1.len()).sum::<usize>(), 100);
    srv.stop().await;
}

/// A body far over the remote-write body limit streams in, in batches the
/// per-request limits allow, and every sample arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_remote_write_limits_stream_in_batches() {
    let srv = Server::start(&[
        ("STRATA_LIMITS_MAX_BODY_BYTES", "65536"),
        ("STRATA_LIMITS_MAX_SAMPLES_PER_REQUEST", "5000"),
        ("STRATA_LIMITS_MAX_SERIES_PER_REQUEST", "300"),
    ])
    .await;
    let series = 500;
    let per_series = 200;
    let t0 = now_ms() - 30 * 60_000;
    let mut body = String::new();
    // Series-major, as a dump is; then a scrape-like interleaved part.
    for s in 0..series {
        for k in 0..per_series / 2 {
            body.push_str(&format!(
                "imp_big{{series=\"{s}\"}} {k} {}\n",
                om_time(t0 + k * 1000)
            ));
        }
    }
    for k in per_series / 2..per_series {
        for s in 0..series {
            body.push_str(&format!(
                "imp_big{{series=\"{s}\"}} {k} {}\n",
                t0 + k * 1000
            ));
        }
    }
    assert!(body.len() > 50 * 65536, "{} bytes", body.len());
    let got = import(&srv.url, "", body, &[]).await;
    expect("big", &got, 204, &[]);
    let read = raw(&srv.url, "imp_big").await;
    assert_eq!(read.len(), series as usize);
    for (labels, samples) in &read {
        let want: Vec<String> = (0..per_series).map(|k| k.to_string()).collect();
        let got: Vec<String> = samples.iter().map(|s| s.1.clone()).collect();
        assert_eq!(got, want, "{labels}");
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_tenants_and_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, "import-token\n").unwrap();
    let srv = Server::start_in(
        dir,
        &[
            ("STRATA_AUTH_TOKEN_FILE", token_file.to_str().unwrap()),
            ("STRATA_TENANTS_REQUIRED", "true"),
            ("STRATA_LIMITS_INGEST_RATE_LIMIT", "4000"),
        ],
    )
    .await;
    let t = now_ms() - 60_000;
    let line = format!("imp_t 1 {t}\n");
    let auth = ("Authorization", "Bearer import-token");
    expect(
        "no token",
        &import(&srv.url, "", line.clone(), &[]).await,
        401,
        &["authentication required"],
    );
    expect(
        "no tenant",
        &import(&srv.url, "", line.clone(), &[auth]).await,
        401,
        &["X-Scope-OrgID"],
    );
    // 12 000 samples at 4 000/s (burst 4 000): the import waits for its
    // budget instead of failing.
    let mut body = String::new();
    for k in 0..12_000 {
        body.push_str(&format!("imp_t{{k=\"{}\"}} {k} {}\n", k % 10, t + k));
    }
    let started = Instant::now();
    let got = import(&srv.url, "", body, &[auth, ("X-Scope-OrgID", "team-a")]).await;
    expect("tenant import", &got, 204, &[]);
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "12 000 samples at 4 000/s took {:?}",
        started.elapsed()
    );
    let a = raw_as(&srv.url, "imp_t", &[auth, ("X-Scope-OrgID", "team-a")]).await;
    assert_eq!(a.iter().map(|s| s.1.len()).sum::<usize>(), 12_000);
    assert!(a.iter().all(|(m, _)| m.get("__tenant__").is_none()));
    let b = raw_as(&srv.url, "imp_t", &[auth, ("X-Scope-OrgID", "team-b")]).await;
    assert!(b.is_empty(), "{b:?}");
    srv.stop().await;
}

// ---- Migration of a Prometheus 3 TSDB -------------------------------------

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {text}",
        out.status
    );
    text
}

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
fn openmetrics(from: i64, to: i64, step_ms: i64) -> (String, usize, usize) {
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
fn migrate_and_compare(
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

/// Data within the last hour, which Strata takes today: no bucket of it is
/// sealed during the test (the grace outlasts it).
#[test]
fn prometheus3_tsdb_of_the_last_hour_moves_with_promtool_and_curl() {
    let to = now_ms() - 60_000;
    migrate_and_compare(
        to - 50 * 60_000,
        to,
        &[("STRATA_STORAGE_SEAL_GRACE", "1h")],
        |_| {},
    );
}

/// The value of an unlabelled counter on a `/metrics` page.
fn metric(port: u16, name: &str) -> f64 {
    let page = http_request(port, "GET", "/metrics", &[], b"")
        .unwrap()
        .text();
    page.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A real migration: six hours of history ending two days ago, moved into
/// a Strata already in service: the new Prometheus has remote-written to
/// it for two hours and it has sealed the buckets past their grace, as it
/// does an hour after any cut-over. Storage must take the history into
/// those sealed buckets' past; until it accepts samples there, the import
/// answers 400 "sample too old".
#[test]
fn prometheus3_tsdb_history_moves_into_a_strata_in_service() {
    let to = now_ms() - 2 * 86_400_000;
    migrate_and_compare(
        to - 6 * 3_600_000,
        to,
        // Only so that the test need not wait: seals are looked for every
        // second and not spread out.
        &[
            ("STRATA_STORAGE_SEAL_CHECK_INTERVAL", "1s"),
            ("STRATA_STORAGE_SEAL_SPREAD", "1s"),
        ],
        |strata| {
            let now = now_ms();
            let live: String = (1..=120)
                .map(|m| {
                    format!(
                        "live_up{{instance=\"new-prometheus:9090\"}} 1 {}\n",
                        now - m * 60_000
                    )
                })
                .rev()
                .collect();
            let r = http_request(
                strata.port,
                "POST",
                "/api/v1/import/prometheus",
                &[],
                live.as_bytes(),
            )
            .unwrap();
            assert_eq!(r.status, 204, "{}", r.text());
            common::wait_until(Duration::from_secs(60), "Strata sealed a bucket", || {
                metric(strata.port, "strata_buckets_sealed_total") >= 1.0
            });
        },
    );
}

// ---- Migration from VictoriaMetrics ---------------------------------------

/// A value as VictoriaMetrics' JSON export writes it.
fn vm_value(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Number(n) => n.as_f64().unwrap(),
        serde_json::Value::String(s) if s == "Infinity" => f64::INFINITY,
        serde_json::Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        _ => f64::NAN,
    }
}

/// Every series in VictoriaMetrics, from its JSON-lines export: per label
/// set, (ms, value).
fn vm_export(port: u16) -> std::collections::BTreeMap<Labels, Vec<(i64, f64)>> {
    let r = http_request(
        port,
        "GET",
        "/api/v1/export?match%5B%5D=%7B__name__%21%3D%22%22%7D",
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let mut out = std::collections::BTreeMap::new();
    for line in r.text().lines().filter(|l| !l.is_empty()) {
        // Older VictoriaMetrics (Debian's 1.79) writes infinities bare,
        // which is not JSON; newer ones write "Infinity".
        let (head, values) = line.split_once("\"values\":[").unwrap();
        let (values, tail) = values.split_once(']').unwrap();
        let values = values
            .replace("+Inf", "\"Infinity\"")
            .replace("-Inf", "\"-Infinity\"");
        let line = format!("{head}\"values\":[{values}]{tail}");
        let j: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("VictoriaMetrics export line {line:?}: {e}"));
        let labels: Labels = j["metric"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let samples = j["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(j["values"].as_array().unwrap())
            .map(|(t, v)| (t.as_i64().unwrap(), vm_value(v)))
            .collect();
        out.insert(labels, samples);
    }
    out
}

/// VictoriaMetrics' history moved with `/api/v1/export?format=prometheus`
/// piped into the import (data of the last hour, which Strata takes
/// today), read back equal to VictoriaMetrics' own JSON export.
#[test]
fn victoria_metrics_export_moves_with_curl() {
    let vm = VictoriaMetricsProcess::start();
    let to = now_ms() - 60_000;
    let from = to - 50 * 60_000;
    let mut lines = String::new();
    let mut samples = 0;
    for s in 0..20usize {
        let labels = match s {
            0 => {
                "vm_special{note=\"quote \\\" backslash \\\\ newline \\n tab\there é\"}".to_string()
            }
            _ => format!(
                "vm_requests_total{{instance=\"host-{}\",job=\"api\",code=\"{}\"}}",
                s % 7,
                s
            ),
        };
        for k in 0..200i64 {
            let t = from + k * 15_000 + (k * 37 % 900);
            let v = match (s, k % 4) {
                (0, 0) => "+Inf".to_string(),
                (0, 1) => "-Inf".to_string(),
                (0, _) => format!("{}", (k as f64) * -0.25),
                _ => format!("{}", (k * s as i64) as f64 * 1.5),
            };
            lines.push_str(&format!("{labels} {v} {t}\n"));
            samples += 1;
        }
    }
    let r = http_request(
        vm.port,
        "POST",
        "/api/v1/import/prometheus",
        &[],
        lines.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 204, "VictoriaMetrics import: {}", r.text());
    wait_until(
        Duration::from_secs(30),
        "VictoriaMetrics holds every sample",
        || {
            let _ = http_request(vm.port, "GET", "/internal/force_flush", &[], b"");
            vm_export(vm.port).values().map(Vec::len).sum::<usize>() == samples
        },
    );
    let want = vm_export(vm.port);
    assert_eq!(want.len(), 20);

    let strata_dir = tempfile::tempdir().unwrap();
    let strata = StrataProcess::start(strata_dir.path(), &[("STRATA_STORAGE_SEAL_GRACE", "1h")]);
    // The recipe of docs/operations.md, but for the addresses.
    let recipe = format!(
        "set -o pipefail; \
         curl -sS --fail-with-body http://127.0.0.1:{}/api/v1/export \
           -d 'match[]={{__name__!=\"\"}}' -d format=prometheus \
         | curl -sS --fail-with-body -w '%{{http_code}}' -X POST -T - \
           http://127.0.0.1:{}/api/v1/import/prometheus",
        vm.port, strata.port
    );
    let answer = run(Command::new("bash").args(["-c", &recipe]));
    assert_eq!(answer.trim(), "204", "import answered: {answer}");

    let got = query_matrix(strata.port, "{__name__=~\"vm_.+\"}[55m]", to);
    assert_eq!(got.len(), want.len(), "series: {:?}", got.keys());
    for (labels, want) in &want {
        let got = got
            .get(labels)
            .unwrap_or_else(|| panic!("Strata lacks {labels:?}"));
        let got: Vec<(i64, f64)> = got
            .iter()
            .map(|(t, v)| (*t, v.parse::<f64>().unwrap()))
            .collect();
        assert_eq!(&got, want, "{labels:?}");
    }
}
