//! An open-loop Prometheus remote-write 1.0 load generator.
//!
//! It plays `targets` node_exporter-like hosts of 1,000 series each, scraped
//! one after another across the scrape interval, and cuts the resulting
//! sample stream into batches of up to `batch_size` samples, the way
//! Prometheus' and vmagent's remote-write queues do. Each batch has a
//! scheduled send time fixed by the offered rate alone; it goes into a
//! bounded queue (dropped and counted if the queue is full) from which
//! `senders` concurrent HTTP/1.1 keep-alive connections post it. Latency is
//! measured from the scheduled time to the acknowledgement, so a slow server
//! shows up as latency and drops rather than as a lower offered rate.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let config = strata_loadgen::LoadConfig {
//!     url: "http://127.0.0.1:9470/api/v1/write".into(),
//!     rate: 10_000.0,
//!     duration: std::time::Duration::from_secs(10),
//!     ..strata_loadgen::LoadConfig::default()
//! };
//! let summary = strata_loadgen::run(config, |p| eprintln!("{p}")).await?;
//! assert!(summary.clean());
//! # Ok(()) }
//! ```

// Indexing stays allowed: every index in the stream is a remainder modulo the
// length it indexes.
// The generator's hot loop indexes its own schedule's tables.
#![allow(clippy::indexing_slicing)]

pub mod hist;
pub mod node;
mod otlp;
pub mod pages;
pub mod schedule;
mod send;
pub mod stats;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::sync::mpsc;

use crate::node::TargetTemplate;
use crate::schedule::Stream;
use crate::send::{Batch, Sender, SenderContext};
use crate::stats::Shared;
pub use crate::stats::{LatencySummary, Progress, Summary};

/// What to send, how fast, for how long.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The remote-write endpoint, e.g. `http://127.0.0.1:9470/api/v1/write`.
    pub url: String,
    /// Offered samples per second.
    pub rate: f64,
    pub duration: Duration,
    /// Number of targets; if `None`, as many as the scrape interval needs at
    /// this rate (`rate × interval / 1000`).
    pub targets: Option<usize>,
    /// Used only to size `targets` when it is `None`; the actual interval is
    /// `targets × 1000 / rate`.
    pub scrape_interval: Duration,
    pub batch_size: usize,
    pub senders: usize,
    /// Queue capacity in batches; if `None`, five seconds of batches at the
    /// offered rate (at least 8).
    pub queue_batches: Option<usize>,
    /// Share of targets replaced by new ones every scrape interval.
    pub churn: f64,
    pub seed: u64,
    /// A batch still failing this long after its scheduled time is given up.
    pub give_up_after: Duration,
    /// After the last batch is scheduled, how long to wait for the queue to
    /// drain before counting what is left as unfinished.
    pub drain_timeout: Duration,
    pub progress_interval: Duration,
    /// Extra request headers (e.g. `X-Strata-Durability: durable`).
    pub headers: Vec<(String, String)>,
    pub protocol: Protocol,
}

/// What the requests carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Remote write 1.0, snappy.
    #[default]
    RemoteWrite,
    /// OTLP/HTTP metrics, protobuf, gzip (as a Collector sends).
    Otlp,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:9470/api/v1/write".into(),
            rate: 10_000.0,
            duration: Duration::from_secs(60),
            targets: None,
            scrape_interval: Duration::from_secs(10),
            batch_size: 2000,
            senders: 8,
            queue_batches: None,
            churn: 0.0,
            seed: 1,
            give_up_after: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(35),
            progress_interval: Duration::from_secs(5),
            headers: Vec::new(),
            protocol: Protocol::RemoteWrite,
        }
    }
}

impl LoadConfig {
    /// The number of targets this configuration plays.
    pub fn target_count(&self, per_target: usize) -> usize {
        self.targets.unwrap_or_else(|| {
            let n = self.rate * self.scrape_interval.as_secs_f64() / per_target.max(1) as f64;
            (n.round() as usize).max(1)
        })
    }

    fn header_map(&self) -> anyhow::Result<reqwest::header::HeaderMap> {
        use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
        let mut h = HeaderMap::new();
        let defaults: &[(&'static str, &'static str)] = match self.protocol {
            Protocol::RemoteWrite => &[
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "snappy"),
                ("x-prometheus-remote-write-version", "0.1.0"),
                ("user-agent", "strata-loadgen/0.1"),
            ],
            Protocol::Otlp => &[
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "gzip"),
                ("user-agent", "strata-loadgen/0.1"),
            ],
        };
        for &(k, v) in defaults {
            h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        for (k, v) in &self.headers {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).with_context(|| format!("header {k}"))?,
                HeaderValue::from_str(v).with_context(|| format!("header {k}"))?,
            );
        }
        Ok(h)
    }
}

