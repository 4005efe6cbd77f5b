//! Prometheus' status endpoints (`/api/v1/status/*`) over this server, and
//! the empty answers of the scrape and alerting endpoints, which a store
//! without scraping, rules or alerts gives (as Mimir and VictoriaMetrics
//! do) so that Grafana's pages for them load.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use axum::extract::State;
use axum::response::{IntoResponse as _, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;
use strata_promql::http::success;

use crate::build_info::BUILD;
use crate::effective_config::Effective;
use crate::state::AppState;

/// The status and empty endpoints, each answering GET.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/v1/status/buildinfo", get(buildinfo))
        .route("/api/v1/status/config", get(config))
        .route("/api/v1/status/flags", get(flags))
        .route("/api/v1/status/runtimeinfo", get(runtimeinfo))
        .route("/api/v1/status/strata", get(strata))
        .route("/api/v1/status/keys", get(keys))
        .route("/api/v1/targets", get(targets))
        .route("/api/v1/rules", get(rules))
        .route("/api/v1/alerts", get(alerts))
        .route("/api/v1/alertmanagers", get(alertmanagers))
        .with_state(state)
}

fn answer(data: serde_json::Value) -> Response {
    success(&data.to_string())
}

/// Prometheus' fields; `goVersion` carries the Rust compiler's version.
async fn buildinfo() -> Response {
    answer(json!({
        "version": BUILD.version,
        "revision": BUILD.revision,
        "branch": BUILD.branch,
        "buildUser": "",
        "buildDate": BUILD.build_date,
        "goVersion": BUILD.rustc,
    }))
}

async fn config(State(state): State<Arc<AppState>>) -> Response {
    answer(json!({ "yaml": Effective::of(&state.config).yaml() }))
}

async fn flags(State(state): State<Arc<AppState>>) -> Response {
    answer(json!(Effective::of(&state.config).flat()))
}

/// The fields of Prometheus' that mean something here. The configuration
/// is read once at start, so it was loaded then and never reloaded; Go's
/// `GOMAXPROCS` and `goroutineCount` become the async runtime's worker
/// threads and live tasks.
async fn runtimeinfo(State(state): State<Arc<AppState>>) -> Response {
    let runtime = tokio::runtime::Handle::current().metrics();
    let started = rfc3339(state.started_ms);
    answer(json!({
        "startTime": started,
        "CWD": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
        "hostname": crate::config::hostname().unwrap_or_default(),
        "serverTime": rfc3339(state.clock.now_ms()),
        "reloadConfigSuccess": true,
        "lastConfigTime": started,
        "storageRetention": prometheus_duration(state.config.storage.retention),
        "GOMAXPROCS": runtime.num_workers(),
        "goroutineCount": runtime.num_alive_tasks(),
    }))
}

/// Strata's own state, for the status page and for operators: the role,
/// the shards, each database this process reads (a reader's lag behind its
/// writer's log among them) and the object store's health. Every value is
/// what the process knows now; nothing is estimated.
/// The live keys of each database this node reads, by kind: how many and
/// their bytes (`docs/operations.md`, "What the bucket holds"). Reads the
/// whole keyspace: an operator's question, not a dashboard's.
async fn keys(State(state): State<Arc<AppState>>) -> Response {
    let open = state.shards.read().clone();
    let mut databases = Vec::with_capacity(open.len());
    for s in &open {
        match s.key_usage().await {
            Ok(kinds) => databases.push(json!({
                "kinds": kinds
                    .iter()
                    .map(|k| json!({
                        "kind": k.kind,
                        "keys": k.keys,
                        "keyBytes": k.key_bytes,
                        "valueBytes": k.value_bytes,
                    }))
                    .collect::<Vec<_>>(),
            })),
            Err(e) => {
                return super::refuse(
                    "/api/v1/status/keys",
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    &format!("cannot read the store's keys: {e}"),
                )
            }
        }
    }
    answer(json!({ "databases": databases }))
}

async fn strata(State(state): State<Arc<AppState>>) -> Response {
    let now = state.clock.now_ms();
    let open = state.shards.read().clone();
    let expected = state
        .shards_expected
        .load(std::sync::atomic::Ordering::Acquire);
    let databases: Vec<serde_json::Value> = open
        .iter()
        .map(|s| {
            let os = s.object_store_stats();
            let failing = s.object_store_failing_for();
            json!({
                "readOnly": s.is_reader(),
                "fenced": s.is_fenced(),
                "headSeries": s.head().num_series(),
                "objectStoreRequests": os.requests,
                "objectStoreErrors": os.errors,
                "objectStoreReadBytes": os.bytes_read,
                "objectStoreWrittenBytes": os.bytes_written,
                "objectStoreFailingSeconds": failing.map(|(d, _)| d.as_secs_f64()),
                "logFollowedSecondsAgo": s
                    .followed_at_ms()
                    .map(|t| now.saturating_sub(t).max(0) as f64 / 1000.0),
            })
        })
        .collect();
    let failing = state.store_failing_for();
    let role = serde_json::to_value(state.config.server.role).unwrap_or_default();
    answer(json!({
        "role": role,
        "ready": state.storage().is_some_and(|s| !s.is_fenced()),
        "shards": {
            "count": state.config.shards.count,
            "id": state.config.shard_id(),
            "open": open.len(),
            "expected": expected,
        },
        "objectStore": {
            "healthy": failing.is_none(),
            "failingForSeconds": failing.as_ref().map(|(d, _)| d.as_secs_f64()),
            "lastError": failing.map(|(_, e)| e),
        },
        "databases": databases,
    }))
}

