//! Sending the parts to their writers and folding the answers into one.

use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use strata_remote_write::Version;

use super::split::Part;
use super::DistributorState;
use crate::http::write::DURABILITY_HEADER;

/// The headers of a 2.0 answer that count what was written.
pub const WRITTEN_HEADERS: [&str; 3] = [
    "x-prometheus-remote-write-samples-written",
    "x-prometheus-remote-write-histograms-written",
    "x-prometheus-remote-write-exemplars-written",
];

/// One writer's answer to its part.
#[derive(Debug)]
pub struct ShardAnswer {
    pub shard: usize,
    pub status: StatusCode,
    /// The writer's message (empty for a bare 204).
    pub message: String,
    pub retry_after: Option<HeaderValue>,
    /// The 2.0 written counts the writer reported, in [`WRITTEN_HEADERS`]
    /// order.
    pub written: [u64; 3],
}

impl ShardAnswer {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// Which failure a client must hear about first: a retryable one (5xx,
    /// then 429) before one that drops the request (other 4xx), so that
    /// the shard which can still take the data gets it on the retry.
    pub fn severity(&self) -> u8 {
        match self.status.as_u16() {
            500..=599 => 3,
            429 => 2,
            400..=499 => 1,
            _ => 0,
        }
    }
}

/// Sends every part to its writer at once and waits for all answers.
pub async fn send_all(
    state: &DistributorState,
    version: Version,
    headers: &HeaderMap,
    parts: Vec<Part>,
) -> Vec<ShardAnswer> {
    // What the writers act on as the client meant it: durability,
    // credentials and tenant.
    let passed: Vec<(&'static str, HeaderValue)> = [
        DURABILITY_HEADER,
        "authorization",
        crate::tenants::TENANT_HEADER,
    ]
    .into_iter()
    .filter_map(|name| headers.get(name).map(|v| (name, v.clone())))
    .collect();
    let sends = parts
        .into_iter()
        .map(|part| send_one(state, version, &passed, part));
    futures::future::join_all(sends).await
}

async fn send_one(
    state: &DistributorState,
    version: Version,
    passed: &[(&'static str, HeaderValue)],
    part: Part,
) -> ShardAnswer {
    let shard = part.shard;
    let url = state.write_url(shard);
    tracing::debug!(
        shard,
        series = part.series,
        samples = part.samples,
        "forwarding"
    );
    let started = Instant::now();
    let mut req = state
        .client
        .post(url)
        .header("content-type", version.content_type())
        .header("content-encoding", "snappy")
        .header(
            "x-prometheus-remote-write-version",
            version.version_header(),
        )
        .body(part.body);
    for (name, value) in passed {
        req = req.header(*name, value.clone());
    }
    let answer = match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            let header = |name: &str| resp.headers().get(name).cloned();
            let retry_after = header("retry-after");
            let mut written = [0u64; 3];
            for (slot, name) in written.iter_mut().zip(WRITTEN_HEADERS) {
                *slot = header(name)
                    .and_then(|v| v.to_str().ok()?.trim().parse().ok())
                    .unwrap_or(0);
            }
            let message = resp
                .text()
                .await
                .unwrap_or_else(|e| format!("(answer body unreadable: {e})"));
            ShardAnswer {
                shard,
                status,
                message: message.trim_end().to_owned(),
                retry_after,
                written,
            }
        }
        Err(e) => {
            let what = if e.is_timeout() {
                format!(
                    "no answer within {}",
                    humantime::format_duration(state.forward_timeout)
                )
            } else if e.is_connect() {
                format!("cannot connect: {}", error_chain(&e))
            } else {
                format!("request failed: {}", error_chain(&e))
            };
            state.metrics.transport_error(shard);
            ShardAnswer {
                shard,
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: what,
                retry_after: Some(HeaderValue::from(1)),
                written: [0; 3],
            }
        }
    };
    state.metrics.forwarded(
        shard,
        answer.status.as_u16(),
        started.elapsed(),
        part.samples as u64,
    );
    answer
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The failures among `answers`, most severe first (then by shard).
pub fn failures(answers: &[ShardAnswer]) -> Vec<&ShardAnswer> {
    let mut failed: Vec<&ShardAnswer> = answers.iter().filter(|a| !a.ok()).collect();
    failed.sort_by_key(|a| (std::cmp::Reverse(a.severity()), a.shard));
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(shard: usize, status: u16) -> ShardAnswer {
        ShardAnswer {
            shard,
            status: StatusCode::from_u16(status).unwrap(),
            message: String::new(),
            retry_after: None,
            written: [0; 3],
        }
    }

    #[test]
    fn most_severe_first() {
        let answers = [
            answer(0, 400),
            answer(1, 204),
            answer(2, 429),
            answer(3, 503),
            answer(4, 500),
        ];
        let order: Vec<usize> = failures(&answers).iter().map(|a| a.shard).collect();
        assert_eq!(order, [3, 4, 2, 0]);
    }
}
