//! The host's series: CPU, memory, network devices, mounts and disks,
//! and the kernel's counters.

use super::Builder;
use crate::node::{CPUS, GIB};

/// The CPU time by CPU and mode, and the interrupts by CPU.
pub(super) fn cpu(b: &mut Builder) {
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
        "LOC", "RES", "CAL", "TLB", "NMI", "PMI", "IWI", "MCP", "ERR", "MIS", "PIN", "NPI", "PIW",
        "SPU", "TRM", "THR", "DFR", "MCE", "0", "1", "4", "8", "9", "12",
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
}

/// `/proc/meminfo`'s gauges.
pub(super) fn memory(b: &mut Builder) {
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
}

/// The network devices' counters and flags.
pub(super) fn network(b: &mut Builder) {
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
}

/// The mounts' sizes and the disks' I/O counters.
pub(super) fn storage(b: &mut Builder) {
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
}

/// `vmstat`, `netstat` and `sockstat`: the kernel's counters.
pub(super) fn kernel(b: &mut Builder) {
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
}