fn rfc3339(ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_nanos(t).to_string()
}

/// A duration as Prometheus' `model.Duration` prints it: `15d`, `1h30m`;
/// years and weeks only when they divide it exactly.
fn prometheus_duration(d: Duration) -> String {
    let mut ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0s".into();
    }
    const DAY: u64 = 86_400_000;
    let mut out = String::new();
    for (unit, size, exact) in [
        ("y", 365 * DAY, true),
        ("w", 7 * DAY, true),
        ("d", DAY, false),
        ("h", 3_600_000, false),
        ("m", 60_000, false),
        ("s", 1_000, false),
        ("ms", 1, false),
    ] {
        if exact && ms % size != 0 {
            continue;
        }
        let n = ms / size;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
            ms -= n * size;
        }
    }
    out
}

async fn targets() -> Response {
    answer(json!({ "activeTargets": [], "droppedTargets": [] }))
}

/// Prometheus' `/api/v1/rules`, with its filters (`type`, `rule_name[]`,
/// `rule_group[]`, `file[]`, `match[]`, `exclude_alerts`) and its pages of
/// groups (`group_limit`, `group_next_token`), parameters read and refused
/// as Prometheus 3 reads and refuses them.
async fn rules(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let groups = match tenant_groups(&state, &headers) {
        Ok(g) => g,
        Err(r) => return *r,
    };
    let mut filter = strata_rules::api::RuleFilter::default();
    let (mut kind, mut exclude_alerts, mut group_limit, mut next_token) = (None, None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        // Like Go's `Query().Get`, the first value of a single parameter.
        match k.as_ref() {
            "type" => {
                kind.get_or_insert_with(|| v.to_lowercase());
            }
            "exclude_alerts" => {
                exclude_alerts.get_or_insert_with(|| v.to_lowercase());
            }
            "group_limit" => {
                group_limit.get_or_insert_with(|| v.into_owned());
            }
            "group_next_token" => {
                next_token.get_or_insert_with(|| v.into_owned());
            }
            "rule_name[]" => filter.rule_names.push(v.into_owned()),
            "rule_group[]" => filter.group_names.push(v.into_owned()),
            "file[]" => filter.files.push(v.into_owned()),
            "match[]" => {
                match strata_promql::http::parse_match_params(
                    &[v.as_ref()],
                    state.config.query.max_regex_bytes,
                ) {
                    Ok(sets) => filter.matchers.extend(sets),
                    Err(e) => return bad_data(&e.to_string()),
                }
            }
            _ => {}
        }
    }
    filter.kind = match kind.as_deref().unwrap_or("") {
        "" => None,
        "alert" => Some(strata_rules::api::RuleKind::Alerting),
        "record" => Some(strata_rules::api::RuleKind::Recording),
        other => {
            return bad_data(&format!(
                "invalid parameter \"type\": not supported value {}",
                go_quote(other)
            ))
        }
    };
    filter.exclude_alerts = match exclude_alerts.as_deref().unwrap_or("") {
        "" => false,
        v => match go_parse_bool(v) {
            Some(b) => b,
            None => {
                return bad_data(&format!(
                    "invalid parameter \"exclude_alerts\": error converting exclude_alerts: \
                     strconv.ParseBool: parsing {}: invalid syntax",
                    go_quote(v)
                ))
            }
        },
    };
    let page = match group_page(group_limit.as_deref(), next_token.as_deref()) {
        Ok(p) => p,
        Err(e) => return bad_data(&e),
    };
    let local = strata_rules::api::rules(&groups, &filter);
    let is_local = crate::ruler::fan_out::is_local(&headers);
    let mut all = over_rulers(&state, &uri, &headers, local, "groups").await;
    // Pages of the groups of every ruler, cut where they are merged.
    if let (Some(page), false) = (page, is_local) {
        if let Err(e) = paginate(&mut all, page) {
            return bad_data(&e);
        }
    }
    answer(all)
}

/// `group_limit` and `group_next_token`: at most how many groups, from
/// which; `None` for all of them.
fn group_page(limit: Option<&str>, token: Option<&str>) -> Result<Option<(usize, String)>, String> {
    let token = token.unwrap_or("");
    let limit = limit.unwrap_or("");
    if !token.is_empty() && limit.is_empty() {
        return Err(
            "invalid parameter \"group_next_token\": group_limit needs to be present \
                    in order to paginate over the groups"
                .into(),
        );
    }
    if limit.is_empty() {
        return Ok(None);
    }
    let n: i32 = limit.parse().map_err(|e: std::num::ParseIntError| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!(
            "invalid parameter \"group_limit\": group_limit needs to be a valid number: \
             strconv.ParseInt: parsing {}: {why}",
            go_quote(limit)
        )
    })?;
    if n <= 0 {
        return Err(
            "invalid parameter \"group_limit\": group_limit needs to be greater than 0".into(),
        );
    }
    Ok(Some((n.unsigned_abs() as usize, token.to_owned())))
}

