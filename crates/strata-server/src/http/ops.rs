//! Health, readiness and metrics.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// 200 while the process serves and its object store answers; 503 once
/// every request to the store has failed for `server.store_unhealthy_after`.
pub async fn healthy(State(state): State<Arc<AppState>>) -> Response {
    let after = state.config.server.store_unhealthy_after;
    match state.store_failing_for() {
        Some((failing, error)) if !after.is_zero() && failing >= after => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Unhealthy: every object-store request has failed for {}s (last: {error})\n",
                failing.as_secs()
            ),
        )
            .into_response(),
        _ => (StatusCode::OK, "Strata is Healthy.\n").into_response(),
    }
}

pub async fn ready(State(state): State<Arc<AppState>>) -> Response {
    match state.storage() {
        Some(s) if s.is_fenced() => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: this writer was fenced by a newer writer on the same path.\n",
        )
            .into_response(),
        Some(_) => (StatusCode::OK, "Strata is Ready.\n").into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: recovery is in progress.\n",
        )
            .into_response(),
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let storage = state.storage().map(|s| s.as_ref());
    let writer = state.writer().map(|w| w.as_ref());
    let body = crate::metrics::render(&state.metrics, storage, writer, storage.is_some());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
