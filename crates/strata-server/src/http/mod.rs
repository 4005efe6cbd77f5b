//! The HTTP API: remote write, import, operations endpoints, the
//! Prometheus query API (from `strata-promql`) and its status endpoints,
//! and the web UI over them.

pub mod import;
mod ops;
pub mod otlp;
mod rules_config;
mod status;
mod ui;
pub mod write;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use futures::StreamExt as _;
use strata_promql::{QueryError, Queryable, SourceResolver};

use crate::auth::Access;
use crate::query_source::StorageSource;
use crate::state::AppState;
use crate::tenants::{Tenant, TenantError, TenantSource};

pub fn router(state: Arc<AppState>) -> Router {
    let limits = state.config.query.limits();
    let storage: Arc<dyn Queryable> = Arc::new(StorageSource::new(Arc::clone(&state)));
    // Every query reads through its tenant's view; a request the tenant
    // layer did not see reads nothing.
    let resolve: SourceResolver = Arc::new(move |req: &Request| {
        let tenant = req
            .extensions()
            .get::<Tenant>()
            .cloned()
            .ok_or_else(|| QueryError::Internal("request has no tenant".into()))?;
        Ok(Arc::new(TenantSource::new(Arc::clone(&storage), tenant)) as Arc<dyn Queryable>)
    });
    // The body limit is one byte over the configured one so the decoder
    // sees oversized bodies and answers 413 with its own message.
    let body_limit = state.config.limits.max_body_bytes.saturating_add(1);
    let write = Router::new()
        .route(
            "/api/v1/write",
            post(write::remote_write).get(write::remote_write_get),
        )
        .route(otlp::PATHS[0], post(otlp::otlp_metrics))
        .route(otlp::PATHS[1], post(otlp::otlp_metrics))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(Arc::clone(&state));
    // Imports stream their body, however large.
    let import = Router::new()
        .route(import::PATH, post(import::import_prometheus))
        .layer(DefaultBodyLimit::disable())
        .with_state(Arc::clone(&state));
    let api =
        Router::new()
            .merge(strata_promql::router_with(resolve, limits).layer(
                middleware::from_fn_with_state(Arc::clone(&state), admit_query),
            ))
            .merge(status::router(Arc::clone(&state)));
    let guarded = Router::new()
        .route("/metrics", get(ops::metrics))
        .route(ops::CLEAN_TOMBSTONES, post(ops::clean_tombstones))
        .route(
            ops::DELETE_SERIES,
            post(ops::delete_series).put(ops::delete_series),
        )
        .route(ops::RELOAD, post(ops::reload).put(ops::reload))
        .with_state(Arc::clone(&state))
        .merge(write)
        .merge(import)
        .merge(api.clone())
        // Mimir's layout: a Grafana data source or tool pointed at
        // `http://strata/prometheus` as at a Mimir finds the same API.
        .nest(MIMIR_PREFIX, api)
        .merge(rules_config::router(Arc::clone(&state)))
        .merge(ui::router())
        .layer(middleware::from_fn_with_state(Arc::clone(&state), guard));
    Router::new()
        .route("/-/healthy", get(ops::healthy))
        .route("/-/ready", get(ops::ready))
        .with_state(state)
        .merge(guarded)
}

/// Where Mimir serves the Prometheus API; Strata answers it there too.
pub const MIMIR_PREFIX: &str = "/prometheus";

/// Which side of the API a request belongs to.
fn access_of(method: &axum::http::Method, path: &str) -> Access {
    if rules_config::PREFIXES.iter().any(|p| path.starts_with(p))
        && method != axum::http::Method::GET
    {
        return Access::Write;
    }
    if path == "/api/v1/write"
        || path == import::PATH
        || path == ops::CLEAN_TOMBSTONES
        || path == ops::DELETE_SERIES
        || path == ops::RELOAD
        || otlp::PATHS.contains(&path)
    {
        Access::Write
    } else {
        Access::Read
    }
}

