//! The distributor: a stateless front for writer shards. It decodes each
//! remote-write request, splits its series by shard ([`shard_map`]),
//! forwards the parts to their writers at once and answers when all have
//! answered: 2xx if every part was written, otherwise the most severe
//! writer answer, naming the shard.

mod forward;
mod metrics;
mod otlp;
pub mod shard_map;
mod split;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::http::write::{status_of, text};
use anyhow::Context as _;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use strata_remote_write::{decode_encoded, negotiate, DecodeLimits, Version};

use crate::config::Config;
use crate::metrics::ServerMetrics;
pub use forward::WRITTEN_HEADERS;
use metrics::DistributorMetrics;

/// What the distributor's handlers share. Nothing here outlives a request
/// but counters and pooled connections.
pub struct DistributorState {
    writers: Vec<String>,
    write_urls: Vec<String>,
    client: reqwest::Client,
    decode_limits: DecodeLimits,
    forward_timeout: Duration,
    metrics: DistributorMetrics,
    server_metrics: ServerMetrics,
    auth: Arc<crate::auth::Authenticator>,
    /// How OTLP metrics become series (checked at start-up).
    otlp: strata_otlp::Settings,
}

impl DistributorState {
    pub fn new(config: &Config) -> anyhow::Result<Self> {
        let writers = config.shards.writers.clone();
        let client = reqwest::Client::builder()
            .timeout(config.shards.forward_timeout)
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Self {
            write_urls: writers
                .iter()
                .map(|w| format!("{w}/api/v1/write"))
                .collect(),
            metrics: DistributorMetrics::new(&writers),
            writers,
            client,
            decode_limits: DecodeLimits {
                max_body_bytes: config.limits.max_body_bytes,
                max_decoded_bytes: config.limits.max_decoded_bytes,
            },
            forward_timeout: config.shards.forward_timeout,
            server_metrics: ServerMetrics::default(),
            auth: crate::auth::Authenticator::new(&config.auth).map_err(anyhow::Error::msg)?,
            otlp: config.otlp.settings().map_err(anyhow::Error::msg)?,
        })
    }

    fn write_url(&self, shard: usize) -> &str {
        self.write_urls.get(shard).map_or("", String::as_str)
    }

    fn writer(&self, shard: usize) -> &str {
        self.writers.get(shard).map_or("?", String::as_str)
    }
}

/// The distributor's HTTP API: remote write, OTLP metrics, health, readiness, metrics.
pub fn router(state: Arc<DistributorState>, max_body_bytes: usize) -> Router {
    Router::new()
        .route(
            "/api/v1/write",
            post(remote_write).get(crate::http::write::remote_write_get),
        )
        .route(crate::http::otlp::PATHS[0], post(otlp::otlp_metrics))
        .route(crate::http::otlp::PATHS[1], post(otlp::otlp_metrics))
        .layer(DefaultBodyLimit::max(max_body_bytes.saturating_add(1)))
        .route("/-/healthy", get(|| async { "Strata is Healthy.\n" }))
        .route("/-/ready", get(ready))
        .route("/metrics", get(metrics_text))
        .with_state(state)
}

/// Serves as a distributor until `shutdown` resolves, then finishes the
/// requests in flight.
pub async fn run(
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.listen))?;
    tracing::info!(
        listen = %config.server.listen,
        writers = ?config.shards.writers,
        "strata distributor starting"
    );
    let state = Arc::new(DistributorState::new(&config)?);
    let app = router(state, config.limits.max_body_bytes);
    let stopped = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing in-flight requests");
    };
    let tls = if config.tls.enabled() {
        Some(crate::tls::server_config(&config.tls)?)
    } else {
        None
    };
    crate::serve::serve(listener, app, tls, stopped).await;
    tracing::info!("bye");
    Ok(())
}

async fn ready(State(state): State<Arc<DistributorState>>) -> String {
    format!(
        "Strata distributor is Ready: {} writer shards.\n",
        state.writers.len()
    )
}

async fn metrics_text(State(state): State<Arc<DistributorState>>) -> Response {
    let mut body = crate::metrics::render(&state.server_metrics, None, None, true);
    state.metrics.render(&mut body);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

async fn remote_write(
    State(state): State<Arc<DistributorState>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = crate::http::write::vm_proto_handshake(&uri) {
        return r;
    }
    let started = Instant::now();
    let resp = handle(&state, &headers, &body).await;
    state
        .server_metrics
        .observe("write", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(state: &DistributorState, headers: &HeaderMap, body: &[u8]) -> Response {
    // Checked here too, so refused requests cost no decoding; the writers
    // check the forwarded credentials again.
    if let Err(e) = state.auth.check(crate::auth::Access::Write, headers) {
        return text(StatusCode::UNAUTHORIZED, e.to_string());
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (version, encoding) = match negotiate(header("content-type"), header("content-encoding")) {
        Ok(v) => v,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    state.server_metrics.count_encoding(encoding);
    let decoded = match decode_encoded(version, encoding, body, &state.decode_limits) {
        Ok(d) => d,
        Err(e) => return text(status_of(e.status()), e.to_string()),
    };
    let valid_samples = decoded.sample_count();
    state
        .server_metrics
        .samples_received
        .fetch_add(valid_samples as u64, Ordering::Relaxed);
    let rejection = (!decoded.rejected.is_empty()).then(|| {
        (
            decoded.rejected.iter().map(|r| r.samples).sum::<usize>(),
            decoded.rejection_message(),
        )
    });
    let parts = split::split(
        version,
        decoded.series,
        decoded.metadata,
        state.writers.len(),
    );
    let answers = forward::send_all(state, version, headers, parts).await;

    let failed = forward::failures(&answers);
    let mut resp = if let Some(worst) = failed.first() {
        let mut msg = String::new();
        for a in &failed {
            if !msg.is_empty() {
                msg.push('\n');
            }
            msg.push_str(&format!(
                "shard {} ({}) answered {}: {}",
                a.shard,
                state.writer(a.shard),
                a.status.as_u16(),
                a.message
            ));
        }
        let written: Vec<String> = answers
            .iter()
            .filter(|a| a.ok())
            .map(|a| a.shard.to_string())
            .collect();
        if !written.is_empty() {
            msg.push_str(&format!(
                "\nthe series of shard(s) {} were written",
                written.join(", ")
            ));
        }
        if let Some((_, m)) = &rejection {
            msg.push('\n');
            msg.push_str(m);
        }
        let mut r = text(worst.status, msg);
        if let Some(ra) = &worst.retry_after {
            r.headers_mut().insert("retry-after", ra.clone());
        }
        r
    } else if let Some((rejected, m)) = rejection {
        let written: u64 = answers.iter().map(|a| a.written[0]).sum();
        let written = if version == Version::V2 {
            written
        } else {
            valid_samples as u64
        };
        text(
            StatusCode::BAD_REQUEST,
            format!(
                "{rejected} of {} samples rejected ({written} written)\n{m}",
                rejected + valid_samples
            ),
        )
    } else {
        StatusCode::NO_CONTENT.into_response()
    };
    if version == Version::V2 {
        let h = resp.headers_mut();
        for (i, name) in WRITTEN_HEADERS.iter().enumerate() {
            let sum: u64 = answers
                .iter()
                .map(|a| a.written.get(i).copied().unwrap_or(0))
                .sum();
            h.insert(*name, HeaderValue::from(sum));
        }
    }
    resp
}
