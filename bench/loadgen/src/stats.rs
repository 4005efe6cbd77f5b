//! Counters and latencies of a run, the periodic progress line and the final
//! summary.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;

/// Latencies of acknowledged batches, in microseconds, kept whole: a run
/// sends at most a few hundred batches a second.
#[derive(Default, Debug, Clone)]
pub struct Latencies(Vec<u32>);

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.0
            .push(u32::try_from(d.as_micros()).unwrap_or(u32::MAX));
    }

    pub fn summary(&self) -> LatencySummary {
        let mut v = self.0.clone();
        v.sort_unstable();
        let q = |p: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let i = ((v.len() as f64 - 1.0) * p).round() as usize;
            f64::from(v.get(i).copied().unwrap_or(0)) / 1000.0
        };
        LatencySummary {
            count: v.len() as u64,
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p99_ms: q(0.99),
            max_ms: q(1.0),
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[derive(Serialize, Debug, Clone, Copy, Default)]
pub struct LatencySummary {
    /// Batches acknowledged.
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Everything the senders and the scheduler count, behind one lock.
#[derive(Default, Debug)]
pub struct Counters {
    pub offered_samples: u64,
    pub accepted_samples: u64,
    pub accepted_batches: u64,
    pub dropped_samples: u64,
    pub dropped_batches: u64,
    /// Batches given up on: refused (4xx other than 429) or still failing
    /// when their retry budget ran out.
    pub failed_batches: u64,
    pub failed_samples: u64,
    /// Attempts answered 5xx or 429, or that failed to connect.
    pub retried_attempts: u64,
    pub statuses: BTreeMap<String, u64>,
    pub latencies: Latencies,
    /// Since the last progress line.
    pub window: Latencies,
    /// Since the last progress line, the two parts of each acknowledged
    /// batch's latency: its wait from the scheduled time until a sender
    /// started encoding it, and the round trip of its accepted attempt.
    pub window_wait: Latencies,
    pub window_rtt: Latencies,
    pub last_error: Option<String>,
}

/// The JSON a run prints when it ends.
#[derive(Serialize, Debug, Clone)]
pub struct Summary {
    pub url: String,
    pub duration_s: f64,
    pub rate_offered: f64,
    pub targets: usize,
    pub series_per_target: usize,
    pub scrape_interval_s: f64,
    pub batch_size: usize,
    pub senders: usize,
    pub churn: f64,
    pub samples_offered: u64,
    pub samples_accepted: u64,
    /// Accepted samples over the scheduled duration.
    pub accepted_per_s: f64,
    pub unique_series: u64,
    pub replaced_targets: u64,
    pub latency: LatencySummary,
    pub dropped_samples: u64,
    pub dropped_batches: u64,
    /// Batches still queued or in flight when the drain timeout ran out.
    pub unfinished_samples: u64,
    pub failed_batches: u64,
    pub failed_samples: u64,
    pub retried_attempts: u64,
    /// Count of answers by status ("204", "429", "connect", ...).
    pub statuses: BTreeMap<String, u64>,
    pub last_error: Option<String>,
}

impl Summary {
    /// True if every offered sample was accepted: no drops, no failures,
    /// nothing left unsent.
    pub fn clean(&self) -> bool {
        self.dropped_samples == 0 && self.failed_batches == 0 && self.unfinished_samples == 0
    }
}

/// One progress line (stderr), also available as JSON for scripts.
#[derive(Serialize, Debug, Clone)]
pub struct Progress {
    pub elapsed_s: f64,
    /// Accepted samples per second since the last line.
    pub accepted_per_s: f64,
    pub samples_accepted: u64,
    pub unique_series: u64,
    pub queued_batches: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// p99 of the wait for a free sender, since the last line.
    pub wait_p99_ms: f64,
    /// p99 of the accepted attempt's round trip (request sent to answer
    /// read), since the last line.
    pub rtt_p99_ms: f64,
    pub dropped_samples: u64,
    pub failed_batches: u64,
    pub retried_attempts: u64,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{:>6.0}s] accepted {:>9.0}/s  series {:>8}  queue {:>4}  p50 {:>7.1}ms  p99 {:>7.1}ms  max {:>7.1}ms  (wait p99 {:.1}ms, rtt p99 {:.1}ms)  dropped {}  failed {}  retried {}",
            self.elapsed_s,
            self.accepted_per_s,
            self.unique_series,
            self.queued_batches,
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.wait_p99_ms,
            self.rtt_p99_ms,
            self.dropped_samples,
            self.failed_batches,
            self.retried_attempts
        )
    }
}

/// The counters, shared by the scheduler, the senders and the reporter.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Counters>>);

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Counters> {
        // A sender that panicked leaves counts that are still counts.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