/// An error in the form the endpoint's clients read: Prometheus' JSON
/// envelope for the query API, plain text elsewhere.
fn refuse(path: &str, status: StatusCode, error_type: &str, msg: &str) -> Response {
    let path = path.strip_prefix(MIMIR_PREFIX).unwrap_or(path);
    let api = path.starts_with("/api/v1/")
        && path != "/api/v1/write"
        && path != import::PATH
        && !otlp::PATHS.contains(&path);
    if api {
        let body = serde_json::json!({"status": "error", "errorType": error_type, "error": msg});
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    } else {
        write::text(status, msg)
    }
}

/// Runs a query request on the query runtime once admitted; refused (503
/// with `Retry-After`, Prometheus' `unavailable`) when the queue is full
/// or its wait too long. Runs inside [`guard`], which set its tenant.
async fn admit_query(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let tenant = req
        .extensions()
        .get::<Tenant>()
        .map(|t| state.tenants.name(t).to_owned())
        .unwrap_or_default();
    let admitted = match state.admission.admit(&tenant).await {
        Ok(a) => a,
        Err(refusal) => {
            let mut r = refuse(
                &path,
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                &refusal.to_string(),
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(refusal.retry_after_secs()),
            );
            return r;
        }
    };
    // The handler runs on the query runtime, and so does the writing of
    // its body (a matrix is written as it is sent): the request runtime
    // only passes the chunks on. The turn ends once the body is written.
    let (head_tx, head_rx) = tokio::sync::oneshot::channel();
    let (body_tx, body_rx) = tokio::sync::mpsc::channel::<Result<Bytes, axum::Error>>(4);
    let task = state.query_pool.spawn(async move {
        let (parts, body) = next.run(req).await.into_parts();
        // A body whose length is known (anything but a streamed matrix)
        // goes whole, keeping its Content-Length.
        if axum::body::HttpBody::size_hint(&body).exact().is_some() {
            let whole = axum::body::to_bytes(body, usize::MAX).await;
            let _ = head_tx.send((parts, Some(whole)));
            return;
        }
        if head_tx.send((parts, None)).is_err() {
            return;
        }
        let mut body = body.into_data_stream();
        while let Some(chunk) = body.next().await {
            if body_tx.send(chunk).await.is_err() {
                // The client went away.
                return;
            }
        }
        drop(admitted);
    });
    let Ok((parts, whole)) = head_rx.await else {
        return refuse(
            &path,
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the query task ended without an answer",
        );
    };
    if let Some(whole) = whole {
        return match whole {
            Ok(bytes) => Response::from_parts(parts, axum::body::Body::from(bytes)),
            Err(e) => refuse(
                &path,
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                &format!("writing the answer failed: {e}"),
            ),
        };
    }
    // From here the task stops by itself when the body's reader is gone.
    task.detach();
    let chunks = futures::stream::unfold(body_rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    Response::from_parts(parts, axum::body::Body::from_stream(chunks))
}

/// Checks credentials, then resolves the tenant into the request's
/// extensions. Health and readiness probes do not pass through here. The
/// web UI's pages and files take the read credentials, as Prometheus'
/// and VictoriaMetrics' do, so that a browser asks for them once for the
/// whole site; they need no tenant, which their API calls carry.
async fn guard(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let access = access_of(req.method(), &path);
    let peer = crate::auth::peer_ip(req.extensions());
    if let Err(e) = state.auth.check(access, req.headers(), peer).await {
        // 429 and 503 (too many failures, verify queue full) have their
        // own counters.
        let status = e.status();
        let error_type = if status == StatusCode::UNAUTHORIZED {
            state
                .metrics
                .auth_failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            "unauthorized"
        } else {
            "unavailable"
        };
        let mut r = refuse(&path, status, error_type, &e.to_string());
        e.add_headers(r.headers_mut());
        return r;
    }
    if path == "/metrics" || path == ops::RELOAD || ui::serves(&path) {
        return next.run(req).await;
    }
    match state.tenants.from_headers(req.headers()) {
        Ok(t) => {
            req.extensions_mut().insert(t);
            next.run(req).await
        }
        Err(e @ TenantError::Missing) => refuse(
            &path,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            &e.to_string(),
        ),
        Err(e @ TenantError::Invalid(_)) => {
            refuse(&path, StatusCode::BAD_REQUEST, "bad_data", &e.to_string())
        }
    }
}
