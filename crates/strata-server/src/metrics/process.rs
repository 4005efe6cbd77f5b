//! The `process_*` metrics Prometheus' client libraries export (CPU time,
//! memory, file descriptors, start time), read from `/proc` on Linux;
//! elsewhere there are none.

/// Appends the process metrics to `out`.
pub fn render(out: &mut String) {
    if let Some(bytes) = crate::alloc::allocated_bytes() {
        super::gauge(
            out,
            "strata_heap_allocated_bytes",
            "Bytes of the heap blocks allocated and not yet freed, whole blocks counted: resident memory less the allocator's free room, code and stacks.",
            bytes as f64,
        );
    }
    if let Some(bytes) = crate::alloc::committed_bytes() {
        super::gauge(
            out,
            "strata_allocator_committed_bytes",
            "Bytes the allocator holds from the operating system by its own count, an upper bound: the heap's blocks and its free room between them.",
            bytes as f64,
        );
    }
    if let Some(bytes) = crate::alloc::libc_heap_bytes() {
        super::gauge(
            out,
            "strata_libc_heap_bytes",
            "Bytes of the C library's heap, which C code linked in (zstd) allocates from: its arenas and mapped blocks.",
            bytes as f64,
        );
    }
    #[cfg(target_os = "linux")]
    linux::render(out);
    #[cfg(not(target_os = "linux"))]
    let _ = out;
}

#[cfg(target_os = "linux")]
mod linux {
    use super::super::{counter, gauge};

    /// Clock ticks per second of `/proc/self/stat`'s times: `USER_HZ`, 100
    /// on every Linux architecture (Prometheus' Go client assumes it too).
    const TICKS_PER_SECOND: f64 = 100.0;

    pub fn render(out: &mut String) {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // The command name, in parentheses, may hold spaces: the fields
        // are counted after its closing one (field 3, the state, first).
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .collect();
        let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
        if let (Some(utime), Some(stime)) = (field(14), field(15)) {
            counter(
                out,
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
                (utime + stime) / TICKS_PER_SECOND,
            );
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = |key: &str| -> Option<f64> {
            let line = status.lines().find_map(|l| l.strip_prefix(key))?;
            let n: f64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(n * 1024.0)
        };
        if let Some(rss) = kib("VmRSS:") {
            gauge(
                out,
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                rss,
            );
        }
        if let Some(vsz) = kib("VmSize:") {
            gauge(
                out,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                vsz,
            );
        }
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        if let Some(max) = soft_limit(&limits, "Max address space") {
            gauge(
                out,
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                max,
            );
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            gauge(
                out,
                "process_open_fds",
                "Number of open file descriptors.",
                dir.count() as f64,
            );
        }
        if let Some(max) = soft_limit(&limits, "Max open files") {
            gauge(
                out,
                "process_max_fds",
                "Maximum number of open file descriptors.",
                max,
            );
        }
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<f64>().ok())
        });
        if let (Some(boot), Some(start)) = (boot, field(22)) {
            gauge(
                out,
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                boot + start / TICKS_PER_SECOND,
            );
        }
    }

    /// A limit's soft value from `/proc/self/limits`; -1 when unlimited.
    fn soft_limit(limits: &str, name: &str) -> Option<f64> {
        let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
        match rest.split_whitespace().next()? {
            "unlimited" => Some(-1.0),
            v => v.parse().ok(),
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn this_process_has_memory_files_and_a_start() {
            let mut out = String::new();
            super::render(&mut out);
            let value = |name: &str| -> f64 {
                let line = out
                    .lines()
                    .find(|l| l.starts_with(&format!("{name} ")))
                    .unwrap_or_else(|| panic!("{name} missing in\n{out}"));
                line.rsplit(' ').next().unwrap().parse().unwrap()
            };
            assert!(value("process_resident_memory_bytes") > 1e6);
            assert!(
                value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes")
            );
            assert!(value("process_open_fds") >= 3.0);
            assert!(value("process_max_fds") >= value("process_open_fds"));
            assert!(value("process_cpu_seconds_total") >= 0.0);
            use strata_codec::clock::Clock as _;
            let now = strata_codec::clock::SystemClock.now_ms() as f64 / 1e3;
            let start = value("process_start_time_seconds");
            assert!(
                start <= now + 1.0 && start > now - 86_400.0,
                "{start} vs {now}"
            );
        }
    }
}
