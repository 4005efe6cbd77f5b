//! SlateDB's metrics in the Prometheus text format, described as Prometheus
//! names things: every family with help text, counters ending in `_total`,
//! gauges without `_count`, units spelled out in base units. SlateDB names
//! them `slatedb.db.backpressure_count` and leaves most undescribed; the
//! [`FAMILIES`] table says what each is exported as. A metric a newer
//! SlateDB adds is exported by rule (dots to underscores, `_count` to
//! `_total` on counters) with SlateDB's description or its name.

use std::fmt::Write as _;

use slatedb_common::metrics::{MetricValue, Metrics};

/// How one SlateDB metric is exported.
pub struct Family {
    /// SlateDB's dotted name.
    pub slatedb: &'static str,
    /// The exported name.
    pub name: &'static str,
    pub help: &'static str,
    /// Multiplies gauge values (a millisecond timestamp exported in
    /// seconds).
    pub scale: f64,
}

const fn family(slatedb: &'static str, name: &'static str, help: &'static str) -> Family {
    Family {
        slatedb,
        name,
        help,
        scale: 1.0,
    }
}

/// Every metric SlateDB 0.18 registers for a writer, a reader and their
/// compactor and garbage collector.
#[rustfmt::skip]
pub const FAMILIES: &[Family] = &[
    family("slatedb.db.request_count", "slatedb_db_requests_total", "Gets, scans and flushes asked of SlateDB, by operation."),
    family("slatedb.db.write_ops", "slatedb_db_write_ops_total", "Write operations (puts, deletes, merges) applied to SlateDB."),
    family("slatedb.db.write_batch_count", "slatedb_db_write_batches_total", "Write batches applied to SlateDB."),
    family("slatedb.db.backpressure_count", "slatedb_db_backpressure_total", "Times a write waited because unflushed memtable bytes were over their limit."),
    family("slatedb.db.l0_stall_count", "slatedb_db_l0_stalls_total", "Times a memtable flush waited for compaction because L0 held too many SSTs, by cause."),
    family("slatedb.db.immutable_memtable_flushes", "slatedb_db_immutable_memtable_flushes_total", "Immutable memtables flushed to L0."),
    family("slatedb.db.total_mem_size_bytes", "slatedb_db_total_mem_size_bytes", "Bytes in memtables, mutable and immutable, not yet flushed to L0."),
    family("slatedb.db.l0_sst_count", "slatedb_db_l0_ssts", "SSTs in L0."),
    family("slatedb.db.segment_max_l0_sst_count", "slatedb_db_segment_max_l0_ssts", "The most L0 SSTs in any one segment of the database."),
    family("slatedb.db.sorted_run_count", "slatedb_db_sorted_runs", "Compacted sorted runs below L0."),
    family("slatedb.db.sst_view_count", "slatedb_db_sst_views", "SST views the current manifest references."),
    family("slatedb.db.sst_count", "slatedb_db_ssts", "SSTs the current manifest references."),
    family("slatedb.db.external_db_count", "slatedb_db_external_dbs", "External databases (sources of clones) the manifest references."),
    family("slatedb.db.l0_flush_bytes", "slatedb_db_l0_flush_bytes_total", "Bytes of SSTs memtable flushes wrote to L0."),
    family("slatedb.db.sst_filter_false_positive_count", "slatedb_db_sst_filter_false_positives_total", "Filter checks that let a read into an SST without the key, by query kind."),
    family("slatedb.db.sst_filter_positive_count", "slatedb_db_sst_filter_positives_total", "Filter checks that said an SST may hold the key, by query kind."),
    family("slatedb.db.sst_filter_negative_count", "slatedb_db_sst_filter_negatives_total", "Filter checks that ruled an SST out, by query kind."),
    family("slatedb.db.memtable_write_bytes", "slatedb_db_memtable_write_bytes_total", "Bytes of key-value pairs inserted into the memtable (the denominator of write amplification)."),
    family("slatedb.merge_operator_operands", "slatedb_merge_operator_operands_total", "Merge operator operands resolved, by path (read, flush, compact)."),
    family("slatedb.db_cache.access_count", "slatedb_db_cache_accesses_total", "In-memory block cache lookups, by entry kind and result."),
    family("slatedb.db_cache.error_count", "slatedb_db_cache_errors_total", "In-memory block cache lookups that failed."),
    family("slatedb.wal.wal_buffer_estimated_bytes", "slatedb_wal_buffer_estimated_bytes", "Estimated bytes in the WAL buffer, not yet written to the object store."),
    family("slatedb.wal.wal_buffer_flushes", "slatedb_wal_buffer_flushes_total", "WAL buffer flushes to the object store."),
    family("slatedb.wal.wal_buffer_flush_requests", "slatedb_wal_buffer_flush_requests_total", "Requests to flush the WAL buffer."),
    family("slatedb.wal.wal_flush_bytes", "slatedb_wal_flush_bytes_total", "Bytes of WAL SSTs written to the object store."),
    family("slatedb.memtable_flush.memtable_freeze_count", "slatedb_memtable_flush_memtable_freezes_total", "Memtables frozen (made immutable) to be flushed."),
    family("slatedb.memtable_flush.checkpoint_request_count", "slatedb_memtable_flush_checkpoint_requests_total", "Checkpoint requests the memtable flusher handled."),
    family("slatedb.memtable_flush.flush_request_count", "slatedb_memtable_flush_flush_requests_total", "Flush requests the memtable flusher handled."),
    family("slatedb.memtable_flush.l0_upload_count", "slatedb_memtable_flush_l0_uploads_total", "L0 SSTs the memtable flusher uploaded."),
    family("slatedb.memtable_flush.l0_flush_count", "slatedb_memtable_flush_l0_flushes_total", "L0 flushes the memtable flusher recorded in the manifest."),
    family("slatedb.memtable_flush.manifest_refresh_count", "slatedb_memtable_flush_manifest_refreshes_total", "Manifest reloads by the memtable flusher."),
    family("slatedb.object_store.request_count", "slatedb_object_store_requests_total", "Object store API requests SlateDB made, by component, store and API."),
    family("slatedb.object_store.error_count", "slatedb_object_store_errors_total", "Object store API requests SlateDB made that failed."),
    family("slatedb.object_store.request_duration_seconds", "slatedb_object_store_request_duration_seconds", "Latency of SlateDB's object store API requests."),
    family("slatedb.object_store_cache.part_hit_count", "slatedb_object_store_cache_part_hits_total", "Object parts found in the on-disk cache."),
    family("slatedb.object_store_cache.part_access_count", "slatedb_object_store_cache_part_accesses_total", "Object parts looked up in the on-disk cache."),
    family("slatedb.object_store_cache.cache_keys", "slatedb_object_store_cache_keys", "Object parts in the on-disk cache."),
    family("slatedb.object_store_cache.cache_bytes", "slatedb_object_store_cache_bytes", "Bytes in the on-disk cache."),
    family("slatedb.object_store_cache.evicted_keys", "slatedb_object_store_cache_evicted_keys_total", "Object parts evicted from the on-disk cache."),
    family("slatedb.object_store_cache.evicted_bytes", "slatedb_object_store_cache_evicted_bytes_total", "Bytes evicted from the on-disk cache."),
    family("slatedb.gc.deleted_count", "slatedb_gc_deleted_total", "Objects the garbage collector deleted, by resource."),
    family("slatedb.gc.count", "slatedb_gc_runs_total", "Garbage collector runs."),
    family("slatedb.gc.version_count", "slatedb_gc_versions", "Versions of the manifest and of the compactions state kept, by resource."),
    family("slatedb.compactor.bytes_compacted", "slatedb_compactor_bytes_compacted_total", "Bytes compaction wrote to SSTs, by worker."),
    family("slatedb.compactor.epoch", "slatedb_compactor_epoch", "The compactor's epoch, raised by each compactor that takes over."),
    family("slatedb.compactor.last_compaction_timestamp_sec", "slatedb_compactor_last_compaction_timestamp_seconds", "When the last compaction finished, in Unix seconds."),
    family("slatedb.compactor.running_compactions", "slatedb_compactor_running_compactions", "Compactions running, by worker."),
    family("slatedb.compactor.ssts_written", "slatedb_compactor_ssts_written_total", "SSTs compaction wrote, by worker."),
    family("slatedb.compactor.jobs_claimed", "slatedb_compactor_jobs_claimed_total", "Compaction jobs a worker started."),
    family("slatedb.compactor.jobs_reclaimed", "slatedb_compactor_jobs_reclaimed_total", "Stale compaction jobs reset for another worker."),
    family("slatedb.compactor.incremental_released_bytes", "slatedb_compactor_incremental_released_bytes_total", "Estimated bytes of the input SSTs that incremental compaction commits released."),
    family("slatedb.compactor.total_bytes_being_compacted", "slatedb_compactor_bytes_being_compacted", "Bytes of the SSTs in compactions under way."),
    family("slatedb.compactor.total_throughput_bytes_per_sec", "slatedb_compactor_throughput_bytes_per_second", "Compaction throughput, in bytes per second."),
    family("slatedb.compactor.expired_entries_purged", "slatedb_compactor_expired_entries_purged_total", "Expired entries compaction purged: values rewritten as tombstones, merge operands dropped."),
    Family {
        slatedb: "slatedb.compactor.worker_last_heartbeat_ms",
        name: "slatedb_compactor_worker_last_heartbeat_timestamp_seconds",
        help: "A compaction worker's last heartbeat, in Unix seconds.",
        scale: 0.001,
    },
];

