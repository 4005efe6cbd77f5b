//! The exporter's own series, and what Prometheus adds to every scrape.

use super::Builder;
use crate::node::CPUS;

/// The exporter's own series: its collectors, hardware sensors, pressure stall information, the Go runtime and its HTTP handler.
pub(super) fn exporter(b: &mut Builder) {
    let collectors = [
        "arp",
        "conntrack",
        "cpu",
        "cpufreq",
        "diskstats",
        "dmi",
        "edac",
        "entropy",
        "filefd",
        "filesystem",
        "hwmon",
        "ipvs",
        "loadavg",
        "mdadm",
        "meminfo",
        "netclass",
        "netdev",
        "netstat",
        "nfs",
        "nfsd",
        "nvme",
        "os",
        "powersupplyclass",
        "pressure",
        "rapl",
        "schedstat",
        "selinux",
        "sockstat",
        "softnet",
        "stat",
        "tapestats",
        "textfile",
        "thermal_zone",
        "time",
        "timex",
        "udp_queues",
        "uname",
        "vmstat",
        "xfs",
        "zfs",
    ];
    for c in collectors {
        b.gauge(
            "node_scrape_collector_duration_seconds",
            &[("collector", c)],
            0.002,
            0.0005,
            1e-6,
        );
        b.constant("node_scrape_collector_success", &[("collector", c)], 1.0);
    }

    for (chip, sensors) in [("platform_coretemp_0", 5), ("pci0000:00_0000:00:03_0", 2)] {
        for s in 1..=sensors {
            let sensor = format!("temp{s}");
            let l = [("chip", chip), ("sensor", sensor.as_str())];
            b.gauge("node_hwmon_temp_celsius", &l, 45.0, 1.0, 1.0);
            b.constant("node_hwmon_temp_crit_celsius", &l, 100.0);
            b.constant("node_hwmon_temp_max_celsius", &l, 84.0);
        }
    }
    for r in ["cpu", "io", "memory"] {
        b.counter(
            &format!("node_pressure_{r}_waiting_seconds_total"),
            &[],
            0.01,
            1e-6,
        );
        if r != "cpu" {
            b.counter(
                &format!("node_pressure_{r}_stalled_seconds_total"),
                &[],
                0.005,
                1e-6,
            );
        }
    }

    b.gauge("node_load1", &[], 1.2, 0.15, 0.01);
    b.gauge("node_load5", &[], 1.1, 0.05, 0.01);
    b.gauge("node_load15", &[], 1.0, 0.02, 0.01);
    b.constant("node_boot_time_seconds", &[], 1.763e9);
    b.counter("node_time_seconds", &[], 1.0, 1e-3);
    b.counter("node_context_switches_total", &[], 6000.0, 1.0);
    b.counter("node_forks_total", &[], 12.0, 1.0);
    b.counter("node_intr_total", &[], 4000.0, 1.0);
    b.gauge("node_procs_running", &[], 2.0, 1.0, 1.0);
    b.gauge("node_procs_blocked", &[], 0.0, 1.0, 1.0);
    b.gauge("node_entropy_available_bits", &[], 256.0, 0.0, 1.0);
    b.gauge("node_filefd_allocated", &[], 4200.0, 20.0, 1.0);
    b.constant("node_filefd_maximum", &[], 9.223372036854776e18);
    b.gauge("node_nf_conntrack_entries", &[], 300.0, 10.0, 1.0);
    b.constant("node_nf_conntrack_entries_limit", &[], 262_144.0);
    b.constant("node_textfile_scrape_error", &[], 0.0);
    b.gauge("node_timex_offset_seconds", &[], 0.0001, 0.00002, 1e-6);
    b.constant("node_timex_sync_status", &[], 1.0);
    b.constant(
        "node_uname_info",
        &[
            ("machine", "x86_64"),
            ("nodename", "host"),
            ("release", "6.1.0-28-cloud-amd64"),
            ("sysname", "Linux"),
        ],
        1.0,
    );
    b.constant(
        "node_exporter_build_info",
        &[("goversion", "go1.22.5"), ("version", "1.8.2")],
        1.0,
    );
    b.constant(
        "node_os_info",
        &[
            ("id", "debian"),
            ("name", "Debian GNU/Linux"),
            ("version_id", "12"),
        ],
        1.0,
    );

    let go = [
        "go_gc_duration_seconds_count",
        "go_gc_duration_seconds_sum",
        "go_goroutines",
        "go_memstats_alloc_bytes",
        "go_memstats_alloc_bytes_total",
        "go_memstats_frees_total",
        "go_memstats_gc_sys_bytes",
        "go_memstats_heap_alloc_bytes",
        "go_memstats_heap_idle_bytes",
        "go_memstats_heap_inuse_bytes",
        "go_memstats_heap_objects",
        "go_memstats_heap_released_bytes",
        "go_memstats_heap_sys_bytes",
        "go_memstats_lookups_total",
        "go_memstats_mallocs_total",
        "go_memstats_mcache_inuse_bytes",
        "go_memstats_mspan_inuse_bytes",
        "go_memstats_next_gc_bytes",
        "go_memstats_stack_inuse_bytes",
        "go_memstats_sys_bytes",
        "go_threads",
        "process_cpu_seconds_total",
        "process_max_fds",
        "process_open_fds",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_virtual_memory_bytes",
        "promhttp_metric_handler_requests_in_flight",
    ];
    for (i, g) in go.iter().enumerate() {
        if g.ends_with("_total") || g.ends_with("_count") || g.ends_with("_sum") {
            b.counter(g, &[], 1000.0 * (i as f64 + 1.0), 1.0);
        } else {
            b.gauge(g, &[], 1.0e6 * (i as f64 + 1.0), 8192.0, 8.0);
        }
    }
    for q in ["0", "0.25", "0.5", "0.75", "1"] {
        b.gauge(
            "go_gc_duration_seconds",
            &[("quantile", q)],
            0.0001,
            0.00002,
            1e-7,
        );
    }
    for code in ["200", "500", "503"] {
        if code == "200" {
            b.counter(
                "promhttp_metric_handler_requests_total",
                &[("code", code)],
                0.1,
                1.0,
            );
        } else {
            b.constant(
                "promhttp_metric_handler_requests_total",
                &[("code", code)],
                0.0,
            );
        }
    }
}

/// What Prometheus adds to every scrape, and the padding to exactly 1,000 series.
pub(super) fn scrape(b: &mut Builder) {
    // What Prometheus itself adds to every scrape.
    b.constant("up", &[], 1.0);
    b.gauge("scrape_duration_seconds", &[], 0.03, 0.005, 1e-6);
    b.constant("scrape_samples_post_metric_relabeling", &[], 1000.0);
    b.constant("scrape_samples_scraped", &[], 1000.0);
    b.constant("scrape_series_added", &[], 0.0);

    // Pad to exactly 1,000 with more per-CPU counters, as a
    // host with more interrupt lines would expose.
    let mut extra = 0;
    while b.series.len() < 1000 {
        let cpu = (extra % CPUS).to_string();
        let line = format!("{}", 40 + extra / CPUS);
        b.rare_counter(
            "node_interrupts_total",
            &[("cpu", &cpu), ("type", &line)],
            5.0,
        );
        extra += 1;
    }
}
