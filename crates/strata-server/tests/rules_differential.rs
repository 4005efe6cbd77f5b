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
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{
    free_port, http_get, now_ms, prometheus3_bin, query_matrix, query_string, Matrix,
    NodeExporterProcess, PrometheusProcess, StrataProcess,
};

/// Both sides' external URL, with the trailing slash Prometheus drops.
const EXTERNAL_URL: &str = "http://alerts.example.com:9090/prom/";
/// Both sides' query offset: how far behind its evaluation time a rule
/// queries and writes, room for remote write to bring Strata the samples
/// (Prometheus sends its first ones about 5 s after it starts).
const QUERY_OFFSET_MS: i64 = 10_000;

/// The rule file both evaluate. Groups are out of name order: the API lists
/// them sorted, as Prometheus does.
const RULES: &str = r#"
groups:
  # Recording rules of node-mixin's node-exporter.rules.
  - name: node-exporter.rules
    interval: 1s
    rules:
      - record: instance:node_num_cpu:sum
        expr: |
          count without (cpu, mode) (
            node_cpu_seconds_total{job="node",mode="idle"}
          )
      - record: instance:node_cpu_utilisation:rate1m
        expr: |
          1 - avg without (cpu) (
            sum without (mode) (rate(node_cpu_seconds_total{job="node", mode=~"idle|iowait|steal"}[1m]))
          )
      - record: instance:node_load1_per_cpu:ratio
        expr: |
          (
            node_load1{job="node"}
          /
            instance:node_num_cpu:sum{job="node"}
          )
      - record: instance:node_memory_utilisation:ratio
        expr: |
          1 - (
            node_memory_MemAvailable_bytes{job="node"}
          /
            node_memory_MemTotal_bytes{job="node"}
          )
      - record: instance:node_network_receive_bytes:rate1m
        expr: |
          sum without (device) (
            rate(node_network_receive_bytes_total{job="node"}[1m])
          )
      - record: instance:node_network_transmit_bytes:irate
        expr: sum without (device) (irate(node_network_transmit_bytes_total{job="node"}[30s]))
      - record: job:up:sum
        expr: sum by (job) (up)
        labels:
          source: differential

  # node-mixin's alerts, turned so that they hold on a healthy machine.
  - name: node-exporter
    interval: 1s
    rules:
      - alert: NodeExporterUp
        expr: up{job="node"} == 1
        for: 3s
        labels:
          severity: info
          port: '{{ reReplaceAll ".*:" "" $labels.instance }}'
        annotations:
          summary: Node exporter {{ $labels.instance }} is up.
          description: '{{ $labels.job }} target {{ $labels.instance }} is up ({{ $value }}) in {{ $externalLabels.cluster }}.'
      - alert: NodeMemoryNotExhausted
        expr: instance:node_memory_utilisation:ratio{job="node"} * 100 < 100
        for: 2s
        labels:
          severity: info
        annotations:
          summary: Memory is not exhausted on {{ $labels.instance | stripPort }}.
      - alert: NodeLoadObserved
        expr: node_load1{job="node"} >= 0
        labels:
          severity: info
      - alert: NodeClockNotSkewed
        expr: |
          abs(node_time_seconds{job="node"} - timestamp(node_time_seconds{job="node"})) < 60
        for: 2s
        annotations:
          summary: Clock on {{ $labels.instance }} is within a minute of Prometheus'.
      - alert: NodeFlapping
        expr: up{job="node"} == 1 and on () (vector(time() % 12) < 6)
        for: 2s
        keep_firing_for: 2s
        labels:
          severity: warning
        annotations:
          summary: Flaps on a 12 s cycle.
      - alert: NodeLongPending
        expr: up{job="node"} == 1
        for: 1h
        labels:
          severity: none

  # Recording rules and alerts of prometheus-mixin, turned the same way.
  - name: prometheus
    interval: 2s
    rules:
      - record: job_handler:prometheus_http_requests:rate1m
        expr: sum by (job, handler) (rate(prometheus_http_requests_total{job="prometheus"}[1m]))
      - record: job:prometheus_tsdb_head_samples_appended:rate1m
        expr: sum by (job) (rate(prometheus_tsdb_head_samples_appended_total{job="prometheus"}[1m]))
      - record: job:prometheus_scrape_duration:max
        expr: max by (job) (max_over_time(scrape_duration_seconds[30s]))
      - alert: PrometheusConfigReloadSucceeded
        expr: |
          # Without max_over_time, failed reloads are likely to be missed.
          max_over_time(prometheus_config_last_reload_successful{job="prometheus"}[5m]) == 1
        for: 2s
        labels:
          severity: info
        annotations:
          summary: Prometheus {{ $labels.instance }} loaded its configuration.
      - alert: PrometheusNotificationQueueNotFull
        expr: |
          (
            predict_linear(prometheus_notifications_queue_length{job="prometheus"}[5m], 60 * 30)
          <=
            min_over_time(prometheus_notifications_queue_capacity{job="prometheus"}[5m])
          )
        for: 2s
        labels:
          severity: info
        annotations:
          summary: Prometheus alert notification queue is not running full.
          description: Alert notification queue of Prometheus {{ $labels.instance }} is at {{ $value | humanize }}.
      - alert: PrometheusTSDBHasSeries
        expr: prometheus_tsdb_head_series{job="prometheus"} > 0
        for: 4s
        labels:
          severity: info

  # Every kind of template, on a value that does not change.
  - name: templates
    interval: 2s
    rules:
      - alert: TemplateShowcase
        expr: node_memory_MemTotal_bytes{job="node"}
        for: 2s
        labels:
          severity: '{{ "info" | toUpper }}'
          instance_host: '{{ $labels.instance | stripPort }}'
        annotations:
          labels: '{{ $labels.instance }} {{ $labels.job }} {{ .Labels.job }}'
          value: '{{ $value }} {{ .Value }}'
          external: '{{ $externalLabels.cluster }} {{ .ExternalLabels.replica }} {{ $externalURL }} {{ .ExternalURL }}'
          humanize: '{{ $value | humanize }} {{ 0.000012345 | humanize }} {{ 1234567 | humanize }} {{ 0 | humanize }} {{ -1.5e-9 | humanize }}'
          humanize1024: '{{ $value | humanize1024 }} {{ 1023 | humanize1024 }} {{ 1048576 | humanize1024 }} {{ 0.5 | humanize1024 }}'
          humanizePercentage: '{{ 0.12345 | humanizePercentage }} {{ 1.5 | humanizePercentage }} {{ 0 | humanizePercentage }}'
          humanizeDuration: '{{ 93784.5 | humanizeDuration }} {{ 0.0123 | humanizeDuration }} {{ 59 | humanizeDuration }} {{ 0 | humanizeDuration }} {{ -61 | humanizeDuration }}'
          humanizeTimestamp: '{{ 1700000000.123 | humanizeTimestamp }} {{ 0 | humanizeTimestamp }}'
          query: '{{ with query "count(node_cpu_seconds_total{job=\"node\",mode=\"idle\"})" }}{{ . | first | value }}{{ end }} CPUs, {{ query `node_memory_MemTotal_bytes{job="node"}` | first | value | humanize1024 }}B'
          printf: '{{ printf "%.2f %s %d %q" 3.14159 "x" 42 "quoted" }} {{ printf "%.1f%%" 12.345 }} {{ printf "%v" $value }}'
          case: '{{ $labels.job | toUpper }} {{ "node exporter memory" | title }} {{ "MiXeD" | toLower }}'
          reReplaceAll: '{{ reReplaceAll ":([0-9]+)$" " port $1" $labels.instance }}'
          args: '{{ with args 1 "two" 3.5 }}{{ .arg0 }} {{ .arg1 }} {{ .arg2 }}{{ end }}'
          url: '{{ pathPrefix }} | {{ externalURL }} | {{ graphLink "up == 1" }} | {{ tableLink "rate(x[5m])" }}'
          sortByLabel: '{{ range query `node_cpu_seconds_total{job="node",mode="idle"}` | sortByLabel "cpu" }}{{ label "cpu" . }},{{ end }}'
          strvalue: '{{ with query `label_replace(vector(1), "__value__", "forty-two", "", "")` }}{{ . | first | strvalue }}{{ end }}'
          match: '{{ if match "^127\\.0\\.0\\.1:" $labels.instance }}local{{ else }}remote{{ end }}'
          misc: '{{ "host.example.com:9100" | stripDomain }} {{ parseDuration "1h30m" }} {{ urlQueryEscape "a b&c=d" }} {{ "<b>bold</b>" | safeHtml }}'