/// What `metric` is exported as: the table's entry, or one by rule.
fn describe(slatedb: &str, description: &str, counter: bool) -> (String, String, f64) {
    if let Some(f) = FAMILIES.iter().find(|f| f.slatedb == slatedb) {
        return (f.name.to_owned(), f.help.to_owned(), f.scale);
    }
    let mut name: String = slatedb
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if counter && !name.ends_with("_total") {
        name = format!("{}_total", name.strip_suffix("_count").unwrap_or(&name));
    }
    let help = match description.trim() {
        "" => format!("SlateDB's {slatedb}."),
        d => d.replace('\n', " "),
    };
    (name, help, 1.0)
}

/// One family's lines, gathered: a family's samples must be contiguous.
struct Rendered {
    name: String,
    head: String,
    samples: String,
}

/// Renders a snapshot of SlateDB's metrics in the Prometheus text format.
pub fn render(m: &Metrics) -> String {
    let mut families: Vec<Rendered> = Vec::new();
    for metric in m.all() {
        let (kind, counter) = match metric.value {
            MetricValue::Counter(_) => ("counter", true),
            MetricValue::Gauge(_) | MetricValue::UpDownCounter(_) => ("gauge", false),
            MetricValue::Histogram { .. } => ("histogram", false),
        };
        let (name, help, scale) = describe(&metric.name, &metric.description, counter);
        let at = match families.iter().position(|f| f.name == name) {
            Some(at) => at,
            None => {
                families.push(Rendered {
                    head: format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"),
                    name,
                    samples: String::new(),
                });
                families.len() - 1
            }
        };
        let Some(family) = families.get_mut(at) else {
            continue;
        };
        let labels: Vec<String> = metric
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v)))
            .collect();
        let braces = |extra: &str| {
            let all: Vec<&str> = labels
                .iter()
                .map(String::as_str)
                .chain((!extra.is_empty()).then_some(extra))
                .collect();
            if all.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", all.join(","))
            }
        };
        let name = &family.name;
        let out = &mut family.samples;
        match &metric.value {
            MetricValue::Counter(v) => {
                let _ = writeln!(out, "{name}{} {v}", braces(""));
            }
            MetricValue::Gauge(v) | MetricValue::UpDownCounter(v) => {
                let _ = writeln!(out, "{name}{} {}", braces(""), *v as f64 * scale);
            }
            MetricValue::Histogram {
                count,
                sum,
                boundaries,
                bucket_counts,
                ..
            } => {
                let mut acc = 0;
                for (b, c) in boundaries.iter().zip(bucket_counts) {
                    acc += c;
                    let _ = writeln!(out, "{name}_bucket{} {acc}", braces(&format!("le=\"{b}\"")));
                }
                let _ = writeln!(out, "{name}_bucket{} {count}", braces("le=\"+Inf\""));
                let _ = writeln!(out, "{name}_sum{} {sum}", braces(""));
                let _ = writeln!(out, "{name}_count{} {count}", braces(""));
            }
        }
    }
    families.iter().fold(String::new(), |mut out, f| {
        out.push_str(&f.head);
        out.push_str(&f.samples);
        out
    })
}

/// A label value in the text format: backslash, quote and newline escaped.
pub fn escape_label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_names_follow_prometheus_conventions() {
        for f in FAMILIES {
            let n = f.name;
            assert!(n.starts_with("slatedb_"), "{n}");
            let abbreviated = n.split('_').any(|w| matches!(w, "sec" | "ms" | "count"));
            assert!(!abbreviated, "{n}");
            assert!(f.help.ends_with('.'), "{n}");
            assert_eq!(
                FAMILIES.iter().filter(|g| g.slatedb == f.slatedb).count(),
                1,
                "{n}"
            );
        }
    }

    #[test]
    fn unknown_metrics_are_exported_by_rule() {
        assert_eq!(
            describe("slatedb.new.thing_count", "", true),
            (
                "slatedb_new_thing_total".into(),
                "SlateDB's slatedb.new.thing_count.".into(),
                1.0
            )
        );
        assert_eq!(
            describe("slatedb.new.size_bytes", "Size.\n", false).0,
            "slatedb_new_size_bytes"
        );
    }
}
