//! What both sides are given: the external URL and query offset they
//! share, the rule file they evaluate, and Prometheus' configuration
//! (scrapes, rules, its Alertmanager, remote write of the raw samples to
//! Strata).

use std::path::Path;

/// Both sides' external URL, with the trailing slash Prometheus drops.
pub(crate) const EXTERNAL_URL: &str = "http://alerts.example.com:9090/prom/";
/// Both sides' query offset: how far behind its evaluation time a rule
/// queries and writes, room for remote write to bring Strata the samples
/// (Prometheus sends its first ones about 5 s after it starts).
pub(crate) const QUERY_OFFSET_MS: i64 = 10_000;

/// The rule file both evaluate. Groups are out of name order: the API lists
/// them sorted, as Prometheus does.
pub(crate) const RULES: &str = r#"
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

pub(crate) fn prometheus_config(
    prom: u16,
    node: u16,
    strata: u16,
    am: u16,
    rules: &Path,
) -> String {
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