"#;

/// An Alertmanager without receivers: its API shows what it was sent.
struct Alertmanager {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Alertmanager {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: none\nreceivers:\n  - name: none\n",
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(common::alertmanager_bin())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let am = Self {
            child,
            port,
            _dir: dir,
        };
        common::wait_until(
            Duration::from_secs(30),
            "Alertmanager is ready",
            || matches!(http_get(port, "/-/ready"), Ok(r) if r.status == 200),
        );
        am
    }

    /// The alerts it holds, as the comparison sees them: labels,
    /// annotations, `generatorURL`, and `startsAt` in ms.
    fn alerts(&self) -> Vec<(Value, i64)> {
        let r = http_get(self.port, "/api/v2/alerts").unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        let mut out: Vec<(Value, i64)> = r
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let key = serde_json::json!({
                    "labels": a["labels"],
                    "annotations": a["annotations"],
                    "generatorURL": a["generatorURL"],
                });
                (key, time_ms(a["startsAt"].as_str().unwrap()))
            })
            .collect();
        out.sort_by_key(|(k, _)| k.to_string());
        out
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An RFC 3339 time (any fraction) in ms since the epoch.
fn time_ms(s: &str) -> i64 {
    let t = humantime::parse_rfc3339(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A Go time cut to milliseconds, as Go writes such a time: trailing
/// zeros of the fraction dropped.
fn go_time_ms(s: &str) -> String {
    let Some((head, frac)) = s.strip_suffix('Z').and_then(|s| s.split_once('.')) else {
        return s.to_owned();
    };
    let mut frac: String = frac.chars().take(3).collect();
    while frac.ends_with('0') {
        frac.pop();
    }
    if frac.is_empty() {
        format!("{head}Z")
    } else {
        format!("{head}.{frac}Z")
    }
}

fn prometheus_config(prom: u16, node: u16, strata: u16, am: u16, rules: &Path) -> String {
    format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  rule_query_offset: {offset}ms
  external_labels:
    cluster: differential
    replica: a
rule_files:
  - {rules}
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am}"]
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:{prom}"]
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:{node}"]
remote_write:
  - url: http://127.0.0.1:{strata}/api/v1/write
    queue_config:
      batch_send_deadline: 200ms
      min_backoff: 50ms
      max_backoff: 500ms
    metadata_config:
      send: false
    # Only the scraped samples: what the rules compute, Strata computes.
    write_relabel_configs:
      - source_labels: [__name__]
        regex: "ALERTS|ALERTS_FOR_STATE|.+:.+"
        action: drop
      - regex: cluster|replica
        action: labeldrop
"#,
        offset = QUERY_OFFSET_MS,
        rules = rules.display(),
    )
}

