//! Native histogram load: `series` exponential (schema 3) histograms, and
//! optionally a share with custom buckets (NHCB, schema -53), each a
//! request-latency distribution whose centre drifts, advanced once per
//! interval with integer counts that only grow (but for rare resets), sent
//! by remote write 1.0 or 2.0 to one or more endpoints at once.
//!
//! Every series has its own generator seeded from `seed` and its index, so
//! the same arguments produce the same histograms whatever the batching;
//! only the timestamps (the wall clock at each batch's scheduled time)
//! differ between runs. Each batch is encoded once per protocol version and
//! the same bytes go to every endpoint of that version, each endpoint with
//! its own queue, senders and counters.

mod series;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use strata_codec::histogram::HistogramSample;
use strata_remote_write::proto::v1;
use strata_remote_write::{Encoder, V2RequestBuilder};
use tokio::sync::mpsc;

use crate::stats::{Latencies, LatencySummary};

/// Remote-write protocol version of one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RwVersion {
    #[serde(rename = "1.0")]
    V1,
    #[serde(rename = "2.0")]
    V2,
}

/// One endpoint: `URL`, or `URL#v1` / `URL#v2` to override the default
/// version for it (the fragment is not sent).
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub url: String,
    pub version: RwVersion,
}

impl Endpoint {
    pub fn parse(s: &str, default: RwVersion) -> anyhow::Result<Self> {
        let (url, version) = match s.rsplit_once('#') {
            Some((u, "v1")) => (u, RwVersion::V1),
            Some((u, "v2")) => (u, RwVersion::V2),
            Some((_, other)) => {
                anyhow::bail!("{s}: unknown version suffix #{other} (use #v1 or #v2)")
            }
            None => (s, default),
        };
        Ok(Self {
            url: url.to_string(),
            version,
        })
    }
}

#[derive(Clone, Debug)]
pub struct HistConfig {
    pub endpoints: Vec<Endpoint>,
    /// Number of histogram series.
    pub series: usize,
    /// Each series gets one sample per interval.
    pub interval: Duration,
    pub duration: Duration,
    /// Most series (histogram samples) per request.
    pub batch_size: usize,
    /// Concurrent senders per endpoint.
    pub senders: usize,
    pub seed: u64,
    /// Share of series with custom buckets (NHCB) instead of exponential ones.
    pub nhcb_share: f64,
    /// Chance per series and interval that its counts restart from zero.
    pub reset_probability: f64,
    /// Mean observations added to a series per interval.
    pub observations: f64,
    /// Metric name of the exponential series; NHCB ones get `<name>_nhcb`.
    pub metric: String,
    pub give_up_after: Duration,
    pub drain_timeout: Duration,
    pub progress_interval: Duration,
    pub headers: Vec<(String, String)>,
}

use series::SeriesState;

/// Counters of one endpoint.
#[derive(Default, Debug)]
struct Counters {
    offered: u64,
    accepted: u64,
    accepted_batches: u64,
    /// Sum of `X-Prometheus-Remote-Write-Histograms-Written` answers.
    histograms_written_header: u64,
    dropped: u64,
    failed: u64,
    failed_batches: u64,
    retried_attempts: u64,
    statuses: BTreeMap<String, u64>,
    latencies: Latencies,
    window: Latencies,
    last_error: Option<String>,
}

struct Target {
    endpoint: Endpoint,
    counters: Mutex<Counters>,
}

