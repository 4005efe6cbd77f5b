//! The HTTP API: remote write, import, operations endpoints, the
//! Prometheus query API (from `strata-promql`) and its status endpoints,
//! and the web UI over them.

pub mod import;
mod ops;
pub mod otlp;
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
use strata_promql::{QueryError, Queryable, SourceResolver};

use crate::auth::Access;
use crate::query_source::StorageSource;
use crate::state::AppState;
use crate::tenants::{Tenant, TenantError, TenantSource};

pub fn router(state: Arc<AppState>) -> Router {
    let limits = strata_promql::QueryLimits {
        timeout: state.config.query.timeout,
        max_samples: state.config.query.max_samples,
        max_regex_bytes: state.config.query.max_regex_bytes,
        max_subquery_points: state.config.query.max_subquery_points,
        max_concurrent: state.config.query.max_concurrent,
        max_samples_total: state.config.query.max_samples_total,
        ..strata_promql::QueryLimits::default()
    };
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
    let guarded = Router::new()
        .route("/metrics", get(ops::metrics))
        .route(ops::CLEAN_TOMBSTONES, post(ops::clean_tombstones))
        .with_state(Arc::clone(&state))
        .merge(write)
        .merge(import)
        .merge(strata_promql::router_with(resolve, limits))
        .merge(status::router(Arc::clone(&state)))
        .merge(ui::router())
        .layer(middleware::from_fn_with_state(Arc::clone(&state), guard));
    Router::new()
        .route("/-/healthy", get(ops::healthy))
        .route("/-/ready", get(ops::ready))
        .with_state(state)
        .merge(guarded)
}

/// Which side of the API a path belongs to.
fn access_of(path: &str) -> Access {
    if path == "/api/v1/write"
        || path == import::PATH
        || path == ops::CLEAN_TOMBSTONES
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

/// Checks credentials, then resolves the tenant into the request's
/// extensions. Health and readiness probes do not pass through here. The
/// web UI's pages and files take the read credentials, as Prometheus'
/// and VictoriaMetrics' do, so that a browser asks for them once for the
/// whole site; they need no tenant, which their API calls carry.
async fn guard(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let access = access_of(&path);
    if let Err(e) = state.auth.check(access, req.headers()) {
        state
            .metrics
            .auth_failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut r = refuse(
            &path,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            &e.to_string(),
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"strata\", Basic realm=\"strata\""),
        );
        return r;
    }
    if path == "/metrics" || ui::serves(&path) {
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