fn get_json(port: u16, path: &str) -> Value {
    let r = http_get(port, path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(r.status, 200, "GET :{port}{path}: {}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "success", "GET :{port}{path}: {v}");
    v["data"].clone()
}

/// Alerts as compared: sorted by labels (Prometheus lists them in map
/// order), `activeAt` and `keepFiringSince` cut to ms.
fn normalize_alerts(alerts: &mut Value) {
    let Some(list) = alerts.as_array_mut() else {
        return;
    };
    for a in list.iter_mut() {
        for key in ["activeAt", "keepFiringSince"] {
            if let Some(t) = a[key].as_str() {
                a[key] = Value::String(go_time_ms(t));
            }
        }
    }
    list.sort_by_key(|a| a["labels"].to_string());
}

/// `/api/v1/rules` as compared: without the wall-clock times of the
/// evaluations.
fn normalize_rules(mut data: Value) -> Value {
    for g in data["groups"].as_array_mut().unwrap() {
        let g = g.as_object_mut().unwrap();
        assert!(g.remove("evaluationTime").is_some(), "{g:?}");
        assert!(g.remove("lastEvaluation").is_some(), "{g:?}");
        for r in g["rules"].as_array_mut().unwrap() {
            let r = r.as_object_mut().unwrap();
            assert!(r.remove("evaluationTime").is_some(), "{r:?}");
            assert!(r.remove("lastEvaluation").is_some(), "{r:?}");
            if let Some(alerts) = r.get_mut("alerts") {
                normalize_alerts(alerts);
            }
        }
    }
    data
}

fn normalize_alert_list(mut data: Value) -> Value {
    normalize_alerts(&mut data["alerts"]);
    data
}

/// Compares what `fetch` answers of each side between two evaluations:
/// Prometheus' answer is taken before and after Strata's and must not
/// have changed, else the round is tried again. Panics with both answers
/// when they differ in every round.
fn compare_stable(what: &str, prom: u16, strata: u16, fetch: impl Fn(u16) -> Value) -> Value {
    let mut last = None;
    for _ in 0..20 {
        let before = fetch(prom);
        let got = fetch(strata);
        let after = fetch(prom);
        if before != after {
            continue;
        }
        if before == got {
            return got;
        }
        last = Some((before, got));
        std::thread::sleep(Duration::from_millis(300));
    }
    let (want, got) = last.expect("Prometheus' answer never held still");
    let mut diffs = Vec::new();
    differences(&want, &got, "", &mut diffs);
    panic!(
        "{what} differs:\n{}\nPrometheus answered:\n{}\nStrata answered:\n{}",
        diffs.join("\n"),
        serde_json::to_string_pretty(&want).unwrap(),
        serde_json::to_string_pretty(&got).unwrap(),
    );
}

/// Every place two JSON values differ, as paths.
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, p) in x {
                match y.get(k) {
                    Some(q) => differences(p, q, &format!("{at}.{k}"), out),
                    None => out.push(format!("{at}.{k}: {p} in Prometheus, missing in Strata")),
                }
            }
            for (k, q) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                out.push(format!("{at}.{k}: missing in Prometheus, {q} in Strata"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{at}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} in Prometheus, {b} in Strata")),
        _ => {}
    }
}

