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

mod text;

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::StreamExt;
use strata_storage::{Durability, StorageError, WriteLimits};
use strata_write::{DecodedWrite, RawLabel, RawLabels, RawSeries};
use tokio::sync::mpsc;

use super::write::{storage_error, text, DURABILITY_HEADER};
use crate::ingest::{check_series, ingest_series};
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

/// Forwards the body's chunks to the parser until it ends, fails or the
/// parser stops taking them.
async fn pump(body: Body, tx: mpsc::Sender<Result<Bytes, String>>) {
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string());
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            return;
        }
    }
}

/// The body as a blocking reader over the chunks [`pump`] forwards.
struct BodyReader {
    rx: mpsc::Receiver<Result<Bytes, String>>,
    chunk: Bytes,
}

impl BodyReader {
    fn new(rx: mpsc::Receiver<Result<Bytes, String>>) -> Self {
        Self {
            rx,
            chunk: Bytes::new(),
        }
    }
}

impl Read for BodyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len());
        let head = self.chunk.split_to(n);
        if let Some(dst) = out.get_mut(..n) {
            dst.copy_from_slice(&head);
        }
        Ok(n)
    }
}

/// A batch of parsed series for one storage write.
#[derive(Debug, Default)]
struct Batch {
    series: Vec<RawSeries>,
    samples: usize,
}

/// How the parser ended.
#[derive(Debug, Default, PartialEq)]
struct ParseEnd {
    lines: u64,
    bad_lines: u64,
    /// The first bad lines: `line N: problem`.
    line_errors: Vec<String>,
    /// Why reading stopped before the end of the body.
    fatal: Option<String>,
}

impl ParseEnd {
    fn bad_line(&mut self, line: u64, problem: &str, text: &[u8]) {
        self.bad_lines += 1;
        if self.line_errors.len() < MAX_QUOTED {
            let mut msg = format!("line {line}: {problem}");
            if !text.is_empty() {
                let shown: String = String::from_utf8_lossy(text).chars().take(200).collect();
                msg.push_str(&format!(": {shown:?}"));
            }
            self.line_errors.push(msg);
        }
    }
}

/// The outcome of reading one line.
enum LineRead {
    Line,
    /// Longer than the limit; skipped up to its newline. The length read.
    TooLong(usize),
    End,
}

/// Reads the next line into `buf` without its newline, never holding more
/// than `max + 1` bytes of it.
fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<LineRead> {
    buf.clear();
    let n = r
        .by_ref()
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(LineRead::Line);
    }
    if buf.len() <= max {
        // The last line, without a newline.
        return Ok(LineRead::Line);
    }
    let mut skipped = buf.len();
    buf.clear();
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            break;
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(p) => {
                skipped += p;
                r.consume(p + 1);
                break;
            }
            None => {
                let len = available.len();
                skipped += len;
                r.consume(len);
            }
        }
    }
    Ok(LineRead::TooLong(skipped))
}

fn now_ms() -> i64 {
    strata_codec::clock::Clock::now_ms(&strata_codec::clock::SystemClock)
}

/// Sorts a line's labels after applying the extra labels; refuses
/// duplicate names.
fn build_labels(pairs: &mut Pairs, extra: &[(String, String)]) -> Result<RawLabels, String> {
    for (name, value) in extra {
        pairs.retain(|(n, _)| n != name);
        pairs.push((name.clone(), value.clone()));
    }
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if let Some((a, _)) = pairs
        .iter()
        .zip(pairs.iter().skip(1))
        .find(|(a, b)| a.0 == b.0)
    {
        return Err(format!("duplicate label name {:?}", a.0));
    }
    Ok(RawLabels(
        pairs
            .drain(..)
            .filter_map(|(n, v)| RawLabel::new(Bytes::from(n), Bytes::from(v)))
            .collect(),
    ))
}

