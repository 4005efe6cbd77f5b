//! `strata rules check` against Prometheus 3.16's `promtool check rules` on
//! the same files: real-world recording and alerting rules that pass, and
//! files with each mistake `rulefmt` catches. The verdict of each file (its
//! rule count, a failure, or a lint finding) and the exit code must be
//! promtool's; where the wording is the same by design, the messages too.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What a checker said about one file.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Verdict {
    Pass(usize),
    Fail,
    /// The `duplicate-rules` lint found something: promtool prints
    /// `FAILED` but exits 0.
    Lint,
}

struct Case {
    name: &'static str,
    text: &'static str,
    verdict: Verdict,
    /// The error lines (after the file name) are promtool's word for word.
    same_messages: bool,
}

const NODE_RECORDING: &str = r#"
groups:
  - name: node-exporter.rules
    rules:
      - record: instance:node_num_cpu:sum
        expr: |
          count without (cpu, mode) (
            node_cpu_seconds_total{job="node",mode="idle"}
          )
      - record: instance:node_cpu_utilisation:rate5m
        expr: |
          1 - avg without (cpu) (
            sum without (mode) (rate(node_cpu_seconds_total{job="node", mode=~"idle|iowait|steal"}[5m]))
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
            (
              node_memory_MemAvailable_bytes{job="node"}
              or
              (
                node_memory_Buffers_bytes{job="node"}
                +
                node_memory_Cached_bytes{job="node"}
                +
                node_memory_MemFree_bytes{job="node"}
                +
                node_memory_Slab_bytes{job="node"}
              )
            )
          /
            node_memory_MemTotal_bytes{job="node"}
          )
      - record: instance:node_vmstat_pgmajfault:rate5m
        expr: rate(node_vmstat_pgmajfault{job="node"}[5m])
      - record: instance_device:node_disk_io_time_seconds:rate5m
        expr: rate(node_disk_io_time_seconds_total{job="node", device=~"(/dev/)?(mmcblk.p.+|nvme.+|sd.+|vd.+|xvd.+|dm-.+)"}[5m])
      - record: instance:node_network_receive_bytes_excluding_lo:rate5m
        expr: |
          sum without (device) (
            rate(node_network_receive_bytes_total{job="node", device!="lo"}[5m])
          )
  - name: cluster
    interval: 1m
    query_offset: 30s
    limit: 1000
    labels:
      source: recording
    rules:
      - record: cluster:node_cpu:ratio_rate5m
        expr: sum(instance:node_cpu_utilisation:rate5m) / count(instance:node_num_cpu:sum)
"#;

