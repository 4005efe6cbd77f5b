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

use super::write::{durability_of, ingest, writer_of};
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
        Err(e) => answer_error(Format::Protobuf, status(e.status()), &e.to_string(), None),
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

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
}

async fn handle(
    state: &AppState,
    tenant: &Tenant,
    headers: &HeaderMap,
    body: &Result<Bytes, BytesRejection>,
    format: Format,
    gzip: bool,
) -> Response {
    if state.config.server.role == crate::config::Role::Reader {
        return answer_error(
            format,
            StatusCode::FORBIDDEN,
            "this is a reader node: it serves queries only; send OTLP metrics to the writer (role \"writer\" or \"all\")",
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
    let limits = strata_otlp::Limits {
        max_body_bytes: state.config.limits.max_body_bytes,
        max_decoded_bytes: state.config.limits.max_decoded_bytes,
    };
    let body = match body {
        Ok(b) => b,
        Err(e) => return answer_error(format, e.status(), &body_refused(e, &limits), None),
    };
    let request = match strata_otlp::decode(body, format, gzip, &limits) {
        Ok(r) => r,
        Err(e) => return answer_error(format, status(e.status()), &e.to_string(), None),
    };
    // Checked at start-up, so this is the configured translation.
    let settings = state.config.otlp.settings().unwrap_or_default();
    let mut translated = strata_otlp::translate(&request, &settings);
    drop(request);
    for w in &translated.warnings {
        tracing::debug!(warning = %w, "OTLP translation");
    }
    let refused = std::mem::take(&mut translated.write.rejected);
    let ingested = match ingest(state, tenant, storage, translated.write, durability).await {
        Ok(i) => i,
        Err(r) => return restate(format, r).await,
    };
    let rejected = translated.rejected_points + ingested.rejected;
    let mut lines: Vec<String> = refused
        .iter()
        .take(strata_remote_write::MAX_REJECTION_LINES)
        .map(|r| format!("{}: {} ({} data points)", r.labels, r.reason, r.samples))
        .collect();
    if refused.len() > strata_remote_write::MAX_REJECTION_LINES {
        lines.push(format!(
            "and {} more metrics refused",
            refused.len() - strata_remote_write::MAX_REJECTION_LINES
        ));
    }
    if let Some(r) = ingested.rejection_message() {
        lines.push(r);
    }
    let body = strata_otlp::success_body(format, rejected, &lines.join("\n"));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

/// Why a body could not be read: over the size limit, or cut short.
pub(crate) fn body_refused(e: &BytesRejection, limits: &strata_otlp::Limits) -> String {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "request body exceeds the limit of {} bytes (limits.max_body_bytes)",
            limits.max_body_bytes
        )
    } else {
        e.body_text()
    }
}

/// A `google.rpc.Status` answer.
fn answer_error(
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