/// Reads the body line by line and sends full batches to the writer.
/// Stops early when the writer has stopped taking them.
fn parse_body(reader: impl Read, options: &Options, tx: &mpsc::Sender<Batch>) -> ParseEnd {
    let reader: Box<dyn Read + '_> = if options.gzip {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, reader);
    let mut end = ParseEnd::default();
    let mut line = Vec::new();
    let mut pairs = Vec::new();
    let mut batch = Batch::default();
    // The previous line's series as written, and its labels: consecutive
    // lines of one series (a dump's order) decode it once.
    let mut last_series: Vec<u8> = Vec::new();
    let mut last_labels: Option<RawLabels> = None;
    loop {
        let read = match next_line(&mut reader, &mut line, options.max_line_bytes) {
            Ok(r) => r,
            Err(e) => {
                end.fatal = Some(format!(
                    "cannot read the body after line {}: {e}",
                    end.lines
                ));
                break;
            }
        };
        match read {
            LineRead::End => break,
            LineRead::TooLong(len) => {
                end.lines += 1;
                end.bad_line(
                    end.lines,
                    &format!(
                        "line of {len} bytes is longer than the limits allow ({} bytes)",
                        options.max_line_bytes
                    ),
                    &[],
                );
                continue;
            }
            LineRead::Line => end.lines += 1,
        }
        let sample = match text::split_line(&line) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(problem) => {
                end.bad_line(end.lines, &problem, &line);
                continue;
            }
        };
        let t = sample
            .timestamp_ms
            .or(options.default_timestamp_ms)
            .unwrap_or_else(now_ms);
        let same = last_labels.is_some() && sample.series == last_series.as_slice();
        if !same {
            let labels = text::parse_series(sample.series, &mut pairs)
                .and_then(|()| build_labels(&mut pairs, &options.extra_labels));
            match labels {
                Ok(l) => {
                    last_series.clear();
                    last_series.extend_from_slice(sample.series);
                    last_labels = Some(l);
                }
                Err(problem) => {
                    last_labels = None;
                    end.bad_line(end.lines, &problem, &line);
                    continue;
                }
            }
        }
        let Some(labels) = &last_labels else {
            continue;
        };
        match batch.series.last_mut() {
            Some(s) if same => s.samples.push((t, sample.value)),
            _ => batch.series.push(RawSeries {
                labels: labels.clone(),
                samples: vec![(t, sample.value)],
                histograms: Vec::new(),
                exemplars: Vec::new(),
            }),
        }
        batch.samples += 1;
        if batch.samples >= options.batch_samples || batch.series.len() >= options.batch_series {
            // The next line of the same series opens a new entry in the
            // (empty) next batch.
            if tx.blocking_send(std::mem::take(&mut batch)).is_err() {
                return end;
            }
        }
    }
    if batch.samples > 0 {
        let _ = tx.blocking_send(batch);
    }
    end
}

/// Counts of one import, kept by the writer.
struct Tally {
    started: Instant,
    samples: u64,
    written: u64,
    rejected: u64,
    rejections: Vec<String>,
    next_progress: u64,
}

impl Tally {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            samples: 0,
            written: 0,
            rejected: 0,
            rejections: Vec::new(),
            next_progress: PROGRESS_EVERY,
        }
    }

    fn rate(&self) -> u64 {
        let secs = self.started.elapsed().as_secs_f64();
        if secs > 0.0 {
            (self.samples as f64 / secs) as u64
        } else {
            0
        }
    }

    fn quote(&mut self, msg: String) {
        if self.rejections.len() < MAX_QUOTED {
            self.rejections.push(msg);
        }
    }
}

/// Waits until the tenant's ingest-rate budget has `n` samples, taking
/// them in pieces no larger than its burst.
async fn pace(state: &AppState, tenant: &Tenant, n: usize) {
    let limits = state.tenants.limits(tenant);
    if limits.ingest_rate_limit == 0 {
        return;
    }
    let burst = match limits.ingest_burst {
        0 => limits.ingest_rate_limit,
        b => b,
    };
    let piece_max = usize::try_from(burst).unwrap_or(usize::MAX).max(1);
    let mut left = n;
    let mut told = false;
    while left > 0 {
        let piece = left.min(piece_max);
        match state.tenants.take(tenant, piece) {
            Ok(()) => left -= piece,
            Err((wait, rate)) => {
                if !told {
                    tracing::info!(
                        tenant = state.tenants.name(tenant),
                        rate,
                        "import paced by the tenant's ingest rate limit"
                    );
                    told = true;
                }
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
    }
}

/// Writes batches as they come; answers the response that stopped the
/// import, if one did.
async fn write_batches(
    state: &AppState,
    storage: &Arc<strata_storage::Writer>,
    tenant: &Tenant,
    durability: Durability,
    write_limits: WriteLimits,
    mut rx: mpsc::Receiver<Batch>,
    tally: &mut Tally,
) -> Option<(StorageError, Response)> {
    while let Some(batch) = rx.recv().await {
        let n = batch.samples;
        tally.samples += n as u64;
        state
            .metrics
            .samples_received
            .fetch_add(n as u64, Ordering::Relaxed);
        pace(state, tenant, n).await;
        let mut decoded = DecodedWrite {
            series: batch.series,
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        };
        check_series(&mut decoded, &state.series_limits, tenant, storage.now_ms());
        for r in &decoded.rejected {
            tally.rejected += r.samples as u64;
            tally.quote(r.to_string());
        }
        let series = ingest_series(decoded.series);
        let outcome = match storage.write_with(series, durability, write_limits).await {
            Ok(o) => o,
            Err(e) => {
                let resp = storage_error(&e);
                return Some((e, resp));
            }
        };
        tally.written += (outcome.appended + outcome.duplicates) as u64;
        tally.rejected += outcome.rejected as u64;
        if let Some((series, why)) = &outcome.first_rejection {
            tally.quote(format!(
                "series {series}: {why} ({} samples of this batch rejected)",
                outcome.rejected
            ));
        }
        if tally.samples >= tally.next_progress {
            tally.next_progress = (tally.samples / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
            tracing::info!(
                tenant = state.tenants.name(tenant),
                samples = tally.samples,
                written = tally.written,
                rejected = tally.rejected,
                samples_per_sec = tally.rate(),
                "import progress"
            );
        }
    }
    None
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
