//! The files checked, each with the verdict both checkers must reach and
//! whether their messages must match word for word.

use crate::rule_files::{NODE_ALERTS, NODE_RECORDING, PROMETHEUS_ALERTS};

/// What a checker said about one file.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Verdict {
    Pass(usize),
    Fail,
    /// The `duplicate-rules` lint found something: promtool prints
    /// `FAILED` but exits 0.
    Lint,
}

pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) text: &'static str,
    pub(crate) verdict: Verdict,
    /// The error lines (after the file name) are promtool's word for word.
    pub(crate) same_messages: bool,
}

pub(crate) const CASES: &[Case] = &[
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
