//! Strata evaluates rules as Prometheus 3.16 does, checked side by side.
//!
//! Prometheus 3.16 scrapes a real node_exporter and itself every second,
//! evaluates [`RULES`] (node and Prometheus self-monitoring recordings and
//! alerts in the style of node-mixin and prometheus-mixin, and an alert
//! whose annotations use every template function) and remote-writes the
//! raw scraped samples, nothing it computed, to a Strata node that
//! evaluates the same file with the same settings (interval, query offset,
//! external labels and URL, resend delay, grace period). Both then hold:
//!
//! - the same recorded series, sample for sample: the same evaluation
//!   instants (a group's offset in its interval is Prometheus' hash of its
//!   file and name) and the same values (rates within float noise);
//! - the same `ALERTS` and `ALERTS_FOR_STATE` samples;
//! - the same `/api/v1/rules` and `/api/v1/alerts` JSON, field for field,
//!   but for the times that legitimately differ (each rule's and group's
//!   `evaluationTime` and `lastEvaluation`, the wall-clock times of the
//!   evaluation) and `activeAt` cut to milliseconds (Prometheus' evaluation
//!   times carry its offset's nanoseconds, Strata's are milliseconds);
//! - the same alerts in two real Alertmanagers 0.35, one for each:
//!   labels, annotations, `generatorURL`, `startsAt` within a millisecond.
//!
//! Both use a query offset of a few seconds, so that each evaluates on the
//! same samples: the newest ones are still on their way to Strata when
//! Prometheus has them. An alert flips on a 12-second cycle of `time()`,
//! so pending, firing, `keep_firing_for` and resolved all happen in the
//! window compared.
//!
//! A missing Prometheus 3, Alertmanager or node_exporter fails the test.
//!
//! The test is here; beside it: the rule file and both sides' settings
//! (`config`), an Alertmanager for each side (`alertmanager`), the API
//! answers compared as JSON (`api`), and the recorded series compared
//! sample by sample (`matrices`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod alertmanager;
mod api;
#[path = "../common/mod.rs"]
mod common;
mod config;
mod matrices;

use std::time::{Duration, Instant};

use alertmanager::Alertmanager;
use api::{compare_stable, get_json, normalize_alert_list, normalize_rules};
use common::{
    free_port, http_get, now_ms, prometheus3_bin, query_string, NodeExporterProcess,
    PrometheusProcess, StrataProcess,
};
use config::{prometheus_config, EXTERNAL_URL, QUERY_OFFSET_MS, RULES};
use matrices::{matrix_differences, samples};