/// The page `(limit, token)` of `data.groups` (sorted by file and name):
/// from the group `token` names (the first when empty), at most `limit`
/// groups, and `groupNextToken` naming the group after them if any.
fn paginate(data: &mut serde_json::Value, (limit, token): (usize, String)) -> Result<(), String> {
    let Some(serde_json::Value::Array(groups)) = data.get_mut("groups") else {
        return Ok(());
    };
    let token_of = |g: &serde_json::Value| {
        use sha2::Digest as _;
        let key = format!(
            "{};{}",
            g["file"].as_str().unwrap_or(""),
            g["name"].as_str().unwrap_or("")
        );
        sha2::Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let from = if token.is_empty() {
        0
    } else {
        groups
            .iter()
            .position(|g| token_of(g) == token)
            .ok_or_else(|| {
                format!(
                    "invalid parameter \"group_next_token\": invalid group_next_token '{token}'. \
                     were rule groups changed?"
                )
            })?
    };
    let mut page: Vec<serde_json::Value> = groups.drain(from..).collect();
    let next = page.get(limit).map(token_of);
    page.truncate(limit);
    *groups = page;
    if let (Some(next), Some(obj)) = (next, data.as_object_mut()) {
        obj.insert("groupNextToken".into(), next.into());
    }
    Ok(())
}

/// `s` as Go's `%q` writes a plain string.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `local` with the other rulers' answers to the same request merged in,
/// on a ruler that shares its groups; `local` elsewhere.
async fn over_rulers(
    state: &AppState,
    uri: &axum::http::Uri,
    headers: &axum::http::HeaderMap,
    local: serde_json::Value,
    key: &str,
) -> serde_json::Value {
    use crate::ruler::fan_out;
    let Some(sharing) = state.rules.get().and_then(|r| r.sharing()) else {
        return local;
    };
    if fan_out::is_local(headers) {
        return local;
    }
    let path_and_query = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    fan_out::merged(
        sharing,
        &state.http_client,
        path_and_query,
        headers,
        local,
        key,
    )
    .await
}

/// The rule groups of the request's tenant this node evaluates.
fn tenant_groups(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<Vec<Arc<strata_rules::group::Group>>, Box<Response>> {
    let tenant = state.tenants.from_headers(headers).map_err(|e| {
        let status = match e {
            crate::tenants::TenantError::Missing => axum::http::StatusCode::UNAUTHORIZED,
            crate::tenants::TenantError::Invalid(_) => axum::http::StatusCode::BAD_REQUEST,
        };
        let body = json!({"status": "error", "errorType": "bad_data", "error": e.to_string()});
        Box::new(
            (
                status,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response(),
        )
    })?;
    let name = state.tenants.name(&tenant).to_owned();
    Ok(state
        .rules
        .get()
        .map(|r| r.groups_of(&name))
        .unwrap_or_default())
}

fn bad_data(msg: &str) -> Response {
    let body = json!({"status": "error", "errorType": "bad_data", "error": msg});
    (
        axum::http::StatusCode::BAD_REQUEST,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Prometheus' `/api/v1/alerts`: every pending and firing alert.
async fn alerts(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    let groups = match tenant_groups(&state, &headers) {
        Ok(g) => g,
        Err(r) => return *r,
    };
    let local = strata_rules::api::alerts(&groups);
    answer(over_rulers(&state, &uri, &headers, local, "alerts").await)
}

/// Prometheus' `/api/v1/alertmanagers`: the Alertmanagers alerts are
/// sent to, each by the URL it is posted at.
async fn alertmanagers(State(state): State<Arc<AppState>>) -> Response {
    let active: Vec<serde_json::Value> = state
        .notifier
        .as_ref()
        .map(|n| n.stats().alertmanagers())
        .unwrap_or_default()
        .into_iter()
        .map(|url| json!({ "url": url }))
        .collect();
    answer(json!({ "activeAlertmanagers": active, "droppedAlertmanagers": [] }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_prometheus_prints_them() {
        let s = Duration::from_secs;
        assert_eq!(prometheus_duration(s(15 * 86_400)), "15d");
        assert_eq!(prometheus_duration(s(14 * 86_400)), "2w");
        assert_eq!(prometheus_duration(s(365 * 86_400)), "1y");
        assert_eq!(prometheus_duration(s(5_400)), "1h30m");
        assert_eq!(prometheus_duration(Duration::from_millis(1_500)), "1s500ms");
        assert_eq!(prometheus_duration(Duration::ZERO), "0s");
    }
}
