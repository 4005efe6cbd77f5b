//! Real-world rule files that pass: node-exporter's recording rules and
//! alerts, and Prometheus' own alerts.

pub(crate) const NODE_RECORDING: &str = r#"
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

pub(crate) const NODE_ALERTS: &str = r#"
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

pub(crate) const PROMETHEUS_ALERTS: &str = r#"
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
