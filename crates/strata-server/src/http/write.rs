//! `POST /api/v1/write`: Prometheus remote write 1.0 and 2.0.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use strata_remote_write::{decode_raw, negotiate, Version};
use strata_storage::{Durability, IngestSeries, StorageError};

use crate::state::AppState;

/// The header a client sets to choose durability per request.
pub const DURABILITY_HEADER: &str = "x-strata-durability";

/// A plain-text answer ending in a newline, as Prometheus' receiver writes.
pub(crate) fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut msg = msg.into();
    msg.push('\n');
    (status, msg).into_response()
}

fn retry_after(status: StatusCode, secs: u64, msg: impl Into<String>) -> Response {
    let mut r = text(status, msg);
    r.headers_mut()
        .insert("retry-after", HeaderValue::from(secs));
    r
}

/// Maps a storage failure to the answer a remote-write client acts on.
pub fn storage_error(e: &StorageError) -> Response {
    match e {
        StorageError::Unavailable(_) | StorageError::Closed => retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            1,
            format!("cannot write now: {e}"),
        ),
        StorageError::Fenced(_) => retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            10,
            format!("cannot write: {e}; send writes to the newer writer"),
        ),
        StorageError::ReadOnly => text(StatusCode::FORBIDDEN, e.to_string()),
        StorageError::Corrupt(_) | StorageError::Invalid(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("storage error: {e}"),
        ),
    }
}

pub async fn remote_write(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let resp = handle(&state, &headers, &body).await;
    state
        .metrics
        .observe("write", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if state.config.server.role == crate::config::Role::Reader {
        return text(
            StatusCode::FORBIDDEN,
            "this is a reader node: it serves queries only; send remote write to the writer (role \"writer\" or \"all\")",
        );
    }
    let version = match negotiate(header("content-type"), header("content-encoding")) {
        Ok(v) => v,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    let durability = match header(DURABILITY_HEADER).map(str::trim) {
        None | Some("") => state.default_durability,
        Some(v) if v.eq_ignore_ascii_case("applied") => Durability::Applied,
        Some(v) if v.eq_ignore_ascii_case("durable") => Durability::Durable,
        Some(v) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("invalid X-Strata-Durability header {v:?}: use \"applied\" or \"durable\""),
            )
        }
    };
    let Some(storage) = state.storage() else {
        return retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            1,
            "not ready: recovery is in progress",
        );
    };
    let decoded = match decode_raw(version, body, &state.decode_limits) {
        Ok(d) => d,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    let n = decoded.sample_count();
    state
        .metrics
        .samples_received
        .fetch_add(n as u64, Ordering::Relaxed);
    if let Some(limiter) = &state.rate_limiter {
        if let Err(wait) = limiter.take(n) {
            state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
            return retry_after(
                StatusCode::TOO_MANY_REQUESTS,
                wait,
                format!(
                    "ingest rate limit of {} samples/s exceeded; retry later",
                    state.config.limits.ingest_rate_limit
                ),
            );
        }
    }
    let rejection_msg = (!decoded.rejected.is_empty()).then(|| decoded.rejection_message());
    let rejected_invalid: usize = decoded.rejected.iter().map(|r| r.samples).sum();
    let series = decoded
        .series
        .into_iter()
        .map(|s| IngestSeries {
            labels: s.labels,
            samples: s.samples,
        })
        .collect();
    let outcome = match storage.write(series, durability).await {
        Ok(o) => o,
        Err(e) => return storage_error(&e),
    };
    let written = outcome.appended + outcome.duplicates;
    let mut resp = if rejected_invalid == 0 && outcome.rejected == 0 {
        StatusCode::NO_CONTENT.into_response()
    } else {
        let mut msg = format!(
            "{} of {} samples rejected ({} written)",
            rejected_invalid + outcome.rejected,
            rejected_invalid + n,
            written
        );
        if let Some(m) = rejection_msg {
            msg.push('\n');
            msg.push_str(&m);
        }
        if let Some((series, why)) = &outcome.first_rejection {
            msg.push_str(&format!(
                "\nseries {series}: {why} ({} samples rejected in all)",
                outcome.rejected
            ));
        }
        text(StatusCode::BAD_REQUEST, msg)
    };
    if version == Version::V2 {
        let h = resp.headers_mut();
        h.insert(
            "x-prometheus-remote-write-samples-written",
            HeaderValue::from(written),
        );
        h.insert(
            "x-prometheus-remote-write-histograms-written",
            HeaderValue::from(0),
        );
        h.insert(
            "x-prometheus-remote-write-exemplars-written",
            HeaderValue::from(0),
        );
    }
    resp
}

/// The status for a decoder's error code.
pub(crate) fn status_of(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
}
