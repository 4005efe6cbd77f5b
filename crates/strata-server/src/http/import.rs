//! `POST /api/v1/import/prometheus`: history in the Prometheus text
//! exposition format or OpenMetrics (as `promtool tsdb dump-openmetrics`
//! writes it), streamed into storage through the remote-write path.
//!
//! The body is read as it arrives and parsed line by line on a blocking
//! thread ([`text`]); samples go to storage in batches of at most
//! [`BATCH_SAMPLES`], each checked as a remote-write request is: the one
//! validation step (`check_series`: label limits, the reserved tenant
//! label, `limits.max_future`), the tenant's ingest rate and active-series
//! limits, the durability header. Memory stays bounded whatever the body's size: a line
//! being read, the batch being filled, one queued and one being written.
//!
//! As VictoriaMetrics' endpoint of the same path does, a line that does
//! not parse is skipped and the rest of the body is still imported; unlike
//! it, the answer is then 400 naming the first bad lines by number (204
//! when every sample was written). Samples that storage or the label
//! limits reject are counted and named the same way. A storage failure
//! (not ready, unavailable, fenced) stops the import at once and is
//! answered as remote write answers it, saying how far the import got;
//! what was written before stays written.
//!
//! Query arguments, as VictoriaMetrics takes them: `timestamp` (Unix
//! milliseconds) for lines without one (default: the time the line is
//! read), and `extra_label=name=value`, repeatable, which sets a label on
//! every imported series (replacing the line's own label of that name).
//! `Content-Encoding: gzip` bodies are decompressed as they stream.
//!
//! By seam: this file holds the endpoint (its request's options, the flow,
//! the answer); `body` streams the body to a blocking reader, `parse` reads
//! it line by line into batches ([`text`] parses one line), `writer` writes
//! the batches through the remote-write checks.

mod body;
mod parse;
mod text;
mod writer;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use strata_storage::{Durability, StorageError, WriteLimits};
use tokio::sync::mpsc;

use self::body::{pump, BodyReader};
use self::parse::{parse_body, ParseEnd};
use self::writer::{write_batches, Tally};
use super::write::{text, DURABILITY_HEADER};
use crate::state::AppState;
use crate::tenants::Tenant;

/// Where the endpoint is served.
pub const PATH: &str = "/api/v1/import/prometheus";
/// Most samples in one storage write.
pub const BATCH_SAMPLES: usize = 20_000;
/// A progress line is logged each time this many more samples are read.
const PROGRESS_EVERY: u64 = 1_000_000;
/// How many bad lines and rejections the answer quotes; the rest are
/// counted.
const MAX_QUOTED: usize = 10;
/// Bytes of compressed or plain body in flight between the connection and
/// the parser, in chunks as they arrive.
const BODY_CHUNKS_QUEUED: usize = 16;
/// Read buffer of the parser.
const READ_BUFFER: usize = 256 * 1024;

/// What a request asks for besides its body.
#[derive(Clone, Debug, Default, PartialEq)]
struct Options {
    /// For lines without a timestamp; `None`: the time the line is read.
    default_timestamp_ms: Option<i64>,
    /// Set on every series, replacing a label of the same name.
    extra_labels: Pairs,
    gzip: bool,
    batch_samples: usize,
    batch_series: usize,
    /// Longer lines are skipped as bad.
    max_line_bytes: usize,
}

/// Label name and value pairs.
type Pairs = Vec<(String, String)>;

/// Reads `timestamp` and `extra_label` from the query string.
fn query_options(query: Option<&str>) -> Result<(Option<i64>, Pairs), String> {
    let mut timestamp = None;
    let mut extra = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "timestamp" => {
                let t = v
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("cannot parse timestamp={v:?}: give Unix milliseconds"))?;
                timestamp = Some(t);
            }
            "extra_label" => {
                let (name, value) = v
                    .split_once('=')
                    .filter(|(n, v)| !n.is_empty() && !v.is_empty())
                    .ok_or_else(|| format!("extra_label={v:?} is not name=value"))?;
                extra.retain(|(n, _): &(String, String)| n != name);
                extra.push((name.to_owned(), value.to_owned()));
            }
            _ => {}
        }
    }
    Ok((timestamp, extra))
}

/// Whether the body is gzip-compressed; an error names another encoding.
fn gzipped(headers: &HeaderMap) -> Result<bool, String> {
    let Some(v) = headers.get(axum::http::header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let v = v.to_str().unwrap_or("?").trim();
    if v.is_empty() || v.eq_ignore_ascii_case("identity") {
        Ok(false)
    } else if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") {
        Ok(true)
    } else {
        Err(format!(
            "unsupported Content-Encoding {v:?}: send the body plain or with gzip"
        ))
    }
}

