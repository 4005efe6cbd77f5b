//! A sender: takes scheduled batches off the shared queue, encodes them as
//! remote write 1.0 and posts them, retrying 5xx, 429 and connection
//! failures with backoff until the batch's retry budget runs out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_remote_write::proto::v1;
use strata_remote_write::Encoder;

use crate::node::TargetTemplate;
use crate::schedule::{instance_label, Point};
use crate::stats::Shared;

/// A batch waiting to be sent.
pub struct Batch {
    pub scheduled: Instant,
    pub points: Vec<Point>,
}

/// What every sender shares.
pub struct SenderContext {
    pub client: reqwest::Client,
    pub url: String,
    pub headers: reqwest::header::HeaderMap,
    pub protocol: crate::Protocol,
    pub template: Arc<TargetTemplate>,
    /// How long after its scheduled time a batch is still retried.
    pub give_up_after: Duration,
    pub shared: Shared,
}

/// Reused buffers of one sender.
pub struct Sender {
    ctx: Arc<SenderContext>,
    request: v1::WriteRequest,
    encoder: Encoder,
    body: Vec<u8>,
}

enum Outcome {
    Accepted,
    Retry(Option<Duration>),
    Refused,
}

impl Sender {
    pub fn new(ctx: Arc<SenderContext>) -> Self {
        Self {
            ctx,
            request: v1::WriteRequest::default(),
            encoder: Encoder::new(),
            body: Vec::new(),
        }
    }

    fn encode(&mut self, points: &[Point]) {
        if self.ctx.protocol == crate::Protocol::Otlp {
            crate::otlp::encode(&self.ctx.template, points, &mut self.body);
            return;
        }
        let template = &self.ctx.template;
        let ts = &mut self.request.timeseries;
        ts.truncate(points.len());
        while ts.len() < points.len() {
            ts.push(v1::TimeSeries::default());
        }
        for (series, p) in ts.iter_mut().zip(points) {
            let Some(t) = template.series.get(p.series as usize) else {
                continue;
            };
            // Copy the labels string by string: `String::clone_from` reuses
            // the buffers once they are warm, where the derived
            // `Label::clone_from` would allocate two new strings and free
            // the old ones for every label of every sample.
            series.labels.truncate(t.labels.len());
            for (dst, src) in series.labels.iter_mut().zip(&t.labels) {
                dst.name.clone_from(&src.name);
                dst.value.clone_from(&src.value);
            }
            let have = series.labels.len();
            series.labels.extend(t.labels.iter().skip(have).cloned());
            if let Some(l) = series.labels.get_mut(t.instance_pos) {
                instance_label(p.instance, &mut l.value);
            }
            series.samples.clear();
            series.samples.push(v1::Sample {
                value: p.value,
                timestamp: p.timestamp_ms,
            });
        }
        self.encoder.encode_v1(&self.request, &mut self.body);
    }

    /// Sends one batch to its end: accepted, refused, or out of retries.
    pub async fn send(&mut self, batch: Batch) {
        let waited = batch.scheduled.elapsed();
        self.encode(&batch.points);
        let body = bytes::Bytes::from(std::mem::take(&mut self.body));
        let samples = batch.points.len() as u64;
        let mut backoff = Duration::from_millis(30);
        loop {
            let attempt_start = Instant::now();
            let outcome = self.attempt(body.clone()).await;
            match outcome {
                Outcome::Accepted => {
                    let latency = batch.scheduled.elapsed();
                    let mut c = self.ctx.shared.lock();
                    c.accepted_samples += samples;
                    c.accepted_batches += 1;
                    c.latencies.record(latency);
                    c.window.record(latency);
                    c.window_wait.record(waited);
                    c.window_rtt.record(attempt_start.elapsed());
                    break;
                }
                Outcome::Refused => {
                    let mut c = self.ctx.shared.lock();
                    c.failed_batches += 1;
                    c.failed_samples += samples;
                    break;
                }
                Outcome::Retry(after) => {
                    let wait = after.unwrap_or(backoff).min(Duration::from_secs(5));
                    if batch.scheduled.elapsed() + wait > self.ctx.give_up_after {
                        let mut c = self.ctx.shared.lock();
                        c.failed_batches += 1;
                        c.failed_samples += samples;
                        break;
                    }
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        // Take the buffer back when no retry still holds it.
        if let Ok(b) = body.try_into_mut() {
            self.body = b.into();
        }
    }

    async fn attempt(&self, body: bytes::Bytes) -> Outcome {
        let sent = self
            .ctx
            .client
            .post(&self.ctx.url)
            .headers(self.ctx.headers.clone())
            .body(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                let mut c = self.ctx.shared.lock();
                *c.statuses.entry("connect".into()).or_default() += 1;
                c.retried_attempts += 1;
                c.last_error = Some(e.to_string());
                return Outcome::Retry(None);
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|s| Duration::from_secs_f64(s.clamp(0.0, 5.0)));
        let text = if status.is_success() {
            // Drain the (empty) body so the connection is reused.
            let _ = resp.bytes().await;
            String::new()
        } else {
            resp.text().await.unwrap_or_default()
        };
        let mut c = self.ctx.shared.lock();
        *c.statuses.entry(status.as_u16().to_string()).or_default() += 1;
        if status.is_success() {
            Outcome::Accepted
        } else if status.is_server_error() || status.as_u16() == 429 {
            c.retried_attempts += 1;
            c.last_error = Some(format!("{status}: {}", text.trim()));
            Outcome::Retry(retry_after)
        } else {
            c.last_error = Some(format!("{status}: {}", text.trim()));
            Outcome::Refused
        }
    }
}
