//! OTLP metrics on a distributor: translated here, as a writer would, and
//! forwarded to the shards as remote write, so that every series lands on
//! the shard its labels choose whichever protocol carried it.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use strata_otlp::Format;
use strata_remote_write::Version;

use super::{forward, split, DistributorState};
use crate::http::otlp::{answer_error, answer_ok, decode_body, refusal_lines};
use crate::http::write::status_of;

pub async fn otlp_metrics(
    State(state): State<Arc<DistributorState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let peer = peer.map(|Extension(ConnectInfo(a))| a.ip());
    let resp = handle(&state, &headers, peer, &body).await;
    state
        .server_metrics
        .observe("otlp", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(
    state: &DistributorState,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
    body: &Result<Bytes, BytesRejection>,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (format, gzip) = match Format::negotiate(header("content-type"), header("content-encoding"))
    {
        Ok(f) => f,
        Err(e) => {
            return answer_error(
                Format::Protobuf,
                status_of(e.status()),
                &e.to_string(),
                None,
            )
        }
    };
    if let Err(e) = state
        .auth
        .check(crate::auth::Access::Write, headers, peer)
        .await
    {
        let mut r = answer_error(format, e.status(), &e.to_string(), None);
        e.add_headers(r.headers_mut());
        return r;
    }
    let request = match decode_body(body, format, gzip, &state.decode_limits) {
        Ok(r) => r,
        Err((code, msg)) => return answer_error(format, code, &msg, None),
    };
    let mut translated = strata_otlp::translate(&request, &state.otlp);
    drop(request);
    let refused = std::mem::take(&mut translated.write.rejected);
    let decoded = translated.write.into_owned();
    state.server_metrics.samples_received.fetch_add(
        (decoded.sample_count() + decoded.histogram_count()) as u64,
        Ordering::Relaxed,
    );
    let parts = split::split(
        Version::V1,
        decoded.series,
        decoded.metadata,
        state.writers.len(),
    );
    let answers = forward::send_all(state, Version::V1, headers, parts).await;
    let failed = forward::failures(&answers);
    let mut lines = refusal_lines(&refused);
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
            let retry_after = worst.retry_after.clone();
            return answer_error(format, worst.status, &msg.join("\n"), retry_after);
        }
        lines.extend(failed.iter().map(|a| a.message.clone()));
    }
    // A writer's 400 does not say how many samples it refused; the first
    // line of its message does ("N of M samples rejected").
    let refused_by_writers: usize = failed
        .iter()
        .filter_map(|a| a.message.split_whitespace().next()?.parse::<usize>().ok())
        .sum();
    answer_ok(
        format,
        translated.rejected_points + refused_by_writers,
        &lines,
    )
}