fn durability(state: &AppState, headers: &HeaderMap) -> Result<Durability, String> {
    match headers
        .get(DURABILITY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    {
        None | Some("") => Ok(state.default_durability),
        Some(v) if v.eq_ignore_ascii_case("applied") => Ok(Durability::Applied),
        Some(v) if v.eq_ignore_ascii_case("durable") => Ok(Durability::Durable),
        Some(v) => Err(format!(
            "invalid X-Strata-Durability header {v:?}: use \"applied\" or \"durable\""
        )),
    }
}

pub async fn import_prometheus(
    State(state): State<Arc<AppState>>,
    tenant: Option<Extension<Tenant>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let resp = match tenant {
        Some(Extension(tenant)) => handle(&state, &tenant, query.as_deref(), &headers, body).await,
        // The tenant layer always sets it; never fall back to a tenant.
        None => text(StatusCode::INTERNAL_SERVER_ERROR, "request has no tenant"),
    };
    state
        .metrics
        .observe("import", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(
    state: &AppState,
    tenant: &Tenant,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    if state.config.server.role.reads_only() {
        return text(
            StatusCode::FORBIDDEN,
            format!("this is a {} node: it does not take writes; send imports to the writer (role \"writer\" or \"all\")", state.config.server.role.name()),
        );
    }
    let (default_timestamp_ms, extra_labels) = match query_options(query) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let gzip = match gzipped(headers) {
        Ok(g) => g,
        Err(e) => return text(StatusCode::UNSUPPORTED_MEDIA_TYPE, e),
    };
    let durability = match durability(state, headers) {
        Ok(d) => d,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let storage = match super::write::writer_of(state) {
        Ok(w) => w,
        Err(no) => return no.into_response(),
    };
    let limits = &state.config.limits;
    let options = Options {
        default_timestamp_ms,
        extra_labels,
        gzip,
        batch_samples: BATCH_SAMPLES.min(limits.max_samples_per_request).max(1),
        batch_series: BATCH_SAMPLES.min(limits.max_series_per_request).max(1),
        max_line_bytes: max_line_bytes(limits),
    };
    let write_limits = WriteLimits {
        max_active_series: state.tenants.limits(tenant).max_active_series,
    };

    let (chunk_tx, chunk_rx) = mpsc::channel(BODY_CHUNKS_QUEUED);
    let (batch_tx, batch_rx) = mpsc::channel(1);
    let parser = tokio::task::spawn_blocking(move || {
        parse_body(BodyReader::new(chunk_rx), &options, &batch_tx)
    });
    let mut tally = Tally::new();
    let (_, stopped) = tokio::join!(
        pump(body, chunk_tx),
        write_batches(
            state,
            storage,
            tenant,
            durability,
            write_limits,
            batch_rx,
            &mut tally
        )
    );
    let parsed = match parser.await {
        Ok(p) => p,
        Err(e) => ParseEnd {
            fatal: Some(format!("the parser failed: {e}")),
            ..ParseEnd::default()
        },
    };
    tracing::info!(
        tenant = state.tenants.name(tenant),
        lines = parsed.lines,
        bad_lines = parsed.bad_lines,
        samples = tally.samples,
        written = tally.written,
        rejected = tally.rejected,
        elapsed_ms = tally.started.elapsed().as_millis() as u64,
        samples_per_sec = tally.rate(),
        stopped = stopped.is_some() || parsed.fatal.is_some(),
        "import finished"
    );
    answer(&tally, &parsed, stopped)
}

/// Longest line worth reading: the longest series the label limits let
/// through, every byte escaped, plus room for value, timestamp and an
/// exemplar.
fn max_line_bytes(limits: &crate::config::LimitsConfig) -> usize {
    limits
        .max_labels_per_series
        .saturating_mul(
            limits
                .max_label_name_length
                .saturating_add(limits.max_label_value_length)
                .saturating_add(4),
        )
        .saturating_mul(4)
        .saturating_add(4096)
}

/// The answer to the whole import.
fn answer(tally: &Tally, parsed: &ParseEnd, stopped: Option<(StorageError, Response)>) -> Response {
    let summary = format!(
        "{} lines read, {} not parsed; {} of {} samples written, {} rejected",
        parsed.lines, parsed.bad_lines, tally.written, tally.samples, tally.rejected
    );
    let details = || {
        let mut msg = String::new();
        for e in parsed.line_errors.iter().chain(&tally.rejections) {
            msg.push('\n');
            msg.push_str(e);
        }
        let unquoted = (parsed.bad_lines as usize).saturating_sub(parsed.line_errors.len());
        if unquoted > 0 {
            msg.push_str(&format!("\n… and {unquoted} more bad lines"));
        }
        msg
    };
    if let Some((e, resp)) = stopped {
        // Keep the status and Retry-After storage's error maps to.
        let (mut parts, _) = resp.into_parts();
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        let body = format!(
            "import stopped after line {}: {e}\n{summary}{}\n",
            parsed.lines,
            details()
        );
        return Response::from_parts(parts, Body::from(body));
    }
    if let Some(fatal) = &parsed.fatal {
        return text(
            StatusCode::BAD_REQUEST,
            format!("import stopped: {fatal}\n{summary}{}", details()),
        );
    }
    if parsed.bad_lines == 0 && tally.rejected == 0 {
        return StatusCode::NO_CONTENT.into_response();
    }
    text(StatusCode::BAD_REQUEST, format!("{summary}{}", details()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
