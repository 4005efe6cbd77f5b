//! The distributor's own metrics: per shard, requests by status, latency,
//! transport errors and samples forwarded.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use strata_storage::stats::LATENCY_BOUNDS;
use strata_storage::Histogram;

use crate::metrics::{counter_header, histogram_lines};

struct ShardMetrics {
    url: String,
    by_status: Mutex<Vec<(u16, u64)>>,
    latency: Histogram,
    transport_errors: AtomicU64,
    samples: AtomicU64,
}

/// Counters for every writer shard, indexed by shard.
pub struct DistributorMetrics {
    shards: Vec<ShardMetrics>,
}

impl DistributorMetrics {
    pub fn new(writers: &[String]) -> Self {
        Self {
            shards: writers
                .iter()
                .map(|url| ShardMetrics {
                    url: url.clone(),
                    by_status: Mutex::new(Vec::new()),
                    latency: Histogram::new(LATENCY_BOUNDS),
                    transport_errors: AtomicU64::new(0),
                    samples: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// Records one forwarded part: its answer status, how long it took and
    /// how many samples it carried.
    pub fn forwarded(&self, shard: usize, status: u16, took: Duration, samples: u64) {
        let Some(m) = self.shards.get(shard) else {
            return;
        };
        m.latency.observe(took);
        m.samples.fetch_add(samples, Ordering::Relaxed);
        let mut by = m.by_status.lock();
        match by.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => by.push((status, 1)),
        }
    }

    /// Records a part that got no HTTP answer (connection refused, timeout).
    pub fn transport_error(&self, shard: usize) {
        if let Some(m) = self.shards.get(shard) {
            m.transport_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Appends the per-shard metrics in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let labels = |i: usize, m: &ShardMetrics| format!("shard=\"{i}\",writer=\"{}\"", m.url);
        counter_header(
            out,
            "strata_distributor_shard_requests_total",
            "Parts forwarded to each writer shard, by the writer's answer (503 also counts parts that got no answer).",
        );
        for (i, m) in self.shards.iter().enumerate() {
            let mut by = m.by_status.lock().clone();
            by.sort_unstable();
            for (status, n) in by {
                let _ = writeln!(
                    out,
                    "strata_distributor_shard_requests_total{{{},code=\"{status}\"}} {n}",
                    labels(i, m)
                );
            }
        }
        counter_header(
            out,
            "strata_distributor_shard_errors_total",
            "Parts that got no answer from their writer shard (connection refused, reset, timeout).",
        );
        for (i, m) in self.shards.iter().enumerate() {
            let _ = writeln!(
                out,
                "strata_distributor_shard_errors_total{{{}}} {}",
                labels(i, m),
                m.transport_errors.load(Ordering::Relaxed)
            );
        }
        counter_header(
            out,
            "strata_distributor_shard_samples_total",
            "Samples forwarded to each writer shard (whatever the answer).",
        );
        for (i, m) in self.shards.iter().enumerate() {
            let _ = writeln!(
                out,
                "strata_distributor_shard_samples_total{{{}}} {}",
                labels(i, m),
                m.samples.load(Ordering::Relaxed)
            );
        }
        let name = "strata_distributor_shard_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from sending a part to a writer shard to its answer.\n# TYPE {name} histogram"
        );
        for (i, m) in self.shards.iter().enumerate() {
            histogram_lines(out, name, &labels(i, m), &m.latency);
        }
    }
}
