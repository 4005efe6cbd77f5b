//! What one node_exporter target exposes: about 1,000 series with the metric
//! names and labels of a real Linux host, and how each value moves between
//! scrapes (counters rise by realistic amounts, gauges random-walk), so that
//! storage engines compress what they would compress in production.

use strata_remote_write::proto::v1;

/// How a series' value moves from one scrape to the next.
#[derive(Clone, Copy, Debug)]
pub enum Motion {
    /// Never changes (sizes, info-style gauges, flags).
    Constant(f64),
    /// Rises by about `per_sec` per second (±50 %), rounded to `resolution`;
    /// `idle` is the share of scrapes in which it does not move at all.
    Counter {
        start: f64,
        per_sec: f64,
        resolution: f64,
        idle: f64,
    },
    /// Random walk of at most `step` per scrape, rounded to `resolution`,
    /// kept within `[min, max]`.
    Gauge {
        start: f64,
        step: f64,
        resolution: f64,
        min: f64,
        max: f64,
    },
}

/// One series of the target template: sorted labels with a placeholder
/// `instance` value, and its motion.
#[derive(Clone, Debug)]
pub struct SeriesTemplate {
    pub labels: Vec<v1::Label>,
    /// Index of the `instance` label in `labels`.
    pub instance_pos: usize,
    pub motion: Motion,
}

/// The series of one target, in scrape order.
#[derive(Clone, Debug)]
pub struct TargetTemplate {
    pub series: Vec<SeriesTemplate>,
}

const CPUS: usize = 8;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

struct Builder {
    series: Vec<SeriesTemplate>,
}

