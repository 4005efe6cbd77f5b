//! OTLP metrics on a distributor: translated here, as a writer would, and
//! forwarded to the shards as remote write, so that every series lands on
//! the shard its labels choose whichever protocol carried it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use strata_otlp::Format;
use strata_remote_write::Version;

use super::{forward, split, DistributorState};

pub async fn otlp_metrics(
    State(state): State<Arc<DistributorState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let resp = handle(&state, &headers, &body).await;
    state
        .server_metrics
        .observe("otlp", resp.status().as_u16(), started.elapsed());
    resp
}

fn error(format: Format, code: StatusCode, msg: &str) -> Response {
    let body = strata_otlp::error_body(format, code.as_u16(), msg);
    (code, [(header::CONTENT_TYPE, format.content_type())], body).into_response()
}

async fn handle(
    state: &DistributorState,
    headers: &HeaderMap,
    body: &Result<Bytes, BytesRejection>,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (format, gzip) = match Format::negotiate(header("content-type"), header("content-encoding"))
    {
        Ok(f) => f,
        Err(e) => {
            let code = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
            return error(Format::Protobuf, code, &e.to_string());
        }
    };
    if let Err(e) = state.auth.check(crate::auth::Access::Write, headers) {
        return error(format, StatusCode::UNAUTHORIZED, &e.to_string());
    }
    let limits = strata_otlp::Limits {
        max_body_bytes: state.decode_limits.max_body_bytes,
        max_decoded_bytes: state.decode_limits.max_decoded_bytes,
    };
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            let msg = crate::http::otlp::body_refused(e, &limits);
            return error(format, e.status(), &msg);
        }
    };
    let request = match strata_otlp::decode(body, format, gzip, &limits) {
        Ok(r) => r,
        Err(e) => {
            let code = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
            return error(format, code, &e.to_string());
        }
    };
    let mut translated = strata_otlp::translate(&request, &state.otlp);
    drop(request);
    let refused = std::mem::take(&mut translated.write.rejected);
    let decoded = translated.write.into_owned();
    state
        .server_metrics
        .samples_received
        .fetch_add(decoded.sample_count() as u64, Ordering::Relaxed);
    let parts = split::split(
        Version::V1,
        decoded.series,
        decoded.metadata,
        state.writers.len(),
    );
    let answers = forward::send_all(state, Version::V1, headers, parts).await;
    let failed = forward::failures(&answers);
    let mut lines: Vec<String> = refused
        .iter()
        .take(strata_remote_write::MAX_REJECTION_LINES)
        .map(|r| format!("{}: {} ({} data points)", r.labels, r.reason, r.samples))
        .collect();
    if let Some(worst) = failed.first() {
        // Remote write's 400 for refused samples is a partial success here;
        // any other failure is the answer.
        if worst.status != StatusCode::BAD_REQUEST {
            let msg: Vec<String> = failed
                .iter()
                .map(|a| {
                    format!(
                        "shard {} ({}) answered {}: {}",
                        a.shard,
                        state.writer(a.shard),
                        a.status.as_u16(),
                        a.message
                    )
                })
                .collect();
            let mut r = error(format, worst.status, &msg.join("\n"));
            if let Some(ra) = &worst.retry_after {
                r.headers_mut().insert(header::RETRY_AFTER, ra.clone());
            }
            return r;
        }
        lines.extend(failed.iter().map(|a| a.message.clone()));
    }
    // A writer's 400 does not say how many samples it refused; the first
    // line of its message does ("N of M samples rejected").
    let refused_by_writers: usize = failed
        .iter()
        .filter_map(|a| a.message.split_whitespace().next()?.parse::<usize>().ok())
        .sum();
    let body = strata_otlp::success_body(
        format,
        translated.rejected_points + refused_by_writers,
        &lines.join("\n"),
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}
