//! Counters and histograms the storage engine keeps for `/metrics`. Plain
//! atomics: the server renders them, no global registry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A cumulative histogram of durations with fixed bucket bounds (seconds).
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
    count: AtomicU64,
}

/// Bucket bounds for latencies from a millisecond to a minute.
pub const LATENCY_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Bucket bounds for in-process steps, from 50 µs to ten seconds.
pub const STEP_BOUNDS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|&b| secs <= b) {
            if let Some(c) = self.counts.get(i) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sum_micros.fetch_add(
            u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// (upper bound, cumulative count) per bucket, then the sum in seconds
    /// and the total count.
    pub fn snapshot(&self) -> (Vec<(f64, u64)>, f64, u64) {
        let mut acc = 0;
        let buckets = self
            .bounds
            .iter()
            .zip(&self.counts)
            .map(|(&b, c)| {
                acc += c.load(Ordering::Relaxed);
                (b, acc)
            })
            .collect();
        (
            buckets,
            self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            self.count.load(Ordering::Relaxed),
        )
    }
}

/// Everything the storage engine counts.
pub struct StorageStats {
    pub samples_appended: AtomicU64,
    /// Native histogram samples appended (or, for a sealed bucket, written
    /// with their log record).
    pub histograms_appended: AtomicU64,
    pub samples_duplicate: AtomicU64,
    pub samples_rejected: AtomicU64,
    pub series_created: AtomicU64,
    /// Series the head had dropped that came back with their old id.
    pub series_returned: AtomicU64,
    pub log_records: AtomicU64,
    pub log_bytes: AtomicU64,
    pub write_errors: AtomicU64,
    pub samples_replayed: AtomicU64,
    pub buckets_sealed: AtomicU64,
    pub sealed_chunk_bytes: AtomicU64,
    pub sealed_index_bytes: AtomicU64,
    pub seal_errors: AtomicU64,
    /// Segments the head spilled to the store before their bucket's seal,
    /// and their bytes.
    pub segments_spilled: AtomicU64,
    pub spilled_bytes: AtomicU64,
    pub spill_errors: AtomicU64,
    /// Late samples (of sealed buckets) written as late segments, those
    /// segments, failed late passes, and buckets whose late segments were
    /// folded into their chunks.
    pub late_samples: AtomicU64,
    pub late_segments: AtomicU64,
    pub late_errors: AtomicU64,
    pub buckets_folded: AtomicU64,
    /// Blocks compaction wrote, and the bytes of their chunks.
    pub blocks_compacted: AtomicU64,
    pub compacted_bytes: AtomicU64,
    /// Keys of buckets that blocks replaced, deleted.
    pub compaction_deleted_keys: AtomicU64,
    /// Merges of every SlateDB table asked for to give back the space of
    /// deleted data (`reclaim.rs`), those done, and those SlateDB turned
    /// down or failed (their bytes are asked for again).
    pub reclaim_merges_asked: AtomicU64,
    pub reclaim_merges_done: AtomicU64,
    pub reclaim_merges_failed: AtomicU64,
    pub seal_duration: Histogram,
    pub durable_wait: Histogram,
    /// Time background batches (seal, spill, compaction) waited for
    /// SlateDB's memtables to drain, counted only when they waited.
    pub background_wait: Histogram,
    /// The coordinator's time per group of requests: applying it to the
    /// head, and its SlateDB write call (which includes SlateDB's
    /// back-pressure waits).
    pub group_apply: Histogram,
    pub log_write: Histogram,
}

impl Default for StorageStats {
    fn default() -> Self {
        Self {
            samples_appended: AtomicU64::new(0),
            histograms_appended: AtomicU64::new(0),
            samples_duplicate: AtomicU64::new(0),
            samples_rejected: AtomicU64::new(0),
            series_created: AtomicU64::new(0),
            series_returned: AtomicU64::new(0),
            log_records: AtomicU64::new(0),
            log_bytes: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            samples_replayed: AtomicU64::new(0),
            buckets_sealed: AtomicU64::new(0),
            sealed_chunk_bytes: AtomicU64::new(0),
            sealed_index_bytes: AtomicU64::new(0),
            seal_errors: AtomicU64::new(0),
            segments_spilled: AtomicU64::new(0),
            spilled_bytes: AtomicU64::new(0),
            spill_errors: AtomicU64::new(0),
            late_samples: AtomicU64::new(0),
            late_segments: AtomicU64::new(0),
            late_errors: AtomicU64::new(0),
            buckets_folded: AtomicU64::new(0),
            blocks_compacted: AtomicU64::new(0),
            compacted_bytes: AtomicU64::new(0),
            compaction_deleted_keys: AtomicU64::new(0),
            reclaim_merges_asked: AtomicU64::new(0),
            reclaim_merges_done: AtomicU64::new(0),
            reclaim_merges_failed: AtomicU64::new(0),
            seal_duration: Histogram::new(LATENCY_BOUNDS),
            durable_wait: Histogram::new(LATENCY_BOUNDS),
            background_wait: Histogram::new(LATENCY_BOUNDS),
            group_apply: Histogram::new(STEP_BOUNDS),
            log_write: Histogram::new(STEP_BOUNDS),
        }
    }
}

pub(crate) fn add(c: &AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}