impl Builder {
    fn add(&mut self, name: &str, labels: &[(&str, &str)], motion: Motion) {
        let mut all: Vec<(String, String)> = vec![
            ("__name__".into(), name.into()),
            ("instance".into(), String::new()),
            ("job".into(), "node".into()),
        ];
        all.extend(labels.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        all.sort();
        let instance_pos = all.iter().position(|(n, _)| n == "instance").unwrap_or(0);
        self.series.push(SeriesTemplate {
            labels: all
                .into_iter()
                .map(|(name, value)| v1::Label { name, value })
                .collect(),
            instance_pos,
            motion,
        });
    }

    fn counter(&mut self, name: &str, labels: &[(&str, &str)], per_sec: f64, resolution: f64) {
        self.add(
            name,
            labels,
            Motion::Counter {
                start: per_sec * 86_400.0 * 3.0,
                per_sec,
                resolution,
                idle: 0.0,
            },
        );
    }

    fn rare_counter(&mut self, name: &str, labels: &[(&str, &str)], start: f64) {
        self.add(
            name,
            labels,
            Motion::Counter {
                start,
                per_sec: 0.2,
                resolution: 1.0,
                idle: 0.9,
            },
        );
    }

    fn gauge(&mut self, name: &str, labels: &[(&str, &str)], start: f64, step: f64, res: f64) {
        self.add(
            name,
            labels,
            Motion::Gauge {
                start,
                step,
                resolution: res,
                min: 0.0,
                max: start * 4.0 + step * 100.0,
            },
        );
    }

    fn constant(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.add(name, labels, Motion::Constant(v));
    }
}

impl TargetTemplate {
    /// The series of a node_exporter 1.x on an 8-CPU virtual machine with a
    /// few disks, network devices and mounts, plus the series Prometheus
    /// adds to every scrape (`up`, `scrape_*`): 1,000 in all.
    pub fn node_exporter() -> Self {
        let mut b = Builder { series: Vec::new() };
        let cpus: Vec<String> = (0..CPUS).map(|c| c.to_string()).collect();

        let modes = [
            ("idle", 0.85),
            ("iowait", 0.01),
            ("irq", 0.0),
            ("nice", 0.0),
            ("softirq", 0.005),
            ("steal", 0.002),
            ("system", 0.04),
            ("user", 0.09),
        ];
        for cpu in &cpus {
            for (mode, share) in modes {
                if share == 0.0 {
                    b.rare_counter(
                        "node_cpu_seconds_total",
                        &[("cpu", cpu), ("mode", mode)],
                        12.0,
                    );
                } else {
                    b.counter(
                        "node_cpu_seconds_total",
                        &[("cpu", cpu), ("mode", mode)],
                        share,
                        0.01,
                    );
                }
            }
            for mode in ["nice", "user"] {
                b.constant(
                    "node_cpu_guest_seconds_total",
                    &[("cpu", cpu), ("mode", mode)],
                    0.0,
                );
            }
            b.gauge(
                "node_cpu_scaling_frequency_hertz",
                &[("cpu", cpu)],
                2.45e9,
                5.0e7,
                1000.0,
            );
            b.counter(
                "node_schedstat_running_seconds_total",
                &[("cpu", cpu)],
                0.15,
                1e-9,
            );
            b.counter(
                "node_schedstat_waiting_seconds_total",
                &[("cpu", cpu)],
                0.01,
                1e-9,
            );
            b.counter(
                "node_schedstat_timeslices_total",
                &[("cpu", cpu)],
                900.0,
                1.0,
            );
            b.counter("node_softnet_processed_total", &[("cpu", cpu)], 300.0, 1.0);
            b.rare_counter("node_softnet_dropped_total", &[("cpu", cpu)], 0.0);
            b.rare_counter("node_softnet_times_squeezed_total", &[("cpu", cpu)], 3.0);
        }

        let interrupts = [
            "LOC", "RES", "CAL", "TLB", "NMI", "PMI", "IWI", "MCP", "ERR", "MIS", "PIN", "NPI",
            "PIW", "SPU", "TRM", "THR", "DFR", "MCE", "0", "1", "4", "8", "9", "12",
        ];
        for cpu in &cpus {
            for (i, t) in interrupts.iter().enumerate() {
                if i % 3 == 0 {
                    b.counter(
                        "node_interrupts_total",
                        &[("cpu", cpu), ("type", t)],
                        40.0,
                        1.0,
                    );
                } else {
                    b.rare_counter("node_interrupts_total", &[("cpu", cpu), ("type", t)], 57.0);
                }
            }
        }

        let mem_total = 32.0 * GIB;
        let memory = [
            "Active",
            "Active_anon",
            "Active_file",
            "AnonHugePages",
            "AnonPages",
            "Bounce",
            "Buffers",
            "Cached",
            "CommitLimit",
            "Committed_AS",
            "DirectMap1G",
            "DirectMap2M",
            "DirectMap4k",
            "Dirty",
            "HardwareCorrupted",
            "HugePages_Free",
            "HugePages_Rsvd",
            "HugePages_Surp",
            "HugePages_Total",
            "Hugepagesize",
            "Inactive",
            "Inactive_anon",
            "Inactive_file",
            "KernelStack",
            "Mapped",
            "MemAvailable",
            "MemFree",
            "Mlocked",
            "NFS_Unstable",
            "PageTables",
            "Percpu",
            "SReclaimable",
            "SUnreclaim",
            "Shmem",
            "ShmemHugePages",
            "ShmemPmdMapped",
            "Slab",
            "SwapCached",
            "SwapFree",
            "SwapTotal",
            "Unevictable",
            "VmallocChunk",
            "VmallocTotal",
            "VmallocUsed",
            "Writeback",
            "WritebackTmp",
        ];
        for (i, m) in memory.iter().enumerate() {
            let name = format!("node_memory_{m}_bytes");
            match i % 4 {
                0 => b.constant(
                    &name,
                    &[],
                    (mem_total / (i + 1) as f64 / 4096.0).floor() * 4096.0,
                ),
                1 => b.constant(&name, &[], 0.0),
                _ => b.gauge(
                    &name,
                    &[],
                    mem_total / (i + 2) as f64,
                    4096.0 * 64.0,
                    4096.0,
                ),
            }
        }
        b.constant("node_memory_MemTotal_bytes", &[], mem_total);

        let devices = ["eth0", "eth1", "lo", "docker0", "veth1a2b3c", "veth4d5e6f"];
        let net = [
            ("bytes", 250_000.0),
            ("packets", 400.0),
            ("errs", 0.0),
            ("drop", 0.0),
            ("fifo", 0.0),
            ("compressed", 0.0),
            ("multicast", 0.0),
        ];
        for dev in devices {
            for dir in ["receive", "transmit"] {
                for (what, per_sec) in net {
                    let name = format!("node_network_{dir}_{what}_total");
                    if per_sec == 0.0 {
                        b.rare_counter(&name, &[("device", dev)], 0.0);
                    } else {
                        b.counter(&name, &[("device", dev)], per_sec, 1.0);
                    }
                }
            }
            b.rare_counter("node_network_receive_frame_total", &[("device", dev)], 0.0);
            b.rare_counter("node_network_transmit_colls_total", &[("device", dev)], 0.0);
            b.rare_counter(
                "node_network_transmit_carrier_total",
                &[("device", dev)],
                0.0,
            );
            b.constant("node_network_up", &[("device", dev)], 1.0);
            b.constant("node_network_mtu_bytes", &[("device", dev)], 1500.0);
            b.constant("node_network_speed_bytes", &[("device", dev)], 1.25e9);
            b.constant("node_network_carrier", &[("device", dev)], 1.0);
            b.constant(
                "node_network_transmit_queue_length",
                &[("device", dev)],
                1000.0,
            );
            b.constant("node_network_iface_id", &[("device", dev)], 2.0);
            b.constant("node_network_flags", &[("device", dev)], 4099.0);
            b.constant("node_network_protocol_type", &[("device", dev)], 1.0);
            b.constant("node_network_dormant", &[("device", dev)], 0.0);
            b.rare_counter(
                "node_network_carrier_changes_total",
                &[("device", dev)],
                2.0,
            );
        }

        let mounts = [
            ("/dev/vda1", "/", "ext4"),
            ("/dev/vda15", "/boot/efi", "vfat"),
            ("/dev/vdb", "/var/lib/data", "xfs"),
            ("/dev/nvme0n1", "/mnt/nvme", "xfs"),
            ("tmpfs", "/run", "tmpfs"),
            ("tmpfs", "/run/lock", "tmpfs"),
            ("tmpfs", "/run/user/1000", "tmpfs"),
            ("tmpfs", "/dev/shm", "tmpfs"),
            (
                "overlay",
                "/var/lib/docker/overlay2/a1b2c3/merged",
                "overlay",
            ),
            (
                "overlay",
                "/var/lib/docker/overlay2/d4e5f6/merged",
                "overlay",
            ),
        ];
        for (i, (dev, mount, fs)) in mounts.iter().enumerate() {
            let l = [("device", *dev), ("fstype", *fs), ("mountpoint", *mount)];
            let size = ((i as f64 + 1.0) * 50.0 * GIB / 4096.0).floor() * 4096.0;
            b.constant("node_filesystem_size_bytes", &l, size);
            b.gauge(
                "node_filesystem_avail_bytes",
                &l,
                size * 0.4,
                4096.0 * 256.0,
                4096.0,
            );
            b.gauge(
                "node_filesystem_free_bytes",
                &l,
                size * 0.45,
                4096.0 * 256.0,
                4096.0,
            );
            b.constant("node_filesystem_files", &l, 3_276_800.0);
            b.gauge("node_filesystem_files_free", &l, 3_000_000.0, 20.0, 1.0);
            b.constant("node_filesystem_readonly", &l, 0.0);
            b.constant("node_filesystem_device_error", &l, 0.0);
        }

        let disks = [
            "vda", "vdb", "nvme0n1", "nvme1n1", "sda", "dm-0", "dm-1", "loop0",
        ];
        for dev in disks {
            let l = [("device", dev)];
            b.counter("node_disk_reads_completed_total", &l, 30.0, 1.0);
            b.counter("node_disk_writes_completed_total", &l, 60.0, 1.0);
            b.counter("node_disk_read_bytes_total", &l, 1.2e6, 512.0);
            b.counter("node_disk_written_bytes_total", &l, 2.5e6, 512.0);
            b.counter("node_disk_reads_merged_total", &l, 3.0, 1.0);
            b.counter("node_disk_writes_merged_total", &l, 20.0, 1.0);
            b.counter("node_disk_read_time_seconds_total", &l, 0.02, 0.001);
            b.counter("node_disk_write_time_seconds_total", &l, 0.05, 0.001);
            b.counter("node_disk_io_time_seconds_total", &l, 0.06, 0.001);
            b.counter("node_disk_io_time_weighted_seconds_total", &l, 0.08, 0.001);
            b.rare_counter("node_disk_discards_completed_total", &l, 100.0);
            b.rare_counter("node_disk_discards_merged_total", &l, 0.0);
            b.rare_counter("node_disk_discarded_sectors_total", &l, 8000.0);
            b.rare_counter("node_disk_discard_time_seconds_total", &l, 1.0);
            b.rare_counter("node_disk_flush_requests_total", &l, 300.0);
            b.rare_counter("node_disk_flush_requests_time_seconds_total", &l, 2.0);
            b.gauge("node_disk_io_now", &l, 1.0, 1.0, 1.0);
            b.constant("node_disk_info", &[("device", dev), ("major", "253")], 1.0);
        }

        let vmstat = [
            "pgfault",
            "pgmajfault",
            "pgpgin",
            "pgpgout",
            "pswpin",
            "pswpout",
            "oom_kill",
            "pgscan_kswapd",
            "pgscan_direct",
            "pgsteal_kswapd",
            "pgsteal_direct",
            "pgrefill",
            "pgactivate",
            "pgdeactivate",
            "pgfree",
            "pgalloc_normal",
            "pgalloc_dma32",
            "thp_fault_alloc",
            "thp_collapse_alloc",
            "workingset_refault_file",
        ];
        for (i, v) in vmstat.iter().enumerate() {
            let name = format!("node_vmstat_{v}");
            if i % 2 == 0 {
                b.counter(&name, &[], 500.0, 1.0);
            } else {
                b.rare_counter(&name, &[], 40.0);
            }
        }
        let netstat = [
            "Icmp_InErrors",
            "Icmp_InMsgs",
            "Icmp_OutMsgs",
            "Icmp6_InErrors",
            "Icmp6_InMsgs",
            "Icmp6_OutMsgs",
            "Ip_Forwarding",
            "Ip6_InOctets",
            "Ip6_OutOctets",
            "IpExt_InOctets",
            "IpExt_OutOctets",
            "Tcp_ActiveOpens",
            "Tcp_CurrEstab",
            "Tcp_InErrs",
            "Tcp_InSegs",
            "Tcp_OutRsts",
            "Tcp_OutSegs",
            "Tcp_PassiveOpens",
            "Tcp_RetransSegs",
            "TcpExt_ListenDrops",
            "TcpExt_ListenOverflows",
            "TcpExt_SyncookiesFailed",
            "TcpExt_SyncookiesRecv",
            "TcpExt_SyncookiesSent",
            "TcpExt_TCPSynRetrans",
            "TcpExt_TCPTimeouts",
            "Udp_InDatagrams",
            "Udp_InErrors",
            "Udp_NoPorts",
            "Udp_OutDatagrams",
            "Udp_RcvbufErrors",
            "Udp_SndbufErrors",
            "Udp6_InDatagrams",
            "Udp6_InErrors",
            "Udp6_NoPorts",
            "Udp6_OutDatagrams",
            "UdpLite_InErrors",
            "UdpLite6_InErrors",
        ];
        for (i, n) in netstat.iter().enumerate() {
            let name = format!("node_netstat_{n}");
            if i % 3 == 0 {
                b.counter(&name, &[], 120.0, 1.0);
            } else {
                b.rare_counter(&name, &[], 12.0);
            }
        }
        let sockstat = [
            "FRAG_inuse",
            "FRAG_memory",
            "RAW_inuse",
            "TCP_alloc",
            "TCP_inuse",
            "TCP_mem",
            "TCP_mem_bytes",
            "TCP_orphan",
            "TCP_tw",
            "UDPLITE_inuse",
            "UDP_inuse",
            "UDP_mem",
            "UDP_mem_bytes",
            "sockets_used",
            "FRAG6_inuse",
            "RAW6_inuse",
            "TCP6_inuse",
            "UDP6_inuse",
            "UDPLITE6_inuse",
            "FRAG6_memory",
        ];
        for (i, n) in sockstat.iter().enumerate() {
            b.gauge(
                &format!("node_sockstat_{n}"),
                &[],
                (i * 17) as f64,
                3.0,
                1.0,
            );
        }

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
        TargetTemplate { series: b.series }
    }

    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

/// The shared seeded generator (SplitMix64): the benchmark needs
/// repeatable noise, not cryptographic quality.
pub use strata_codec::rand::SplitMix64 as Rng;

fn round_to(v: f64, resolution: f64) -> f64 {
    if resolution >= 1.0 {
        (v / resolution).round() * resolution
    } else {
        // Round through the decimal grid so values print as short decimals,
        // the way node_exporter's parsed /proc numbers do.
        let scale = (1.0 / resolution).round();
        (v * scale).round() / scale
    }
}

impl Motion {
    /// The first value a new target reports; `spread` in [0, 1) varies it
    /// between hosts.
    pub fn initial(&self, spread: f64) -> f64 {
        match *self {
            Motion::Constant(v) => v,
            Motion::Counter {
                start, resolution, ..
            } => round_to(start * (0.5 + spread), resolution),
            Motion::Gauge {
                start,
                resolution,
                min,
                max,
                ..
            } => round_to((start * (0.8 + 0.4 * spread)).clamp(min, max), resolution),
        }
    }

