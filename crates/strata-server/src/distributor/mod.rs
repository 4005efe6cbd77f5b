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

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::http::write::{status_of, text};
use anyhow::Context as _;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
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
    state.auth.render(&mut body);
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
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = crate::http::write::vm_proto_handshake(&uri) {
        return r;
    }
    let started = Instant::now();
    let peer = peer.map(|Extension(ConnectInfo(a))| a.ip());
    let resp = handle(&state, &headers, peer, &body).await;
    state
        .server_metrics
        .observe("write", resp.status().as_u16(), started.elapsed());
    resp
}

async fn handle(
    state: &DistributorState,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
    body: &[u8],
) -> Response {
    // Checked here too, so refused requests cost no decoding; the writers
    // check the forwarded credentials again.
    if let Err(e) = state
        .auth
        .check(crate::auth::Access::Write, headers, peer)
        .await
    {
        let mut r = text(e.status(), e.to_string());
        e.add_headers(r.headers_mut());
        return r;
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
    let valid_samples = decoded.sample_count() + decoded.histogram_count();
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
        // Float samples and histograms.
        let written: u64 = answers.iter().map(|a| a.written[0] + a.written[1]).sum();
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::sync::Mutex;

    use strata_codec::histogram::{CounterResetHint, Histogram, HistogramSample, Span};
    use strata_codec::{Exemplar, Label};
    use strata_remote_write::proto::v1;
    use strata_remote_write::{decode, encode_v1, encode_v2, V2RequestBuilder};

    use super::*;

    type Received = Arc<Mutex<Vec<(usize, Version, Vec<u8>)>>>;
    type TestSeries = (Vec<Label>, Vec<(i64, HistogramSample)>, Vec<Exemplar>);

    /// A writer that keeps what it is sent and answers 204 with the 2.0
    /// counts of what the body holds.
    async fn fake_writer(shard: usize, received: Received) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route(
            "/api/v1/write",
            post(move |headers: HeaderMap, body: Bytes| {
                let received = received.clone();
                async move {
                    let ct = headers["content-type"].to_str().unwrap();
                    let version = if ct.contains("io.prometheus.write.v2") {
                        Version::V2
                    } else {
                        Version::V1
                    };
                    let d = decode(version, &body, &DecodeLimits::default()).unwrap();
                    received
                        .lock()
                        .unwrap()
                        .push((shard, version, body.to_vec()));
                    let mut r = StatusCode::NO_CONTENT.into_response();
                    let h = r.headers_mut();
                    h.insert(WRITTEN_HEADERS[0], HeaderValue::from(d.sample_count()));
                    h.insert(WRITTEN_HEADERS[1], HeaderValue::from(d.histogram_count()));
                    r
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    fn histogram(n: u64) -> HistogramSample {
        HistogramSample::Int(Histogram {
            schema: 1,
            zero_threshold: 1e-128,
            count: n,
            sum: 2.0,
            positive_spans: vec![Span::new(0, 1)],
            positive_buckets: vec![n as i64],
            counter_reset_hint: CounterResetHint::NotReset,
            ..Histogram::default()
        })
    }

    #[tokio::test]
    async fn histograms_are_forwarded_to_their_shards_in_both_versions() {
        let received: Received = Arc::default();
        let writers = [
            fake_writer(0, received.clone()).await,
            fake_writer(1, received.clone()).await,
        ];
        let config = Config::load(
            None,
            [
                ("STRATA_SERVER_ROLE".to_owned(), "distributor".to_owned()),
                ("STRATA_SHARDS_WRITERS".to_owned(), writers.join(",")),
            ],
            &crate::config::Overrides::default(),
        )
        .unwrap();
        let state = DistributorState::new(&config).unwrap();
        // 20 series: histograms only, with an exemplar each.
        let series: Vec<TestSeries> = (0..20)
            .map(|i| {
                (
                    vec![Label::new("__name__", "h"), Label::new("i", i.to_string())],
                    vec![(1_000, histogram(i + 1)), (2_000, histogram(i + 2))],
                    vec![Exemplar {
                        labels: vec![Label::new("trace_id", format!("t{i}"))],
                        t: 1_000,
                        v: 0.5,
                    }],
                )
            })
            .collect();
        for version in [Version::V1, Version::V2] {
            received.lock().unwrap().clear();
            let mut body = Vec::new();
            match version {
                Version::V1 => {
                    let req = v1::WriteRequest {
                        timeseries: series
                            .iter()
                            .map(|(labels, hs, ex)| v1::TimeSeries {
                                histograms: hs
                                    .iter()
                                    .map(|(t, h)| v1::Histogram::from_sample(*t, h))
                                    .collect(),
                                exemplars: ex.iter().map(v1::Exemplar::from).collect(),
                                ..v1::TimeSeries::from_samples(labels, &[])
                            })
                            .collect(),
                        metadata: Vec::new(),
                    };
                    encode_v1(&req, &mut body);
                }
                Version::V2 => {
                    let mut b = V2RequestBuilder::new();
                    for (labels, hs, ex) in &series {
                        b.add_series_with_histograms(labels, &[], hs, ex);
                    }
                    encode_v2(&b.build(), &mut body);
                }
            }
            let mut headers = HeaderMap::new();
            headers.insert("content-type", version.content_type().parse().unwrap());
            let resp = handle(&state, &headers, None, &body).await;
            assert_eq!(resp.status(), StatusCode::NO_CONTENT, "{version:?}");
            if version == Version::V2 {
                assert_eq!(resp.headers()[WRITTEN_HEADERS[1]], "40");
                assert_eq!(resp.headers()[WRITTEN_HEADERS[0]], "0");
            }
            let got = received.lock().unwrap().clone();
            assert_eq!(got.len(), 2, "{version:?}: both shards get a part");
            let mut forwarded = Vec::new();
            for (shard, v, body) in got {
                assert_eq!(v, version);
                let d = decode(v, &body, &DecodeLimits::default()).unwrap();
                assert!(d.rejected.is_empty());
                for s in d.series {
                    assert_eq!(shard_map::shard_of(&s.labels, 2) as usize, shard);
                    assert_eq!(s.exemplars.len(), 1);
                    forwarded.push(s);
                }
            }
            forwarded.sort_by_key(|s| s.labels[1].value.parse::<u64>().unwrap());
            assert_eq!(forwarded.len(), 20);
            for (s, (labels, hs, _)) in forwarded.iter().zip(&series) {
                assert_eq!(&s.labels, labels);
                assert_eq!(&s.histograms, hs);
            }
        }
    }
}
