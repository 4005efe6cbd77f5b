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
//!
//! The tests are here; beside them: the import request and the checks of
//! its answer (`send`), the Prometheus 3 history and its migration
//! (`prometheus3`), and VictoriaMetrics' export read back (`victoria`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "../common/mod.rs"]
mod common;
mod prometheus3;
mod send;
mod victoria;

use std::io::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use common::inproc::{now_ms, raw, raw_as, Server};
use common::{http_request, query_matrix, wait_until, StrataProcess, VictoriaMetricsProcess};
use prometheus3::{metric, migrate_and_compare};
use send::{expect, import, om_time, run, values, PATH};
use victoria::vm_export;

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
