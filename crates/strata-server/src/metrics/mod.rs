//! The server's own metrics and the Prometheus text rendering of them, of
//! the storage engine's counters, of the process and of the build. No
//! global registry: the state owns it.

mod process;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use strata_remote_write::Encoding;
use strata_storage::stats::LATENCY_BOUNDS;
use strata_storage::{Histogram, Storage, Writer};

/// One latency histogram per (handler, status).
type RequestHistograms = Vec<((&'static str, u16), std::sync::Arc<Histogram>)>;

/// Requests and latency by handler and status.
#[derive(Default)]
pub struct ServerMetrics {
    requests: Mutex<RequestHistograms>,
    pub samples_received: AtomicU64,
    pub rate_limited: AtomicU64,
    pub auth_failures: AtomicU64,
    /// Remote-write requests by body encoding, in [`ENCODINGS`]' order.
    pub encoded_requests: [AtomicU64; ENCODINGS.len()],
}

/// The encodings `strata_remote_write_requests_total` counts.
const ENCODINGS: [Encoding; 2] = [Encoding::Snappy, Encoding::Zstd];

impl ServerMetrics {
    /// Counts a remote-write request compressed with `encoding`.
    pub fn count_encoding(&self, encoding: Encoding) {
        for (e, c) in ENCODINGS.iter().zip(&self.encoded_requests) {
            if *e == encoding {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl ServerMetrics {
    pub fn observe(&self, handler: &'static str, status: u16, d: Duration) {
        let h = {
            let mut reqs = self.requests.lock();
            match reqs.iter().find(|(k, _)| *k == (handler, status)) {
                Some((_, h)) => std::sync::Arc::clone(h),
                None => {
                    let h = std::sync::Arc::new(Histogram::new(LATENCY_BOUNDS));
                    reqs.push(((handler, status), std::sync::Arc::clone(&h)));
                    h
                }
            }
        };
        h.observe(d);
    }
}

/// The `# HELP` and `# TYPE` lines of a counter with labelled samples.
pub(crate) fn counter_header(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
}

fn counter(out: &mut String, name: &str, help: &str, v: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
    );
}

fn gauge(out: &mut String, name: &str, help: &str, v: f64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

pub(crate) fn histogram_lines(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let (buckets, sum, count) = h.snapshot();
    let sep = if labels.is_empty() { "" } else { "," };
    for (le, c) in buckets {
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {c}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(
        out,
        "{name}_sum{braces} {sum}\n{name}_count{braces} {count}"
    );
}

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    histogram_lines(out, name, "", h);
}

/// `strata_build_info`: always 1, the build in its labels, as
/// `prometheus_build_info` is.
fn build_info(out: &mut String) {
    use strata_storage::slatedb_metrics::escape_label_value as label_value;
    let b = &crate::build_info::BUILD;
    let _ = writeln!(
        out,
        "# HELP strata_build_info A metric with a constant '1' value labeled by version, revision, branch and the Rust compiler's version from which strata was built.\n\
         # TYPE strata_build_info gauge\n\
         strata_build_info{{version=\"{}\",revision=\"{}\",branch=\"{}\",rustc_version=\"{}\"}} 1",
        label_value(b.version),
        label_value(b.revision),
        label_value(b.branch),
        label_value(b.rustc)
    );
}

/// Renders every metric in the Prometheus text format (0.0.4).
/// `writer` is set on a writer only; `storage` is its database's (or a
/// reader node's first) read handle.
pub fn render(
    m: &ServerMetrics,
    storage: Option<&Storage>,
    writer: Option<&Writer>,
    ready: bool,
) -> String {
    let mut out = String::with_capacity(8192);
    process::render(&mut out);
    build_info(&mut out);
    let _ = writeln!(
        out,
        "# HELP strata_http_request_duration_seconds HTTP request latency by handler and status.\n# TYPE strata_http_request_duration_seconds histogram"
    );
    let mut reqs: Vec<_> = m
        .requests
        .lock()
        .iter()
        .map(|(k, h)| (*k, std::sync::Arc::clone(h)))
        .collect();
    reqs.sort_by_key(|(k, _)| *k);
    for ((handler, status), h) in &reqs {
        histogram_lines(
            &mut out,
            "strata_http_request_duration_seconds",
            &format!("handler=\"{handler}\",code=\"{status}\""),
            h,
        );
    }
    let _ = writeln!(out, "# HELP strata_http_requests_total HTTP requests by handler and status.\n# TYPE strata_http_requests_total counter");
    for ((handler, status), h) in &reqs {
        let _ = writeln!(
            out,
            "strata_http_requests_total{{handler=\"{handler}\",code=\"{status}\"}} {}",
            h.snapshot().2
        );
    }
    counter(
        &mut out,
        "strata_remote_write_samples_received_total",
        "Samples received in remote-write requests.",
        m.samples_received.load(Ordering::Relaxed),
    );
    counter_header(
        &mut out,
        "strata_remote_write_requests_total",
        "Remote-write requests by body encoding (Content-Encoding).",
    );
    for (encoding, c) in ENCODINGS.iter().zip(&m.encoded_requests) {
        let _ = writeln!(
            out,
            "strata_remote_write_requests_total{{encoding=\"{}\"}} {}",
            encoding.name(),
            c.load(Ordering::Relaxed)
        );
    }
    counter(
        &mut out,
        "strata_remote_write_rate_limited_total",
        "Remote-write requests refused by the ingest-rate limit.",
        m.rate_limited.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "strata_http_unauthorized_total",
        "Requests refused with 401 for missing or invalid credentials.",
        m.auth_failures.load(Ordering::Relaxed),
    );
    gauge(
        &mut out,
        "strata_ready",
        "1 once recovery is done and the server takes writes.",
        f64::from(u8::from(ready)),
    );
    let Some(s) = storage else {
        return out;
    };
    let st = s.stats();
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    counter(
        &mut out,
        "strata_samples_ingested_total",
        "Samples appended to the head.",
        l(&st.samples_appended),
    );
    counter(
        &mut out,
        "strata_histogram_samples_ingested_total",
        "Native histogram samples appended to the head (or written with their log record, for a sealed bucket).",
        l(&st.histograms_appended),
    );
    counter(
        &mut out,
        "strata_samples_duplicate_total",
        "Exact duplicate samples accepted and not stored again.",
        l(&st.samples_duplicate),
    );
    counter(
        &mut out,
        "strata_samples_rejected_total",
        "Samples rejected (out of order, conflicting, too old).",
        l(&st.samples_rejected),
    );
    counter(
        &mut out,
        "strata_series_created_total",
        "Series created with a new id.",
        l(&st.series_created),
    );
    counter(
        &mut out,
        "strata_series_returned_total",
        "Series the head had dropped that came back, found by the store's labels index with their old id.",
        l(&st.series_returned),
    );
    counter(
        &mut out,
        "strata_log_records_total",
        "Log records written.",
        l(&st.log_records),
    );
    counter(
        &mut out,
        "strata_log_bytes_total",
        "Bytes of log records written.",
        l(&st.log_bytes),
    );
    counter(
        &mut out,
        "strata_storage_write_errors_total",
        "SlateDB writes that failed.",
        l(&st.write_errors),
    );
    counter(
        &mut out,
        "strata_samples_replayed_total",
        "Samples replayed from the log at start-up.",
        l(&st.samples_replayed),
    );
    counter(
        &mut out,
        "strata_buckets_sealed_total",
        "Buckets sealed.",
        l(&st.buckets_sealed),
    );
    counter(
        &mut out,
        "strata_sealed_chunk_bytes_total",
        "Bytes of sealed chunks written.",
        l(&st.sealed_chunk_bytes),
    );
    counter(
        &mut out,
        "strata_head_segments_spilled_total",
        "Segments the head wrote to the store before their bucket was sealed.",
        l(&st.segments_spilled),
    );
    counter(
        &mut out,
        "strata_head_spilled_bytes_total",
        "Bytes of segments the head wrote to the store before their bucket was sealed.",
        l(&st.spilled_bytes),
    );
    counter(
        &mut out,
        "strata_head_spill_errors_total",
        "Spill passes that failed to write to the store (the samples stay in memory).",
        l(&st.spill_errors),
    );
    counter(
        &mut out,
        "strata_late_samples_total",
        "Late samples (of buckets already sealed) written to the store as late segments.",
        l(&st.late_samples),
    );
    counter(
        &mut out,
        "strata_late_segments_total",
        "Late segments written to sealed buckets.",
        l(&st.late_segments),
    );
    counter(
        &mut out,
        "strata_late_errors_total",
        "Late passes that failed to write to the store (the samples stay in memory and are retried).",
        l(&st.late_errors),
    );
    counter(
        &mut out,
        "strata_buckets_folded_total",
        "Sealed buckets whose late segments were folded into their chunks.",
        l(&st.buckets_folded),
    );
    counter(
        &mut out,
        "strata_blocks_compacted_total",
        "Blocks compaction wrote from sealed buckets.",
        l(&st.blocks_compacted),
    );
    counter(
        &mut out,
        "strata_compacted_bytes_total",
        "Bytes of the chunks compaction wrote to blocks.",
        l(&st.compacted_bytes),
    );
    counter(
        &mut out,
        "strata_compaction_deleted_keys_total",
        "Keys of sealed buckets deleted after compaction wrote them into blocks.",
        l(&st.compaction_deleted_keys),
    );
    counter(
        &mut out,
        "strata_reclaim_merges_asked_total",
        "Merges of every SlateDB table and run asked for to give back the space of deleted data.",
        l(&st.reclaim_merges_asked),
    );
    counter(
        &mut out,
        "strata_reclaim_merges_done_total",
        "Merges asked for to give back space that SlateDB has finished.",
        l(&st.reclaim_merges_done),
    );
    counter(
        &mut out,
        "strata_reclaim_merges_failed_total",
        "Merges asked for to give back space that SlateDB turned down or failed; their bytes are asked for again.",
        l(&st.reclaim_merges_failed),
    );
    gauge(
        &mut out,
        "strata_reclaimable_bytes",
        "Bytes compaction deleted or overwrote since the last merge asked for to give their space back.",
        s.reclaimable_bytes() as f64,
    );
    counter(
        &mut out,
        "strata_sealed_index_bytes_total",
        "Bytes of postings and series keys written while sealing.",
        l(&st.sealed_index_bytes),
    );
    counter(
        &mut out,
        "strata_seal_errors_total",
        "Seals that failed (retried).",
        l(&st.seal_errors),
    );
    histogram(
        &mut out,
        "strata_seal_duration_seconds",
        "Time to seal one bucket.",
        &st.seal_duration,
    );
    histogram(
        &mut out,
        "strata_wal_durable_wait_seconds",
        "Time Durable writes waited for the WAL flush to the object store.",
        &st.durable_wait,
    );
    histogram(
        &mut out,
        "strata_background_wait_seconds",
        "Time a seal's, spill's or compaction's write waited for SlateDB's memtables to drain below storage.memtable_bytes.",
        &st.background_wait,
    );
    histogram(
        &mut out,
        "strata_coordinator_apply_seconds",
        "Time the write coordinator took to apply one group of requests to the head.",
        &st.group_apply,
    );
    histogram(
        &mut out,
        "strata_log_write_seconds",
        "Time of the write coordinator's SlateDB write per group of requests, back-pressure waits included.",
        &st.log_write,
    );
    gauge(
        &mut out,
        "strata_coordinator_queue_depth",
        "Write requests waiting for the coordinator.",
        writer.map_or(0, |w| w.queue_depth()) as f64,
    );
    gauge(
        &mut out,
        "strata_head_series",
        "Series in the head: those with samples not yet sealed.",
        s.head().num_series() as f64,
    );
    counter(
        &mut out,
        "strata_head_series_dropped_total",
        "Series dropped from the head once their buckets were all sealed.",
        s.head().series_dropped() as f64,
    );
    gauge(
        &mut out,
        "strata_head_recent_series_bytes",
        "Bytes of the cache of series dropped from the head (labels by id, id by labels) and of the filter of label hashes the store's labels index holds.",
        s.head().recent_series_bytes() as f64,
    );
    // One walk over every series for the total and its parts: at 1 M
    // series a walk takes tens of milliseconds of the index's read lock.
    let mem = s.head().memory();
    gauge(
        &mut out,
        "strata_head_memory_bytes",
        "Estimated bytes held by the head.",
        mem.total() as f64,
    );
    gauge(
        &mut out,
        "strata_head_run_file_bytes",
        "Bytes of the head's frozen runs, kept in unlinked files in the temporary folder (the page cache's, not the heap's), runs a freeze replaced included; each bucket's go at its seal.",
        s.head().run_file_bytes() as f64,
    );
    let _ = writeln!(
        out,
        "# HELP strata_head_memory_part_bytes Estimated bytes held by the head, by part: the series' structs, their labels, open chunks, out-of-order and late samples, and the index (maps and postings).\n# TYPE strata_head_memory_part_bytes gauge"
    );
    for (part, v) in [
        ("series", mem.series),
        ("labels", mem.labels),
        ("chunks", mem.chunks),
        ("extras", mem.extras),
        ("index", mem.index),
    ] {
        let _ = writeln!(out, "strata_head_memory_part_bytes{{part=\"{part}\"}} {v}");
    }
    let exemplars = s.head().exemplars();
    gauge(
        &mut out,
        "strata_head_exemplars",
        "Exemplars the head's ring holds (at most storage.max_exemplars).",
        exemplars.len() as f64,
    );
    gauge(
        &mut out,
        "strata_head_exemplar_bytes",
        "Estimated bytes of the head's exemplar ring.",
        exemplars.heap_bytes() as f64,
    );
    gauge(
        &mut out,
        "strata_head_extra_samples",
        "Out-of-order samples, and late samples not yet written to their sealed bucket, held in the head.",
        s.head().extra_samples() as f64,
    );
    let cache = s.cache_usage();
    let _ = writeln!(
        out,
        "# HELP strata_memory_cache_bytes Bytes in SlateDB's in-memory block cache, by part.\n\
         # TYPE strata_memory_cache_bytes gauge\n\
         strata_memory_cache_bytes{{part=\"blocks\"}} {}\n\
         strata_memory_cache_bytes{{part=\"meta\"}} {}",
        cache.blocks_bytes, cache.meta_bytes
    );
    gauge(
        &mut out,
        "strata_memory_cache_capacity_bytes",
        "Capacity of SlateDB's in-memory block cache, both parts.",
        cache.capacity_bytes as f64,
    );
    gauge(
        &mut out,
        "strata_fenced",
        "1 if a newer writer fenced this one.",
        f64::from(u8::from(s.is_fenced())),
    );
    let os = s.object_store_stats();
    counter(
        &mut out,
        "strata_object_store_requests_total",
        "Object-store requests.",
        os.requests,
    );
    counter(
        &mut out,
        "strata_object_store_errors_total",
        "Object-store requests that failed.",
        os.errors,
    );
    counter(
        &mut out,
        "strata_object_store_read_bytes_total",
        "Bytes read from the object store.",
        os.bytes_read,
    );
    counter(
        &mut out,
        "strata_object_store_written_bytes_total",
        "Bytes written to the object store.",
        os.bytes_written,
    );
    out.push_str(&s.slatedb_metrics_text());
    out
}
