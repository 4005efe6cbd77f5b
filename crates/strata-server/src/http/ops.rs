//! Health, readiness and metrics.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;
use crate::tenants::{scope, Tenant};

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
    let mut body = crate::metrics::render(&state.metrics, storage, writer, storage.is_some());
    state.admission.render(&mut body);
    if let Some(rules) = state.rules.get() {
        rules.render(&mut body);
    }
    if let Some(n) = &state.notifier {
        n.stats().render("strata", &mut body);
    }
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

/// The path Prometheus gives its admin call that removes deleted data.
pub const CLEAN_TOMBSTONES: &str = "/api/v1/admin/tsdb/clean_tombstones";

/// `POST /api/v1/admin/tsdb/clean_tombstones`, as in Prometheus: gives back
/// the space of data compaction deleted or overwrote now (one merge of
/// every SlateDB table, asked of its compactor) rather than once that is a
/// third of the tables. 204 once asked for (the merge runs in the
/// background; `strata_reclaim_merges_done_total` counts it done);
/// writers only.
pub async fn clean_tombstones(State(state): State<Arc<AppState>>) -> Response {
    let writer = match admin_writer(&state, CLEAN_TOMBSTONES, "clean tombstones") {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    match writer.reclaim_now().await {
        Ok(step) => {
            tracing::info!(?step, "clean_tombstones asked for");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => super::refuse(
            CLEAN_TOMBSTONES,
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            &format!("cannot clean tombstones now: {e}"),
        ),
    }
}

/// The writer an admin call at `path` goes to, or the answer refusing it:
/// 503 while recovering, 403 on a reader node (which cannot `what`).
fn admin_writer(
    state: &AppState,
    path: &str,
    what: &str,
) -> Result<Arc<strata_storage::Writer>, Box<Response>> {
    match super::write::writer_of(state) {
        Ok(w) => Ok(Arc::clone(w)),
        Err(super::write::NoWriter::Recovering) => Err(Box::new(super::refuse(
            path,
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "not ready: recovery is in progress",
        ))),
        Err(super::write::NoWriter::ReadOnly) => Err(Box::new(super::refuse(
            path,
            StatusCode::FORBIDDEN,
            "bad_data",
            &format!("this is a reader node: ask the writer to {what}"),
        ))),
    }
}

/// The path of Prometheus' admin call that deletes series.
pub const DELETE_SERIES: &str = "/api/v1/admin/tsdb/delete_series";

/// `POST` or `PUT /api/v1/admin/tsdb/delete_series`, as in Prometheus: the
/// samples between `start` and `end` (the whole history by default) of the
/// series each `match[]` selects, in the request's tenant, are left out of
/// every read from now on (on reader nodes within
/// [`strata_storage::TOMBSTONE_POLL`]). 204 once durable; writers only.
pub async fn delete_series(State(state): State<Arc<AppState>>, req: Request) -> Response {
    use strata_promql::http::params::{parse_time_param, MAX_TIME_MS, MIN_TIME_MS};
    let bad = |msg: String| super::refuse(DELETE_SERIES, StatusCode::BAD_REQUEST, "bad_data", &msg);
    let writer = match admin_writer(&state, DELETE_SERIES, "delete series") {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    let tenant = req.extensions().get::<Tenant>().cloned();
    let params = match strata_promql::http::read_params(req).await {
        Ok(p) => p,
        Err(e) => return bad(e.to_string()),
    };
    let selectors = params.all("match[]");
    if selectors.is_empty() {
        return bad("no match[] parameter provided".into());
    }
    let (start, end) = match (
        parse_time_param(&params, "start", MIN_TIME_MS),
        parse_time_param(&params, "end", MAX_TIME_MS),
    ) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return bad(e.to_string()),
    };
    let max_regex = state.config.query.max_regex_bytes;
    let sets = match strata_promql::http::parse_match_params(&selectors, max_regex) {
        Ok(sets) => sets,
        Err(e) => return bad(e.to_string()),
    };
    let tenant = tenant.unwrap_or(Tenant::DEFAULT);
    for set in sets {
        let scoped = match scope(&tenant, &set) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => return bad(e),
        };
        if let Err(e) = writer.delete_series(&scoped, start, end).await {
            return super::refuse(
                DELETE_SERIES,
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                &format!("cannot delete series now: {e}"),
            );
        }
        tracing::info!(matchers = ?scoped, start, end, "series deleted");
    }
    StatusCode::NO_CONTENT.into_response()
}

/// The path Prometheus reloads its configuration at.
pub const RELOAD: &str = "/-/reload";

/// Reads the rule files again (`POST /-/reload`, as SIGHUP): 200 once the
/// rules running are the files' now; 500 naming the problem when a file
/// does not load, the rules loaded before still running.
pub async fn reload(State(state): State<Arc<AppState>>) -> Response {
    let Some(rules) = state.rules.get() else {
        return (StatusCode::OK, "no rule files to reload\n").into_response();
    };
    let now = strata_codec::clock::Clock::now_ms(state.clock.as_ref());
    match rules.reload(now) {
        Ok(()) => (StatusCode::OK, "rules reloaded\n").into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload the rule files; the rules loaded before keep running: {e}\n"),
        )
            .into_response(),
    }
}