impl Target {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Batch {
    scheduled: Instant,
    samples: u64,
    body: bytes::Bytes,
}

/// The result of one endpoint.
#[derive(Serialize, Debug, Clone)]
pub struct TargetSummary {
    pub url: String,
    pub version: RwVersion,
    pub samples_offered: u64,
    pub samples_accepted: u64,
    pub accepted_per_s: f64,
    /// Sum of the `X-Prometheus-Remote-Write-Histograms-Written` headers
    /// (2.0 receivers that send it).
    pub histograms_written_header: u64,
    pub dropped_samples: u64,
    pub failed_samples: u64,
    pub failed_batches: u64,
    pub unfinished_samples: u64,
    pub retried_attempts: u64,
    pub latency: LatencySummary,
    pub statuses: BTreeMap<String, u64>,
    pub last_error: Option<String>,
}

/// The JSON a histogram run prints when it ends.
#[derive(Serialize, Debug, Clone)]
pub struct HistSummary {
    pub mode: &'static str,
    pub series: usize,
    pub nhcb_series: usize,
    pub interval_s: f64,
    pub duration_s: f64,
    pub batch_size: usize,
    pub offered_per_s: f64,
    /// Samples generated per series (intervals played).
    pub intervals: u64,
    pub first_timestamp_ms: i64,
    pub last_timestamp_ms: i64,
    /// Populated buckets per histogram at the end, mean and max.
    pub buckets_mean: f64,
    pub buckets_max: usize,
    pub resets: u64,
    pub targets: Vec<TargetSummary>,
}

impl HistSummary {
    pub fn clean(&self) -> bool {
        self.targets
            .iter()
            .all(|t| t.dropped_samples == 0 && t.failed_samples == 0 && t.unfinished_samples == 0)
    }
}

/// Progress of one endpoint since the previous line.
#[derive(Serialize, Debug, Clone)]
pub struct HistProgress {
    pub elapsed_s: f64,
    pub url: String,
    pub accepted_per_s: f64,
    pub samples_accepted: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub dropped_samples: u64,
    pub failed_samples: u64,
    pub retried_attempts: u64,
}

impl std::fmt::Display for HistProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:7.1}s {} {:9.0}/s accepted={} p50={:.1}ms p99={:.1}ms dropped={} failed={} retries={}",
            self.elapsed_s,
            self.url,
            self.accepted_per_s,
            self.samples_accepted,
            self.p50_ms,
            self.p99_ms,
            self.dropped_samples,
            self.failed_samples,
            self.retried_attempts
        )
    }
}

fn headers(
    version: RwVersion,
    extra: &[(String, String)],
) -> anyhow::Result<reqwest::header::HeaderMap> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let mut h = HeaderMap::new();
    let (content_type, rw_version) = match version {
        RwVersion::V1 => ("application/x-protobuf", "0.1.0"),
        RwVersion::V2 => (
            "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            "2.0.0",
        ),
    };
    h.insert(
        HeaderName::from_static("content-type"),
        HeaderValue::from_static(content_type),
    );
    h.insert(
        HeaderName::from_static("content-encoding"),
        HeaderValue::from_static("snappy"),
    );
    h.insert(
        HeaderName::from_static("x-prometheus-remote-write-version"),
        HeaderValue::from_static(rw_version),
    );
    h.insert(
        HeaderName::from_static("user-agent"),
        HeaderValue::from_static("strata-loadgen/0.1"),
    );
    for (k, v) in extra {
        h.insert(
            HeaderName::from_bytes(k.as_bytes()).with_context(|| format!("header {k}"))?,
            HeaderValue::from_str(v).with_context(|| format!("header {k}"))?,
        );
    }
    Ok(h)
}

enum Outcome {
    Accepted(Option<u64>),
    Retry(Option<Duration>),
    Refused,
}

async fn attempt(
    client: &reqwest::Client,
    target: &Target,
    headers: &reqwest::header::HeaderMap,
    body: bytes::Bytes,
) -> Outcome {
    let sent = client
        .post(&target.endpoint.url)
        .headers(headers.clone())
        .body(body)
        .send()
        .await;
    let resp = match sent {
        Ok(r) => r,
        Err(e) => {
            let mut c = target.lock();
            *c.statuses.entry("connect".into()).or_default() += 1;
            c.retried_attempts += 1;
            c.last_error = Some(e.to_string());
            return Outcome::Retry(None);
        }
    };
    let status = resp.status();
    let header_u64 = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let written = header_u64("x-prometheus-remote-write-histograms-written");
    let retry_after = header_u64("retry-after").map(|s| Duration::from_secs(s.min(5)));
    let text = if status.is_success() {
        let _ = resp.bytes().await;
        String::new()
    } else {
        resp.text().await.unwrap_or_default()
    };
    let mut c = target.lock();
    *c.statuses.entry(status.as_u16().to_string()).or_default() += 1;
    if status.is_success() {
        Outcome::Accepted(written)
    } else if status.is_server_error() || status.as_u16() == 429 {
        c.retried_attempts += 1;
        c.last_error = Some(format!("{status}: {}", text.trim()));
        Outcome::Retry(retry_after)
    } else {
        c.last_error = Some(format!("{status}: {}", text.trim()));
        Outcome::Refused
    }
}