    /// The value one scrape of `interval_s` seconds after `prev`.
    pub fn next(&self, prev: f64, interval_s: f64, rng: &mut Rng) -> f64 {
        match *self {
            Motion::Constant(v) => v,
            Motion::Counter {
                per_sec,
                resolution,
                idle,
                ..
            } => {
                if idle > 0.0 && rng.unit() < idle {
                    return prev;
                }
                let inc = per_sec * interval_s * (0.5 + rng.unit());
                round_to(prev + inc.max(resolution), resolution)
            }
            Motion::Gauge {
                step,
                resolution,
                min,
                max,
                ..
            } => {
                let delta = step * (2.0 * rng.unit() - 1.0);
                round_to((prev + delta).clamp(min, max), resolution)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_has_a_thousand_valid_distinct_series() {
        let t = TargetTemplate::node_exporter();
        assert_eq!(t.len(), 1000);
        let names: std::collections::HashSet<_> = t
            .series
            .iter()
            .map(|s| s.labels[0].value.as_str())
            .collect();
        for n in ["up", "node_load1", "go_goroutines", "scrape_series_added"] {
            assert!(names.contains(n), "{n} missing");
        }
        let mut seen = std::collections::HashSet::new();
        for s in &t.series {
            assert!(s.labels.windows(2).all(|w| w[0].name < w[1].name), "{s:?}");
            assert_eq!(s.labels[s.instance_pos].name, "instance");
            assert_eq!(s.labels[0].name, "__name__");
            let key: Vec<_> = s.labels.iter().map(|l| (&l.name, &l.value)).collect();
            assert!(seen.insert(key), "duplicate series {s:?}");
        }
    }

    #[test]
    fn counters_never_fall() {
        let t = TargetTemplate::node_exporter();
        let mut rng = Rng::new(7);
        for s in &t.series {
            if let Motion::Counter { .. } = s.motion {
                let mut v = s.motion.initial(0.3);
                for _ in 0..50 {
                    let n = s.motion.next(v, 10.0, &mut rng);
                    assert!(n >= v);
                    v = n;
                }
            }
        }
    }
}
