//! The ruler configuration API of Mimir and Cortex: each tenant's rule
//! groups, by namespace, kept in the bucket. Grafana's alert-rule editor
//! for a Mimir data source, `mimirtool rules` and `cortextool` speak it.
//!
//! | Method | Path                                         | Answer                  |
//! |--------|----------------------------------------------|-------------------------|
//! | GET    | `/prometheus/config/v1/rules`                 | every namespace (YAML)  |
//! | GET    | `/prometheus/config/v1/rules/{namespace}`     | one namespace (YAML)    |
//! | GET    | `/prometheus/config/v1/rules/{ns}/{group}`    | one group (YAML)        |
//! | POST   | `/prometheus/config/v1/rules/{namespace}`     | 202: group created or replaced |
//! | DELETE | `/prometheus/config/v1/rules/{namespace}`     | 202: namespace deleted  |
//! | DELETE | `/prometheus/config/v1/rules/{ns}/{group}`    | 202: group deleted      |
//!
//! The same routes answer below `/config/v1/rules` and `/prometheus/rules`
//! (the paths Grafana's ruler proxy asks for, by data source kind).
//!
//! A group is checked as a rule file's group is (`strata rules check`)
//! before it is kept; the tenant is the request's (`X-Scope-OrgID`). A
//! single node or a ruler evaluates the stored groups; any node that
//! reaches the bucket answers the API.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::routing::get;
use axum::Router;

use crate::ruler::store::{RuleStore, StoredGroup};
use crate::state::AppState;

/// Where the API lives: Mimir's path; the same below a data source URL
/// without Mimir's `/prometheus`, as Grafana asks for a Mimir data source;
/// and Cortex's older `rules` below Mimir's `/prometheus`, as Grafana asks
/// for other Prometheus-like data sources with a ruler.
pub const PREFIXES: [&str; 3] = [
    "/prometheus/config/v1/rules",
    "/config/v1/rules",
    "/prometheus/rules",
];

pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new();
    for prefix in PREFIXES {
        router = router
            .route(prefix, get(list_all))
            .route(
                &format!("{prefix}/{{namespace}}"),
                get(list_namespace)
                    .post(create_group)
                    .delete(delete_namespace),
            )
            .route(
                &format!("{prefix}/{{namespace}}/{{group}}"),
                get(get_group).delete(delete_group),
            );
    }
    router.with_state(state)
}

fn plain(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut msg = msg.into();
    msg.push('\n');
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

fn yaml(value: &serde_yaml::Value) -> Response {
    match serde_yaml::to_string(value) {
        Ok(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/yaml")],
            text,
        )
            .into_response(),
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write YAML: {e}"),
        ),
    }
}

/// Mimir's answer to a change: 202, the group is kept and the rulers
/// pick it up at their next poll.
fn accepted() -> Response {
    (
        StatusCode::ACCEPTED,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"success","data":null,"errorType":"","error":""}"#,
    )
        .into_response()
}

/// The request's tenant name and the store, or the answer saying why not.
fn scope(state: &AppState, headers: &HeaderMap) -> Result<(String, Arc<RuleStore>), Box<Response>> {
    let tenant = state.tenants.from_headers(headers).map_err(|e| {
        let status = match e {
            crate::tenants::TenantError::Missing => StatusCode::UNAUTHORIZED,
            crate::tenants::TenantError::Invalid(_) => StatusCode::BAD_REQUEST,
        };
        Box::new(plain(status, e.to_string()))
    })?;
    let store = state.rule_store.get().cloned().ok_or_else(|| {
        Box::new(plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the rule store is not open yet",
        ))
    })?;
    Ok((state.tenants.name(&tenant).to_owned(), store))
}

/// A stored group's YAML as a value (a group stored as text that no
/// longer parses shows as its name only).
fn group_value(g: &StoredGroup) -> serde_yaml::Value {
    serde_yaml::from_str(&g.yaml).unwrap_or_else(|_| {
        let mut m = serde_yaml::Mapping::new();
        m.insert("name".into(), g.name.clone().into());
        serde_yaml::Value::Mapping(m)
    })
}

/// `{namespace: [group, …], …}` of `groups` (sorted by namespace).
fn by_namespace(groups: &[StoredGroup]) -> serde_yaml::Value {
    let mut out = serde_yaml::Mapping::new();
    for g in groups {
        let key = serde_yaml::Value::from(g.namespace.clone());
        let entry = out
            .entry(key)
            .or_insert_with(|| serde_yaml::Value::Sequence(Vec::new()));
        if let serde_yaml::Value::Sequence(list) = entry {
            list.push(group_value(g));
        }
    }
    serde_yaml::Value::Mapping(out)
}

async fn list_all(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match store.list(Some(&tenant)).await {
        Ok(groups) if groups.is_empty() => plain(StatusCode::NOT_FOUND, "no rule groups found"),
        Ok(groups) => yaml(&by_namespace(&groups)),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn list_namespace(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(namespace): Path<String>,
) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match store.list(Some(&tenant)).await {
        Ok(groups) => {
            let mine: Vec<StoredGroup> = groups
                .into_iter()
                .filter(|g| g.namespace == namespace)
                .collect();
            if mine.is_empty() {
                plain(StatusCode::NOT_FOUND, "no rule groups found")
            } else {
                yaml(&by_namespace(&mine))
            }
        }
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn get_group(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path((namespace, group)): Path<(String, String)>,
) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match store.list(Some(&tenant)).await {
        Ok(groups) => match groups
            .iter()
            .find(|g| g.namespace == namespace && g.name == group)
        {
            Some(g) => yaml(&group_value(g)),
            None => plain(StatusCode::NOT_FOUND, "group does not exist"),
        },
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn create_group(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(namespace): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return plain(StatusCode::BAD_REQUEST, "the rule group is not UTF-8 text");
    };
    let group = match strata_rules::file::parse_group(text) {
        Ok(g) => g,
        Err(problems) => {
            let msg = problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            return plain(StatusCode::BAD_REQUEST, msg);
        }
    };
    if let Err(e) = store.put(&tenant, &namespace, &group.name, text).await {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, e);
    }
    if let Some(rules) = state.rules.get() {
        rules.stored_changed();
    }
    accepted()
}

async fn delete_namespace(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(namespace): Path<String>,
) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match store.delete_namespace(&tenant, &namespace).await {
        Ok(0) => plain(StatusCode::NOT_FOUND, "group namespace does not exist"),
        Ok(_) => {
            if let Some(rules) = state.rules.get() {
                rules.stored_changed();
            }
            accepted()
        }
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn delete_group(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path((namespace, group)): Path<(String, String)>,
) -> Response {
    let (tenant, store) = match scope(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match store.delete(&tenant, &namespace, &group).await {
        Ok(false) => plain(StatusCode::NOT_FOUND, "group does not exist"),
        Ok(true) => {
            if let Some(rules) = state.rules.get() {
                rules.stored_changed();
            }
            accepted()
        }
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
