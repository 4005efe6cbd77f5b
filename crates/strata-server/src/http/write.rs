//! `POST /api/v1/write`: Prometheus remote write 1.0 and 2.0.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use strata_remote_write::{
    apply_limits, decode_raw, negotiate, DecodedWrite, RawLabels, RawSeries, SeriesLimits, Version,
};
use strata_storage::{Durability, IngestSeries, StorageError, WriteLimits, Writer};

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

fn retry_after(status: StatusCode, secs: u64, msg: impl Into<String>) -> Response {
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

/// Decoded series as the storage takes them.
pub(crate) fn ingest_series(series: Vec<RawSeries>) -> Vec<IngestSeries<RawLabels>> {
    series
        .into_iter()
        .map(|s| IngestSeries {
            labels: s.labels,
            samples: s.samples,
            exemplars: s.exemplars,
            histograms: s.histograms,
        })
        .collect()
}

/// The write path's one validation step, after decoding: the
/// configuration's limits applied by [`apply_limits`] (label limits, the
/// reserved tenant label, the timestamps storage keeps), and the tenant's
/// label added.
pub(crate) fn check_series(
    decoded: &mut DecodedWrite<RawSeries>,
    limits: &SeriesLimits,
    tenant: &Tenant,
    now_ms: i64,
) {
    apply_limits(decoded, limits, tenant.0.as_deref(), now_ms);
}

/// The limits [`check_series`] holds every written series to: the label
/// limits, and the timestamps storage keeps (from the epoch, or now less
/// `storage.retention`, to now plus `limits.max_future`).
pub fn series_limits(config: &crate::config::Config) -> SeriesLimits {
    let limits = &config.limits;
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    SeriesLimits {
        max_labels_per_series: limits.max_labels_per_series,
        max_label_name_length: limits.max_label_name_length,
        max_label_value_length: limits.max_label_value_length,
        max_future_ms: Some(ms(limits.max_future)),
        max_age_ms: Some(ms(config.storage.retention)),
    }
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

/// What became of a decoded write's samples.
pub(crate) struct Ingested {
    /// Float samples stored, duplicates of stored ones included.
    pub written: usize,
    /// Native histogram samples stored, duplicates included.
    pub histograms: usize,
    /// Samples (floats and histograms) refused, by the decoder or its
    /// limits and by storage.
    pub rejected: usize,
    /// Samples (floats and histograms) offered in all.
    pub offered: usize,
    /// The refusals, one per line, as a 400 body lists them.
    pub reasons: Option<String>,
    /// Exemplars stored (or held already).
    pub exemplars: usize,
}

impl Ingested {
    /// The body of the 400 a write with refusals is answered with.
    pub fn rejection_message(&self) -> Option<String> {
        (self.rejected > 0).then(|| {
            let mut msg = format!(
                "{} of {} samples rejected ({} written)",
                self.rejected,
                self.offered,
                self.written + self.histograms
            );
            if let Some(r) = &self.reasons {
                msg.push('\n');
                msg.push_str(r);
            }
            msg
        })
    }
}

/// The write path every protocol shares once its body is decoded: the
/// request limits, the tenant's rate limit, the one validation step,
/// metadata, then storage. `Err` is the answer to give instead (413, 429,
/// 503 and the like), in remote write's plain text.
pub(crate) async fn ingest(
    state: &AppState,
    tenant: &Tenant,
    storage: &Writer,
    mut decoded: DecodedWrite<RawSeries>,
    durability: Durability,
) -> Result<Ingested, Response> {
    let limits = &state.config.limits;
    let series_count = decoded.series.len() + decoded.rejected.len();
    if series_count > limits.max_series_per_request {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request has {series_count} series, more than limits.max_series_per_request ({}); send smaller batches",
                limits.max_series_per_request
            ),
        ));
    }
    // Histograms count as samples for the limits, as they are for
    // Prometheus' shards.
    let n = decoded.sample_count() + decoded.histogram_count();
    if n > limits.max_samples_per_request {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request has {n} samples, more than limits.max_samples_per_request ({}); send smaller batches",
                limits.max_samples_per_request
            ),
        ));
    }
    state
        .metrics
        .samples_received
        .fetch_add(n as u64, Ordering::Relaxed);
    if let Err((wait, rate)) = state.tenants.take(tenant, n) {
        state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return Err(retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            format!(
                "ingest rate limit of {rate} samples/s for tenant {:?} exceeded; retry later",
                state.tenants.name(tenant)
            ),
        ));
    }
    check_series(&mut decoded, &state.series_limits, tenant, storage.now_ms());
    if !decoded.metadata.is_empty() {
        let entries = metadata_entries(std::mem::take(&mut decoded.metadata));
        if let Err(e) = storage
            .record_metadata(tenant.label_value(), &entries)
            .await
        {
            return Err(storage_error(&e));
        }
    }
    let n = decoded.sample_count() + decoded.histogram_count();
    // As Prometheus' receiver: an exemplar that cannot be stored is logged,
    // never a failed write.
    if let Some(problem) = decoded.exemplar_problem.take() {
        tracing::debug!(
            dropped = decoded.exemplars_dropped,
            first = %problem,
            "exemplars dropped"
        );
    }
    let rejection_msg = (!decoded.rejected.is_empty()).then(|| decoded.rejection_message());
    let rejected_invalid: usize = decoded.rejected.iter().map(|r| r.samples).sum();
    let series = ingest_series(decoded.series);
    let write_limits = WriteLimits {
        max_active_series: state.tenants.limits(tenant).max_active_series,
    };
    let outcome = storage
        .write_with(series, durability, write_limits)
        .await
        .map_err(|e| storage_error(&e))?;
    let mut reasons = rejection_msg;
    if let Some((series, why)) = &outcome.first_rejection {
        let line = format!(
            "series {series}: {why} ({} samples rejected in all)",
            outcome.rejected
        );
        reasons = Some(match reasons {
            Some(r) => format!("{r}\n{line}"),
            None => line,
        });
    }
    if outcome.exemplars_refused > 0 {
        tracing::debug!(
            refused = outcome.exemplars_refused,
            "exemplars refused: older than the out-of-order window (from now, or from their series' newest)"
        );
    }
    Ok(Ingested {
        written: outcome.appended + outcome.duplicates,
        histograms: outcome.histograms,
        rejected: rejected_invalid + outcome.rejected,
        offered: rejected_invalid + n,
        reasons,
        exemplars: outcome.exemplars,
    })
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

/// A request's metric metadata as storage keeps it.
fn metadata_entries(
    list: Vec<strata_remote_write::MetricMetadata>,
) -> Vec<(String, strata_storage::metadata::MetadataEntry)> {
    list.into_iter()
        .map(|m| {
            let entry = strata_storage::metadata::MetadataEntry {
                kind: m.kind.to_owned(),
                help: m.help,
                unit: m.unit,
            };
            (m.metric, entry)
        })
        .collect()
}

/// The status for a decoder's error code.
pub(crate) fn status_of(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
}