async fn send(
    client: &reqwest::Client,
    target: &Target,
    headers: &reqwest::header::HeaderMap,
    give_up_after: Duration,
    batch: Batch,
) {
    let mut backoff = Duration::from_millis(30);
    loop {
        match attempt(client, target, headers, batch.body.clone()).await {
            Outcome::Accepted(written) => {
                let latency = batch.scheduled.elapsed();
                let mut c = target.lock();
                c.accepted += batch.samples;
                c.accepted_batches += 1;
                c.histograms_written_header += written.unwrap_or(0);
                c.latencies.record(latency);
                c.window.record(latency);
                return;
            }
            Outcome::Refused => break,
            Outcome::Retry(after) => {
                let wait = after.unwrap_or(backoff).min(Duration::from_secs(5));
                if batch.scheduled.elapsed() + wait > give_up_after {
                    break;
                }
                tokio::time::sleep(wait).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
    let mut c = target.lock();
    c.failed += batch.samples;
    c.failed_batches += 1;
}

/// Runs the histogram load to its end; `on_progress` gets one line per
/// endpoint every `progress_interval`.
pub async fn run(
    config: HistConfig,
    mut on_progress: impl FnMut(&HistProgress) + Send,
) -> anyhow::Result<HistSummary> {
    anyhow::ensure!(config.series > 0, "--histograms must be positive");
    anyhow::ensure!(!config.endpoints.is_empty(), "no --url");
    anyhow::ensure!(!config.interval.is_zero(), "interval must be positive");
    let batch_size = config.batch_size.max(1);
    let senders = config.senders.max(1);
    let client = reqwest::Client::builder()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(senders)
        .timeout(config.give_up_after)
        .build()
        .context("HTTP client")?;
    let batches_per_interval = config.series.div_ceil(batch_size);
    // Ten seconds of batches, at least 8.
    let queue = ((10.0 / config.interval.as_secs_f64()) * batches_per_interval as f64)
        .ceil()
        .max(8.0) as usize;

    let mut targets = Vec::new();
    let mut queues = Vec::new();
    let mut workers = tokio::task::JoinSet::new();
    for endpoint in &config.endpoints {
        let target = Arc::new(Target {
            endpoint: endpoint.clone(),
            counters: Mutex::new(Counters::default()),
        });
        let h = headers(endpoint.version, &config.headers)?;
        let (tx, rx) = mpsc::channel::<Batch>(queue);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        for _ in 0..senders {
            let rx = Arc::clone(&rx);
            let target = Arc::clone(&target);
            let client = client.clone();
            let h = h.clone();
            let give_up = config.give_up_after;
            workers.spawn(async move {
                loop {
                    let next = rx.lock().await.recv().await;
                    match next {
                        Some(batch) => send(&client, &target, &h, give_up, batch).await,
                        None => break,
                    }
                }
            });
        }
        targets.push(target);
        queues.push(tx);
    }
    let need_v1 = config.endpoints.iter().any(|e| e.version == RwVersion::V1);
    let need_v2 = config.endpoints.iter().any(|e| e.version == RwVersion::V2);

    let mut states: Vec<SeriesState> = (0..config.series)
        .map(|i| SeriesState::new(i, &config))
        .collect();
    let nhcb_series = states.iter().filter(|s| s.nhcb).count();
    let mut encoder = Encoder::new();
    let mut v1_request = v1::WriteRequest::default();
    let mut first_ts = None;
    let mut last_ts = 0;
    let mut intervals = 0u64;

    let start = Instant::now();
    let end = start + config.duration;
    let gap = config.interval / batches_per_interval as u32;
    let mut next_report = start + config.progress_interval;
    let mut last_report = start;
    let mut last_accepted = vec![0u64; targets.len()];
    'outer: for tick in 0u32.. {
        for b in 0..batches_per_interval {
            let due = start + config.interval * tick + gap * b as u32;
            if due >= end {
                break 'outer;
            }
            while next_report <= due {
                tokio::time::sleep_until(next_report.into()).await;
                let now = Instant::now();
                let secs = now.duration_since(last_report).as_secs_f64();
                for (t, last) in targets.iter().zip(last_accepted.iter_mut()) {
                    let mut c = t.lock();
                    let w = c.window.summary();
                    c.window.clear();
                    let p = HistProgress {
                        elapsed_s: now.duration_since(start).as_secs_f64(),
                        url: t.endpoint.url.clone(),
                        accepted_per_s: (c.accepted - *last) as f64 / secs.max(1e-9),
                        samples_accepted: c.accepted,
                        p50_ms: w.p50_ms,
                        p99_ms: w.p99_ms,
                        dropped_samples: c.dropped,
                        failed_samples: c.failed,
                        retried_attempts: c.retried_attempts,
                    };
                    *last = c.accepted;
                    drop(c);
                    on_progress(&p);
                }
                last_report = now;
                next_report += config.progress_interval;
            }
            tokio::time::sleep_until(due.into()).await;
            let ts = crate::now_ms();
            first_ts.get_or_insert(ts);
            last_ts = ts;
            let lo = b * batch_size;
            let hi = (lo + batch_size).min(states.len());
            let Some(slice) = states.get_mut(lo..hi) else {
                continue;
            };
            let samples: Vec<HistogramSample> = slice
                .iter_mut()
                .map(|s| s.step(config.reset_probability))
                .collect();
            let n = samples.len() as u64;
            let mut v1_body = bytes::Bytes::new();
            let mut v2_body = bytes::Bytes::new();
            if need_v1 {
                v1_request.timeseries.clear();
                for (s, h) in slice.iter().zip(&samples) {
                    v1_request.timeseries.push(v1::TimeSeries {
                        labels: s
                            .labels
                            .iter()
                            .map(|l| v1::Label {
                                name: l.name.clone(),
                                value: l.value.clone(),
                            })
                            .collect(),
                        samples: Vec::new(),
                        exemplars: Vec::new(),
                        histograms: vec![v1::Histogram::from_sample(ts, h)],
                    });
                }
                let mut out = Vec::new();
                encoder.encode_v1(&v1_request, &mut out);
                v1_body = out.into();
            }
            if need_v2 {
                let mut builder = V2RequestBuilder::new();
                for (s, h) in slice.iter().zip(samples) {
                    builder.add_series_with_histograms(&s.labels, &[], &[(ts, h)], &[]);
                }
                let mut out = Vec::new();
                encoder.encode_v2(&builder.build(), &mut out);
                v2_body = out.into();
            }
            for (t, tx) in targets.iter().zip(&queues) {
                let body = match t.endpoint.version {
                    RwVersion::V1 => v1_body.clone(),
                    RwVersion::V2 => v2_body.clone(),
                };
                t.lock().offered += n;
                let batch = Batch {
                    scheduled: due,
                    samples: n,
                    body,
                };
                if tx.try_send(batch).is_err() {
                    t.lock().dropped += n;
                }
            }
            if b + 1 == batches_per_interval {
                intervals += 1;
            }
        }
    }
    tokio::time::sleep_until(end.into()).await;
    drop(queues);
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        workers.abort_all();
    }

    let duration_s = config.duration.as_secs_f64().max(1e-9);
    let summaries = targets
        .iter()
        .map(|t| {
            let c = t.lock();
            TargetSummary {
                url: t.endpoint.url.clone(),
                version: t.endpoint.version,
                samples_offered: c.offered,
                samples_accepted: c.accepted,
                accepted_per_s: c.accepted as f64 / duration_s,
                histograms_written_header: c.histograms_written_header,
                dropped_samples: c.dropped,
                failed_samples: c.failed,
                failed_batches: c.failed_batches,
                unfinished_samples: c.offered.saturating_sub(c.accepted + c.dropped + c.failed),
                retried_attempts: c.retried_attempts,
                latency: c.latencies.summary(),
                statuses: c.statuses.clone(),
                last_error: c.last_error.clone(),
            }
        })
        .collect();
    let bucket_counts: Vec<usize> = states.iter().map(|s| s.buckets.len()).collect();
    let distinct: BTreeSet<usize> = bucket_counts.iter().copied().collect();
    Ok(HistSummary {
        mode: "histograms",
        series: config.series,
        nhcb_series,
        interval_s: config.interval.as_secs_f64(),
        duration_s,
        batch_size,
        offered_per_s: config.series as f64 / config.interval.as_secs_f64(),
        intervals,
        first_timestamp_ms: first_ts.unwrap_or(0),
        last_timestamp_ms: last_ts,
        buckets_mean: bucket_counts.iter().sum::<usize>() as f64
            / bucket_counts.len().max(1) as f64,
        buckets_max: distinct.last().copied().unwrap_or(0),
        resets: states.iter().map(|s| s.resets).sum(),
        targets: summaries,
    })
}