const NODE_ALERTS: &str = r#"
groups:
  - name: node-exporter
    rules:
      - alert: NodeFilesystemSpaceFillingUp
        expr: |
          (
            node_filesystem_avail_bytes{job="node",fstype!="",mountpoint!=""} / node_filesystem_size_bytes{job="node",fstype!="",mountpoint!=""} * 100 < 15
          and
            predict_linear(node_filesystem_avail_bytes{job="node",fstype!="",mountpoint!=""}[6h], 4*60*60) < 0
          and
            node_filesystem_readonly{job="node",fstype!="",mountpoint!=""} == 0
          )
        for: 1h
        labels:
          severity: warning
        annotations:
          summary: Filesystem is predicted to run out of space within the next 4 hours.
          description: Filesystem on {{ $labels.device }}, mounted on {{ $labels.mountpoint }}, at {{ $labels.instance }} has only {{ printf "%.2f" $value }}% available space left and is filling up fast.
      - alert: NodeFilesystemAlmostOutOfFiles
        expr: |
          (
            node_filesystem_files_free{job="node",fstype!="",mountpoint!=""} / node_filesystem_files{job="node",fstype!="",mountpoint!=""} * 100 < 3
          and
            node_filesystem_readonly{job="node",fstype!="",mountpoint!=""} == 0
          )
        for: 1h
        labels:
          severity: critical
        annotations:
          summary: Filesystem has less than 3% inodes left.
          description: Filesystem on {{ $labels.device }} at {{ $labels.instance }} has only {{ printf "%.2f" $value }}% available inodes left.
      - alert: NodeNetworkReceiveErrs
        expr: rate(node_network_receive_errs_total{job="node"}[2m]) / rate(node_network_receive_packets_total{job="node"}[2m]) > 0.01
        for: 1h
        labels:
          severity: warning
        annotations:
          description: '{{ $labels.instance }} interface {{ $labels.device }} has encountered {{ printf "%.0f" $value }} receive errors in the last two minutes.'
      - alert: NodeHighNumberConntrackEntriesUsed
        expr: (node_nf_conntrack_entries{job="node"} / node_nf_conntrack_entries_limit) > 0.75
        labels:
          severity: warning
        annotations:
          description: '{{ $value | humanizePercentage }} of conntrack entries are used.'
      - alert: NodeClockNotSynchronising
        expr: |
          min_over_time(node_timex_sync_status{job="node"}[5m]) == 0
          and
          node_timex_maxerror_seconds{job="node"} >= 16
        for: 10m
        keep_firing_for: 5m
        labels:
          severity: warning
        annotations:
          summary: Clock not synchronising.
      - alert: NodeMemoryHighUtilization
        expr: |
          100 - (node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"} * 100) > 90
        for: 15m
        labels:
          severity: warning
        annotations:
          description: Memory is filling up at {{ $labels.instance }}, has been above 90% for the last 15 minutes, is currently at {{ printf "%.2f" $value }}%.
      - alert: NodeSystemdServiceFailed
        expr: node_systemd_unit_state{job="node", state="failed"} == 1
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: Systemd service has entered failed state.
          description: Systemd service {{ $labels.name }} has entered failed state at {{ $labels.instance }}
"#;

const PROMETHEUS_ALERTS: &str = r#"
groups:
  - name: prometheus
    rules:
      - alert: PrometheusBadConfig
        expr: max_over_time(prometheus_config_last_reload_successful{job="prometheus"}[5m]) == 0
        for: 10m
        labels:
          severity: critical
        annotations:
          description: Prometheus {{$labels.instance}} has failed to reload its configuration.
      - alert: PrometheusNotificationQueueRunningFull
        expr: |
          (
            predict_linear(prometheus_notifications_queue_length{job="prometheus"}[5m], 60 * 30)
          >
            min_over_time(prometheus_notifications_queue_capacity{job="prometheus"}[5m])
          )
        for: 15m
        labels:
          severity: warning
        annotations:
          description: Alert notification queue of Prometheus {{$labels.instance}} is running full.
      - alert: PrometheusErrorSendingAlertsToSomeAlertmanagers
        expr: |
          (
            rate(prometheus_notifications_errors_total{job="prometheus"}[5m])
          /
            rate(prometheus_notifications_sent_total{job="prometheus"}[5m])
          )
          * 100
          > 1
        for: 15m
        labels:
          severity: warning
        annotations:
          description: '{{ printf "%.1f" $value }}% errors while sending alerts from Prometheus {{$labels.instance}} to Alertmanager {{$labels.alertmanager}}.'
      - alert: PrometheusNotConnectedToAlertmanagers
        expr: max_over_time(prometheus_notifications_alertmanagers_discovered{job="prometheus"}[5m]) < 1
        for: 10m
        labels:
          severity: warning
      - alert: PrometheusTSDBReloadsFailing
        expr: increase(prometheus_tsdb_reloads_failures_total{job="prometheus"}[3h]) > 0
        for: 4h
        labels:
          severity: warning
        annotations:
          description: Prometheus {{$labels.instance}} has detected {{$value | humanize}} reload failures over the last 3h.
      - alert: PrometheusRemoteWriteBehind
        expr: |
          (
            max_over_time(prometheus_remote_storage_queue_highest_timestamp_seconds{job="prometheus"}[5m])
          - ignoring(remote_name, url) group_right
            max_over_time(prometheus_remote_storage_queue_highest_sent_timestamp_seconds{job="prometheus"}[5m])
          )
          > 120
        for: 15m
        labels:
          severity: critical
        annotations:
          description: Prometheus {{$labels.instance}} remote write is {{ printf "%.1f" $value }}s behind for {{ $labels.remote_name}}:{{ $labels.url }}.
      - alert: PrometheusRuleFailures
        expr: increase(prometheus_rule_evaluation_failures_total{job="prometheus"}[5m]) > 0
        for: 15m
        labels:
          severity: critical
        annotations:
          description: Prometheus {{$labels.instance}} has failed to evaluate {{ printf "%.0f" $value }} rules in the last 5m.
      - alert: Watchdog
        expr: vector(1)
        labels:
          severity: none
"#;

const CASES: &[Case] = &[
    Case {
        name: "node-recording.yml",
        text: NODE_RECORDING,
        verdict: Verdict::Pass(8),
        same_messages: true,
    },
    Case {
        name: "node-alerts.yml",
        text: NODE_ALERTS,
        verdict: Verdict::Pass(7),
        same_messages: true,
    },
    Case {
        name: "prometheus-alerts.yaml",
        text: PROMETHEUS_ALERTS,
        verdict: Verdict::Pass(8),
        same_messages: true,
    },
    Case {
        name: "empty.yml",
        text: "# no rules yet\n",
        verdict: Verdict::Pass(0),
        same_messages: true,
    },
    Case {
        name: "numbers-and-nulls.yml",
        text: "groups:\n  - name: g\n    limit: -1\n    rules:\n      - record: one\n        expr: 1\n        for: 0\n        labels:\n          empty: ~\n          n: 5\n",
        verdict: Verdict::Pass(1),
        same_messages: true,
    },
    Case {
        name: "aliases.yml",
        text: r#"
groups:
  - name: g
    rules:
      - &high
        alert: &name HighErrors
        expr: &expr sum(rate(errors_total[5m])) / sum(rate(requests_total[5m])) > 0.05
        for: 5m
        labels:
          severity: critical
      - record: errors:ratio_rate5m
        expr: *expr
      - <<: *high
        alert: HighErrorsPage
"#,
        verdict: Verdict::Pass(3),
        same_messages: true,
    },
    Case {
        name: "two-documents.yml",
        text: "groups:\n  - name: a\n    rules:\n      - {record: a, expr: up}\n---\ngroups:\n  - name: a\n  - name: a\n",
        verdict: Verdict::Pass(1),
        same_messages: true,
    },
    Case {
        name: "utf8-names.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: node.cpu:rate5m\n        expr: 'rate({\"node.cpu.seconds\"}[5m])'\n        labels:\n          team-name: infra\n",
        verdict: Verdict::Pass(1),
        same_messages: true,
    },
    Case {
        name: "unknown-field.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        annotation:\n          summary: typo\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "unknown-top-level.yml",
        text: "group:\n  - name: g\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "repeated-key.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels: {a: 1, a: 2}\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "bad-for.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        for: 5\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "repeated-group.yml",
        text: "groups:\n  - name: g\n  - name: g\n  - name: ''\n",
        verdict: Verdict::Fail,
        // promtool says 0:0 for a group's position.
        same_messages: false,
    },
    Case {
        name: "record-and-alert.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: r\n        alert: A\n        expr: up\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "neither-record-nor-alert.yml",
        text: "groups:\n  - name: g\n    rules:\n      - expr: up\n",
        verdict: Verdict::Fail,
        // promtool says 0:0 for the missing fields, Strata the rule's start.
        same_messages: false,
    },
    Case {
        name: "no-expr.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: r\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "bad-expr.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up ===== 0\n",
        verdict: Verdict::Fail,
        // The parsers word their errors differently.
        same_messages: false,
    },
    Case {
        name: "experimental-function.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: r\n        expr: sort_by_label(up, \"job\")\n",
        verdict: Verdict::Fail,
        same_messages: false,
    },
    Case {
        name: "recording-with-alert-fields.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: r\n        expr: up\n        for: 1m\n        keep_firing_for: 1m\n        annotations:\n          summary: s\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "braces-in-record.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: job:up{job=\"x\"}\n        expr: up\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "metric-name-label.yml",
        text: "groups:\n  - name: g\n    rules:\n      - record: r\n        expr: up\n        labels:\n          __name__: other\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "group-metric-name-label.yml",
        text: "groups:\n  - name: g\n    labels:\n      __name__: other\n    rules:\n      - record: r\n        expr: up\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "empty-annotation-name.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations:\n          '': x\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "bad-template.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: InstanceDown\n        expr: up == 0\n        annotations:\n          summary: 'Instance {{ $label.instance }} down'\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "bad-template-label.yml",
        text: "groups:\n  - name: g\n    rules:\n      - alert: InstanceDown\n        expr: up == 0\n        labels:\n          severity: '{{$this_is_wrong}}'\n",
        verdict: Verdict::Fail,
        same_messages: true,
    },
    Case {
        name: "duplicate-rules.yml",
        text: "groups:\n  - name: a\n    labels: {team: x}\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n  - name: b\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n        labels: {team: x}\n      - alert: Down\n        expr: up == 0\n      - alert: Down\n        expr: up == 0\n        for: 5m\n",
        verdict: Verdict::Lint,
        same_messages: true,
    },
];

fn run(bin: &Path, args: &[&str], files: &[&Path]) -> Output {
    Command::new(bin)
        .args(args)
        .args(files)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn strata(files: &[&Path]) -> Output {
    run(
        Path::new(env!("CARGO_BIN_EXE_strata")),
        &["rules", "check"],
        files,
    )
}

fn promtool(bin: &Path, files: &[&Path]) -> Output {
    run(bin, &["check", "rules"], files)
}

fn verdict(out: &Output) -> Verdict {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(n) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  SUCCESS: "))
        .and_then(|rest| rest.strip_suffix(" rules found"))
    {
        return Verdict::Pass(n.parse().unwrap());
    }
    if stderr.contains("lint error") {
        Verdict::Lint
    } else {
        Verdict::Fail
    }
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The message lines, sorted (Go visits labels in random order), without
/// the log lines promtool may add.
fn messages(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("time="))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn verdicts_match_promtool_file_by_file() {
    let promtool_bin = common::prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for case in CASES {
        let path = dir.path().join(case.name);
        std::fs::write(&path, case.text).unwrap();
        let ours = strata(&[&path]);
        let theirs = promtool(&promtool_bin, &[&path]);
        let (v_ours, v_theirs) = (verdict(&ours), verdict(&theirs));
        if v_ours != case.verdict || v_theirs != case.verdict {
            failures.push(format!(
                "{}: expected {:?}, strata {v_ours:?}, promtool {v_theirs:?}\n== strata {}\n== promtool {}",
                case.name,
                case.verdict,
                show(&ours),
                show(&theirs)
            ));
            continue;
        }
        if ours.status.code() != theirs.status.code() || ours.stdout != theirs.stdout {
            failures.push(format!(
                "{}: output differs\n== strata {}\n== promtool {}",
                case.name,
                show(&ours),
                show(&theirs)
            ));
            continue;
        }
        if case.same_messages && messages(&ours) != messages(&theirs) {
            failures.push(format!(
                "{}: messages differ\n== strata {}\n== promtool {}",
                case.name,
                show(&ours),
                show(&theirs)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn many_files_at_once_exit_as_promtool() {
    let promtool_bin = common::prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let write = |case: &Case| {
        let path = dir.path().join(case.name);
        std::fs::write(&path, case.text).unwrap();
        path
    };
    let by_verdict = |pick: fn(Verdict) -> bool| -> Vec<std::path::PathBuf> {
        CASES
            .iter()
            .filter(|c| pick(c.verdict))
            .map(write)
            .collect()
    };
    let passing = by_verdict(|v| matches!(v, Verdict::Pass(_)));
    let linted = by_verdict(|v| v == Verdict::Lint);
    let failing = by_verdict(|v| v == Verdict::Fail);
    let all: Vec<_> = passing
        .iter()
        .chain(&linted)
        .chain(&failing)
        .cloned()
        .collect();
    for (files, exit) in [(&passing, 0), (&linted, 0), (&failing, 1), (&all, 1)] {
        let files: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let ours = strata(&files);
        let theirs = promtool(&promtool_bin, &files);
        assert_eq!(ours.status.code(), Some(exit), "{}", show(&ours));
        assert_eq!(theirs.status.code(), Some(exit), "{}", show(&theirs));
        // `Checking FILE`, the verdicts and the blank lines between files,
        // in order.
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout)
        );
    }

    // Lint findings exit 3 with --lint-fatal, and --lint=none turns the
    // lint off, for both.
    let lint_file = [linted[0].as_path()];
    for (args, exit) in [(&["--lint-fatal"][..], 3), (&["--lint=none"][..], 0)] {
        let ours = run(
            Path::new(env!("CARGO_BIN_EXE_strata")),
            &[&["rules", "check"][..], args].concat(),
            &lint_file,
        );
        let theirs = run(
            &promtool_bin,
            &[&["check", "rules"][..], args].concat(),
            &lint_file,
        );
        assert_eq!(ours.status.code(), Some(exit), "{}", show(&ours));
        assert_eq!(theirs.status.code(), Some(exit), "{}", show(&theirs));
        assert_eq!(ours.stdout, theirs.stdout, "{}", show(&ours));
    }
}

#[test]
fn a_missing_file_fails() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yml");
    let out = strata(&[&missing]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: ", missing.display())),
        "{}",
        show(&out)
    );
}

#[test]
fn standard_input_when_no_file_is_named() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["rules", "check"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(NODE_RECORDING.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Checking standard input\n  SUCCESS: 8 rules found\n\n"
    );
}
