//! `POST /api/v1/write`: Prometheus remote write 1.0 and 2.0.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use strata_remote_write::{decode_raw, negotiate, Version};
use strata_storage::{Durability, StorageError, Writer};

use crate::ingest::ingest;
use crate::state::AppState;
use crate::tenants::Tenant;

/// The header a client sets to choose durability per request.
pub const DURABILITY_HEADER: &str = "x-strata-durability";

/// A plain-text answer ending in a newline, as Prometheus' receiver writes.
pub(crate) fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut msg = msg.into();
    msg.push('\n');
    (status, msg).into_response()
}

pub(crate) fn retry_after(status: StatusCode, secs: u64, msg: impl Into<String>) -> Response {
    let mut r = text(status, msg);
    r.headers_mut()
        .insert("retry-after", HeaderValue::from(secs));
    r
}

/// The writer a write goes to, or the answer when there is none: 503
/// until recovery is done, 403 on a reader node.
pub(crate) fn writer_of(state: &AppState) -> Result<&Arc<Writer>, NoWriter> {
    match (state.writer(), state.storage()) {
        (Some(w), _) => Ok(w),
        (None, None) => Err(NoWriter::Recovering),
        (None, Some(_)) => Err(NoWriter::ReadOnly),
    }
}

/// Why a write has no writer to go to.
pub(crate) enum NoWriter {
    Recovering,
    ReadOnly,
}

impl IntoResponse for NoWriter {
    fn into_response(self) -> Response {
        match self {
            NoWriter::Recovering => retry_after(
                StatusCode::SERVICE_UNAVAILABLE,
                1,
                "not ready: recovery is in progress",
            ),
            NoWriter::ReadOnly => storage_error(&StorageError::ReadOnly),
        }
    }
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

/// The answer to vmagent's protocol handshake, if `uri` asks it: vmagent
/// 1.88 to 1.115 asks `?get_vm_proto_version=1` once at start and sends zstd
/// bodies when the answer is `1` (later versions send zstd first and fall
/// back to snappy on a 415 or 400).
pub(crate) fn vm_proto_handshake(uri: &Uri) -> Option<Response> {
    uri.query()?
        .split('&')
        .any(|p| p.split('=').next() == Some("get_vm_proto_version"))
        .then(|| (StatusCode::OK, "1").into_response())
}

/// `GET /api/v1/write`: only vmagent's handshake.
pub async fn remote_write_get(uri: Uri) -> Response {
    vm_proto_handshake(&uri).unwrap_or_else(|| {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "remote write takes POST requests",
        );
        r.headers_mut()
            .insert(axum::http::header::ALLOW, HeaderValue::from_static("POST"));
        r
    })
}

pub async fn remote_write(
    State(state): State<Arc<AppState>>,
    tenant: Option<Extension<Tenant>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = vm_proto_handshake(&uri) {
        return r;
    }
    let started = Instant::now();
    let resp = match tenant {
        Some(Extension(tenant)) => handle(&state, &tenant, &headers, &body).await,
        // The tenant layer always sets it; never fall back to a tenant.
        None => text(StatusCode::INTERNAL_SERVER_ERROR, "request has no tenant"),
    };
    state
        .metrics
        .observe("write", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(state: &AppState, tenant: &Tenant, headers: &HeaderMap, body: &[u8]) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if state.config.server.role.reads_only() {
        return text(
            StatusCode::FORBIDDEN,
            format!("this is a {} node: it does not take writes; send remote write to the writer (role \"writer\" or \"all\")", state.config.server.role.name()),
        );
    }
    let (version, encoding) = match negotiate(header("content-type"), header("content-encoding")) {
        Ok(v) => v,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    state.metrics.count_encoding(encoding);
    let durability = match durability_of(state, headers) {
        Ok(d) => d,
        Err(msg) => return text(StatusCode::BAD_REQUEST, msg),
    };
    let storage = match writer_of(state) {
        Ok(w) => w,
        Err(no) => return no.into_response(),
    };
    let decoded = match decode_raw(version, encoding, body, &state.decode_limits) {
        Ok(d) => d,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    let outcome = match ingest(state, tenant, storage, decoded, durability).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let mut resp = match outcome.rejection_message() {
        None => StatusCode::NO_CONTENT.into_response(),
        Some(msg) => text(StatusCode::BAD_REQUEST, msg),
    };
    if version == Version::V2 {
        let h = resp.headers_mut();
        h.insert(
            "x-prometheus-remote-write-samples-written",
            HeaderValue::from(outcome.written),
        );
        h.insert(
            "x-prometheus-remote-write-histograms-written",
            HeaderValue::from(outcome.histograms),
        );
        h.insert(
            "x-prometheus-remote-write-exemplars-written",
            HeaderValue::from(outcome.exemplars),
        );
    }
    resp
}

/// The durability a request asks for in [`DURABILITY_HEADER`], else the
/// server's default; for a value that is neither, the 400's message.
pub(crate) fn durability_of(state: &AppState, headers: &HeaderMap) -> Result<Durability, String> {
    let value = headers
        .get(DURABILITY_HEADER)
        .map(|v| v.to_str().unwrap_or("?").trim());
    match value {
        None | Some("") => Ok(state.default_durability),
        Some(v) if v.eq_ignore_ascii_case("applied") => Ok(Durability::Applied),
        Some(v) if v.eq_ignore_ascii_case("durable") => Ok(Durability::Durable),
        Some(v) => Err(format!(
            "invalid X-Strata-Durability header {v:?}: use \"applied\" or \"durable\""
        )),
    }
}

/// The status for a decoder's error code.
pub(crate) fn status_of(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
}
