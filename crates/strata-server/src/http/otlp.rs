//! `POST /api/v1/otlp/v1/metrics` (Prometheus 3's path) and `/v1/metrics`
//! (the OTLP/HTTP default): OpenTelemetry metrics, protobuf or JSON,
//! translated by `strata-otlp` and written by the path remote write takes.
//!
//! Answers follow the OTLP/HTTP specification: 200 with an
//! `ExportMetricsServiceResponse` (with `partial_success` naming what was
//! not taken), 400/413/415 with a `google.rpc.Status` that the exporter
//! must not retry, 429 and 503 with `Retry-After` that it may; each in the
//! request's format.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use strata_otlp::Format;

use strata_remote_write::DecodeLimits;
use strata_write::{RejectedSeries, MAX_REJECTION_LINES};

use super::write::{durability_of, status_of, writer_of};
use crate::ingest::ingest;
use crate::state::AppState;
use crate::tenants::Tenant;

/// Prometheus 3's path and the OTLP exporters' default path.
pub const PATHS: [&str; 2] = ["/api/v1/otlp/v1/metrics", "/v1/metrics"];

pub async fn otlp_metrics(
    State(state): State<Arc<AppState>>,
    tenant: Option<Extension<Tenant>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let resp = match Format::negotiate(header("content-type"), header("content-encoding")) {
        Err(e) => answer_error(
            Format::Protobuf,
            status_of(e.status()),
            &e.to_string(),
            None,
        ),
        Ok((format, gzip)) => match tenant {
            Some(Extension(tenant)) => handle(&state, &tenant, &headers, &body, format, gzip).await,
            None => answer_error(
                format,
                StatusCode::INTERNAL_SERVER_ERROR,
                "request has no tenant",
                None,
            ),
        },
    };
    state
        .metrics
        .observe("otlp", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(
    state: &AppState,
    tenant: &Tenant,
    headers: &HeaderMap,
    body: &Result<Bytes, BytesRejection>,
    format: Format,
    gzip: bool,
) -> Response {
    if state.config.server.role.reads_only() {
        return answer_error(
            format,
            StatusCode::FORBIDDEN,
            &format!("this is a {} node: it does not take writes; send OTLP metrics to the writer (role \"writer\" or \"all\")", state.config.server.role.name()),
            None,
        );
    }
    let durability = match durability_of(state, headers) {
        Ok(d) => d,
        Err(msg) => return answer_error(format, StatusCode::BAD_REQUEST, &msg, None),
    };
    let storage = match writer_of(state) {
        Ok(w) => w,
        Err(no) => return restate(format, no.into_response()).await,
    };
    let request = match decode_body(body, format, gzip, &state.decode_limits) {
        Ok(r) => r,
        Err((code, msg)) => return answer_error(format, code, &msg, None),
    };
    let mut translated = strata_otlp::translate(&request, &state.otlp);
    drop(request);
    for w in &translated.warnings {
        tracing::debug!(warning = %w, "OTLP translation");
    }
    let refused = std::mem::take(&mut translated.write.rejected);
    let ingested = match ingest(state, tenant, storage, translated.write, durability).await {
        Ok(i) => i,
        Err(r) => return restate(format, r).await,
    };
    let mut lines = refusal_lines(&refused);
    lines.extend(ingested.rejection_message());
    answer_ok(
        format,
        translated.rejected_points + ingested.rejected,
        &lines,
    )
}

/// The request a body holds, or the status and message refusing it: over
/// the size limits, cut short, or not a request in `format`.
pub(crate) fn decode_body(
    body: &Result<Bytes, BytesRejection>,
    format: Format,
    gzip: bool,
    limits: &DecodeLimits,
) -> Result<strata_otlp::proto::ExportMetricsServiceRequest, (StatusCode, String)> {
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let msg = format!(
                "request body exceeds the limit of {} bytes (limits.max_body_bytes)",
                limits.max_body_bytes
            );
            return Err((e.status(), msg));
        }
        Err(e) => return Err((e.status(), e.body_text())),
    };
    let limits = strata_otlp::Limits {
        max_body_bytes: limits.max_body_bytes,
        max_decoded_bytes: limits.max_decoded_bytes,
    };
    strata_otlp::decode(body, format, gzip, &limits)
        .map_err(|e| (status_of(e.status()), e.to_string()))
}

/// The metrics translation refused, a line each (the first ten, then a
/// count), as a partial success lists them.
pub(crate) fn refusal_lines(refused: &[RejectedSeries]) -> Vec<String> {
    let mut lines: Vec<String> = refused
        .iter()
        .take(MAX_REJECTION_LINES)
        .map(|r| format!("{}: {} ({} data points)", r.labels, r.reason, r.samples))
        .collect();
    if let Some(more) = refused
        .len()
        .checked_sub(MAX_REJECTION_LINES)
        .filter(|&n| n > 0)
    {
        lines.push(format!("and {more} more metrics refused"));
    }
    lines
}

/// A 200 with `ExportMetricsServiceResponse`: a partial success when
/// `rejected` points were not taken, for the reasons in `lines`.
pub(crate) fn answer_ok(format: Format, rejected: usize, lines: &[String]) -> Response {
    let body = strata_otlp::success_body(format, rejected, &lines.join("\n"));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

/// A `google.rpc.Status` answer.
pub(crate) fn answer_error(
    format: Format,
    code: StatusCode,
    message: &str,
    retry_after: Option<HeaderValue>,
) -> Response {
    let body = strata_otlp::error_body(format, code.as_u16(), message);
    let mut r = (code, [(header::CONTENT_TYPE, format.content_type())], body).into_response();
    if let Some(v) = retry_after {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// The shared write path's plain-text answer in OTLP's form, its status
/// and `Retry-After` kept.
async fn restate(format: Format, r: Response) -> Response {
    let code = r.status();
    let retry = r.headers().get(header::RETRY_AFTER).cloned();
    let text = axum::body::to_bytes(r.into_body(), 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim_end().to_owned())
        .unwrap_or_default();
    answer_error(format, code, &text, retry)
}
