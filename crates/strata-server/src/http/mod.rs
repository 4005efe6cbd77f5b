//! The HTTP API: remote write, operations endpoints and the Prometheus
//! query API (from `strata-promql`).

mod ops;
pub mod write;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

use crate::query_source::StorageSource;
use crate::state::AppState;

pub fn router(state: Arc<AppState>) -> Router {
    let limits = strata_promql::QueryLimits {
        timeout: state.config.query.timeout,
        max_samples: state.config.query.max_samples,
        ..strata_promql::QueryLimits::default()
    };
    let source = Arc::new(StorageSource::new(Arc::clone(&state)));
    // The body limit is one byte over the configured one so the decoder
    // sees oversized bodies and answers 413 with its own message.
    let body_limit = state.config.limits.max_body_bytes.saturating_add(1);
    let write = Router::new()
        .route("/api/v1/write", post(write::remote_write))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(Arc::clone(&state));
    Router::new()
        .route("/-/healthy", get(ops::healthy))
        .route("/-/ready", get(ops::ready))
        .route("/metrics", get(ops::metrics))
        .with_state(state)
        .merge(write)
        .merge(strata_promql::router(source, limits))
}