/// The samples of `selector` with timestamps in `[from, to]`.
fn samples(port: u16, selector: &str, from: i64, to: i64) -> Matrix {
    let secs = (to - from) / 1000 + 1;
    query_matrix(port, &format!("{selector}[{secs}s]"), to)
        .into_iter()
        .map(|(l, s)| {
            let s: Vec<(i64, String)> = s
                .into_iter()
                .filter(|(t, _)| (from..=to).contains(t))
                .collect();
            (l, s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// Equal values, or within float noise (relative 1e-9).
fn same_value(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// Differences between two matrices: series on one side only, and per
/// series the timestamps or values that differ.
fn matrix_differences(want: &Matrix, got: &Matrix) -> Vec<String> {
    let mut out = Vec::new();
    for (labels, w) in want {
        let Some(g) = got.get(labels) else {
            out.push(format!(
                "only in Prometheus: {labels:?} ({} samples)",
                w.len()
            ));
            continue;
        };
        let wt: Vec<i64> = w.iter().map(|(t, _)| *t).collect();
        let gt: Vec<i64> = g.iter().map(|(t, _)| *t).collect();
        if wt != gt {
            let i = wt.iter().zip(&gt).take_while(|(a, b)| a == b).count();
            out.push(format!(
                "{labels:?}: {} samples in Prometheus, {} in Strata; the {i}th at {:?} in \
                 Prometheus, at {:?} in Strata",
                wt.len(),
                gt.len(),
                wt.get(i),
                gt.get(i)
            ));
            continue;
        }
        for ((t, a), (_, b)) in w.iter().zip(g) {
            if !same_value(a, b) {
                out.push(format!(
                    "{labels:?} at {t}: {a} in Prometheus, {b} in Strata"
                ));
                break;
            }
        }
    }
    for labels in got.keys().filter(|l| !want.contains_key(*l)) {
        out.push(format!("only in Strata: {labels:?}"));
    }
    out
}

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