/// A load generator stamps its samples with the wall clock.
#[allow(clippy::disallowed_methods)]
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Runs the load to its end and returns the summary; `on_progress` is
/// called every `progress_interval`.
pub async fn run(
    config: LoadConfig,
    mut on_progress: impl FnMut(&Progress) + Send,
) -> anyhow::Result<Summary> {
    anyhow::ensure!(config.rate > 0.0, "rate must be positive");
    let template = TargetTemplate::node_exporter();
    let per_target = template.len();
    let targets = config.target_count(per_target);
    let batch_size = config.batch_size.max(1);
    let senders = config.senders.max(1);
    let queue_batches = config
        .queue_batches
        .unwrap_or_else(|| ((config.rate * 5.0 / batch_size as f64).ceil() as usize).max(8));
    let client = reqwest::Client::builder()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(senders)
        .timeout(config.give_up_after)
        .build()
        .context("HTTP client")?;
    let shared = Shared::default();
    let ctx = Arc::new(SenderContext {
        client,
        url: config.url.clone(),
        headers: config.header_map()?,
        protocol: config.protocol,
        template: Arc::new(template.clone()),
        give_up_after: config.give_up_after,
        shared: shared.clone(),
    });

    let (tx, rx) = mpsc::channel::<Batch>(queue_batches);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..senders {
        let rx = Arc::clone(&rx);
        let mut sender = Sender::new(Arc::clone(&ctx));
        workers.spawn(async move {
            loop {
                let next = rx.lock().await.recv().await;
                match next {
                    Some(batch) => sender.send(batch).await,
                    None => break,
                }
            }
        });
    }

    let mut stream = Stream::new(
        template,
        targets,
        config.rate,
        now_ms(),
        batch_size,
        config.churn,
        config.seed,
    );
    let scrape_interval = stream.scrape_interval();
    let start = Instant::now();
    let end = start + config.duration;
    let mut next_report = start + config.progress_interval;
    let mut last_report = start;
    let mut last_accepted = 0u64;

    // The scheduler runs here; progress is reported between batches.
    loop {
        let due = start + stream.next_due();
        if due > end {
            break;
        }
        while next_report <= due {
            tokio::time::sleep_until(next_report.into()).await;
            let p = progress(
                &shared,
                &stream,
                &tx,
                start,
                last_report,
                &mut last_accepted,
            );
            on_progress(&p);
            last_report = next_report;
            next_report += config.progress_interval;
        }
        tokio::time::sleep_until(due.into()).await;
        let mut points = Vec::with_capacity(batch_size);
        stream.next_batch(&mut points);
        let n = points.len() as u64;
        shared.lock().offered_samples += n;
        let batch = Batch {
            scheduled: due,
            points,
        };
        if tx.try_send(batch).is_err() {
            let mut c = shared.lock();
            c.dropped_samples += n;
            c.dropped_batches += 1;
        }
    }
    tokio::time::sleep_until(end.into()).await;
    drop(tx);
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        workers.abort_all();
    }

    let c = shared.lock();
    let settled = c.accepted_samples + c.dropped_samples + c.failed_samples;
    Ok(Summary {
        url: config.url.clone(),
        duration_s: config.duration.as_secs_f64(),
        rate_offered: config.rate,
        targets,
        series_per_target: per_target,
        scrape_interval_s: scrape_interval.as_secs_f64(),
        batch_size,
        senders,
        churn: config.churn,
        samples_offered: c.offered_samples,
        samples_accepted: c.accepted_samples,
        accepted_per_s: c.accepted_samples as f64 / config.duration.as_secs_f64().max(1e-9),
        unique_series: stream.unique_series(),
        replaced_targets: stream.replaced_targets(),
        latency: c.latencies.summary(),
        dropped_samples: c.dropped_samples,
        dropped_batches: c.dropped_batches,
        unfinished_samples: c.offered_samples.saturating_sub(settled),
        failed_batches: c.failed_batches,
        failed_samples: c.failed_samples,
        retried_attempts: c.retried_attempts,
        statuses: c.statuses.clone(),
        last_error: c.last_error.clone(),
    })
}

fn progress(
    shared: &Shared,
    stream: &Stream,
    tx: &mpsc::Sender<Batch>,
    start: Instant,
    last: Instant,
    last_accepted: &mut u64,
) -> Progress {
    let now = Instant::now();
    let mut c = shared.lock();
    let window = c.window.summary();
    let wait = c.window_wait.summary();
    let rtt = c.window_rtt.summary();
    c.window.clear();
    c.window_wait.clear();
    c.window_rtt.clear();
    let accepted = c.accepted_samples;
    let per_s = (accepted - *last_accepted) as f64 / now.duration_since(last).as_secs_f64();
    *last_accepted = accepted;
    Progress {
        elapsed_s: now.duration_since(start).as_secs_f64(),
        accepted_per_s: per_s,
        samples_accepted: accepted,
        unique_series: stream.unique_series(),
        queued_batches: tx.max_capacity() - tx.capacity(),
        p50_ms: window.p50_ms,
        p99_ms: window.p99_ms,
        max_ms: window.max_ms,
        wait_p99_ms: wait.p99_ms,
        rtt_p99_ms: rtt.p99_ms,
        dropped_samples: c.dropped_samples,
        failed_batches: c.failed_batches,
        retried_attempts: c.retried_attempts,
    }
}