#[test]
fn strata_evaluates_rules_as_prometheus_3_does() {
    let prom_bin = prometheus3_bin("prometheus");
    let am_prom = Alertmanager::start();
    let am_strata = Alertmanager::start();
    let node = NodeExporterProcess::start();

    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules").join("differential.yml");
    std::fs::create_dir_all(rules.parent().unwrap()).unwrap();
    std::fs::write(&rules, RULES).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();

    // Strata first, so that it has every sample Prometheus scrapes.
    let alertmanagers = format!("[{{urls = [\"http://127.0.0.1:{}\"]}}]", am_strata.port);
    let rule_files = rules.display().to_string();
    let offset = format!("{QUERY_OFFSET_MS}ms");
    let strata = StrataProcess::start(
        &data,
        &[
            ("STRATA_RULES_RULE_FILES", &rule_files),
            ("STRATA_RULES_EVALUATION_INTERVAL", "1s"),
            ("STRATA_RULES_QUERY_OFFSET", &offset),
            ("STRATA_RULES_RESEND_DELAY", "5s"),
            ("STRATA_RULES_FOR_GRACE_PERIOD", "10m"),
            ("STRATA_RULES_FOR_OUTAGE_TOLERANCE", "1h"),
            ("STRATA_RULES_EXTERNAL_URL", EXTERNAL_URL),
            (
                "STRATA_RULES_EXTERNAL_LABELS",
                "cluster=differential,replica=a",
            ),
            ("STRATA_ALERTING_ALERTMANAGERS", &alertmanagers),
        ],
    );

    let prom_port = free_port();
    let config = prometheus_config(prom_port, node.port, strata.port, am_prom.port, &rules);
    let external_url = format!("--web.external-url={EXTERNAL_URL}");
    let prom = PrometheusProcess::start_binary_on(
        &prom_bin,
        prom_port,
        &config,
        &[
            &external_url,
            "--web.route-prefix=/",
            "--rules.alert.resend-delay=5s",
            "--rules.alert.for-grace-period=10m",
            "--rules.alert.for-outage-tolerance=1h",
        ],
    );
    let started = now_ms();
    let began = Instant::now();

    // Long enough for rates over a few scrapes, alerts to fire, and two
    // cycles of the flapping one.
    std::thread::sleep(Duration::from_secs(45));

    // Recorded series and ALERTS, sample for sample (their timestamps are
    // the evaluation's less the query offset), from the first evaluations
    // that saw data on both sides to ones both have written for sure.
    let from = started + 4_000;
    let to = now_ms() - QUERY_OFFSET_MS - 3_000;
    let mut problems = Vec::new();
    for (selector, least) in [
        (r#"{__name__=~".+:.+"}"#, 12),
        ("ALERTS", 8),
        ("ALERTS_FOR_STATE", 8),
    ] {
        let want = samples(prom.port, selector, from, to);
        let got = samples(strata.port, selector, from, to);
        assert!(
            want.len() >= least,
            "Prometheus has {} series of {selector} in the window, fewer than {least}: {want:?}",
            want.len()
        );
        problems.extend(
            matrix_differences(&want, &got)
                .into_iter()
                .map(|d| format!("{selector}: {d}")),
        );
    }
    let recorded = samples(prom.port, r#"{__name__=~".+:.+"}"#, from, to);
    let names: std::collections::BTreeSet<&str> =
        recorded.keys().map(|l| l["__name__"].as_str()).collect();
    for name in RULES
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
    {
        assert!(
            names.contains(name) || name.contains("network"),
            "Prometheus recorded no {name} in the window: {names:?}"
        );
    }
    let states: std::collections::BTreeSet<String> = samples(prom.port, "ALERTS", from, to)
        .keys()
        .map(|l| format!("{}/{}", l["alertname"], l["alertstate"]))
        .collect();
    for s in [
        "NodeFlapping/pending",
        "NodeFlapping/firing",
        "NodeLongPending/pending",
        "TemplateShowcase/firing",
    ] {
        assert!(states.contains(s), "no {s} in the window: {states:?}");
    }
    assert!(
        problems.is_empty(),
        "Strata's rule outputs differ from Prometheus' in [{from}, {to}]:\n{}",
        problems.join("\n")
    );

    // The rules and alerts APIs.
    let rules_api = compare_stable("/api/v1/rules", prom.port, strata.port, |port| {
        normalize_rules(get_json(port, "/api/v1/rules"))
    });
    assert_eq!(rules_api["groups"].as_array().unwrap().len(), 4);
    compare_stable(
        "/api/v1/rules?type=record&exclude_alerts=true",
        prom.port,
        strata.port,
        |port| {
            normalize_rules(get_json(
                port,
                "/api/v1/rules?type=record&exclude_alerts=true",
            ))
        },
    );
    compare_stable(
        "/api/v1/rules?type=alert&exclude_alerts=true",
        prom.port,
        strata.port,
        |port| {
            normalize_rules(get_json(
                port,
                "/api/v1/rules?type=alert&exclude_alerts=true",
            ))
        },
    );
    for params in [
        &[
            ("rule_group[]", "templates"),
            ("rule_group[]", "prometheus"),
        ][..],
        &[("file[]", "/nowhere.yml")],
        &[
            ("rule_name[]", "NodeFlapping"),
            ("rule_name[]", "job:up:sum"),
        ],
        &[
            ("match[]", r#"{severity="info"}"#),
            ("match[]", r#"{source="differential"}"#),
        ],
        &[("type", "ALERT"), ("exclude_alerts", "T")],
        &[("group_limit", "3")],
        &[("group_limit", "1"), ("type", "record")],
    ] {
        let path = format!("/api/v1/rules?{}", query_string(params));
        let got = compare_stable(&path, prom.port, strata.port, |port| {
            normalize_rules(get_json(port, &path))
        });
        // The next page, from the token of this one.
        if let Some(token) = got["groupNextToken"].as_str() {
            let path = format!("{path}&group_next_token={token}");
            compare_stable(&path, prom.port, strata.port, |port| {
                normalize_rules(get_json(port, &path))
            });
        }
    }
    // Refusals: the same status and message.
    for query in [
        "type=bogus",
        "exclude_alerts=maybe",
        "group_limit=0",
        "group_limit=x",
        "group_limit=99999999999",
        "group_next_token=abc",
        "group_limit=1&group_next_token=abc",
    ] {
        let path = format!("/api/v1/rules?{query}");
        let answer = |port| {
            let r = http_get(port, &path).unwrap();
            (r.status, r.json())
        };
        let (want, got) = (answer(prom.port), answer(strata.port));
        assert_eq!(want.0, 400, "{path}: {want:?}");
        assert_eq!(got, want, "{path}: Strata, then Prometheus");
    }
    let alerts_api = compare_stable("/api/v1/alerts", prom.port, strata.port, |port| {
        normalize_alert_list(get_json(port, "/api/v1/alerts"))
    });
    let showcase = alerts_api["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["labels"]["alertname"] == "TemplateShowcase")
        .cloned()
        .expect("TemplateShowcase is active");
    for (k, v) in showcase["annotations"].as_object().unwrap() {
        let v = v.as_str().unwrap();
        assert!(!v.contains("error"), "annotation {k} failed: {v}");
    }

    // What each Alertmanager was sent.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let want = am_prom.alerts();
        let got = am_strata.alerts();
        let same_keys = want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| w.0 == g.0);
        let close = same_keys && want.iter().zip(&got).all(|(w, g)| (w.1 - g.1).abs() <= 1);
        if close && want.len() >= 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Alertmanagers hold different alerts.\nfrom Prometheus:\n{}\nfrom Strata:\n{}",
            want.iter()
                .map(|(k, t)| format!("{k} startsAt {t}"))
                .collect::<Vec<_>>()
                .join("\n"),
            got.iter()
                .map(|(k, t)| format!("{k} startsAt {t}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    eprintln!(
        "compared {} recorded series, {} alert states; took {:?}",
        recorded.len(),
        states.len(),
        began.elapsed()
    );
    drop(prom);
    drop(strata);
}
