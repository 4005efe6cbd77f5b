//! `/api/v1/rules` and `/api/v1/alerts` over every ruler: a ruler answers
//! for the groups it holds and asks each other live ruler that advertises
//! a URL for theirs, so that any ruler (or a load balancer in front of
//! them) shows every group once.

use std::time::Duration;

use axum::http::HeaderMap;
use serde_json::Value;

use super::lease::Sharing;

/// The header that marks a ruler's request to another: answered for that
/// ruler's own groups only, never asked further.
pub const LOCAL_HEADER: &str = "x-strata-ruler-local";

/// How long one ruler waits for another's answer; one that does not
/// answer in time is left out (and logged).
const TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a request came from another ruler.
pub fn is_local(headers: &HeaderMap) -> bool {
    headers.contains_key(LOCAL_HEADER)
}

/// `local` (an API answer's `data`) with the `key` list (`groups` or
/// `alerts`) of every other live ruler's answer to the same request
/// appended.
pub async fn merged(
    sharing: &Sharing,
    client: &reqwest::Client,
    path_and_query: &str,
    headers: &HeaderMap,
    mut local: Value,
    key: &str,
) -> Value {
    let others: Vec<String> = sharing
        .members()
        .into_iter()
        .filter(|m| m.id != sharing.id() && !m.url.is_empty())
        .map(|m| m.url)
        .collect();
    let asks = others.iter().map(|url| {
        let mut req = client
            .get(format!("{}{path_and_query}", url.trim_end_matches('/')))
            .timeout(TIMEOUT)
            .header(LOCAL_HEADER, "1");
        for name in ["authorization", crate::tenants::TENANT_HEADER] {
            if let Some(v) = headers.get(name) {
                req = req.header(name, v.clone());
            }
        }
        async move {
            let answer = async {
                let resp = req.send().await.map_err(|e| e.to_string())?;
                if !resp.status().is_success() {
                    return Err(format!("answered {}", resp.status()));
                }
                resp.json::<Value>().await.map_err(|e| e.to_string())
            }
            .await;
            (url, answer)
        }
    });
    for (url, answer) in futures::future::join_all(asks).await {
        match answer {
            Ok(v) => {
                if let (Some(theirs), Some(Value::Array(ours))) = (
                    v.get("data").and_then(|d| d.get(key)?.as_array()),
                    local.get_mut(key),
                ) {
                    ours.extend(theirs.iter().cloned());
                }
            }
            Err(e) => tracing::warn!(%url, error = %e, "another ruler's {key} not read"),
        }
    }
    if let Some(Value::Array(list)) = local.get_mut(key) {
        if key == "groups" {
            list.sort_by(|a, b| {
                (a["file"].as_str(), a["name"].as_str())
                    .cmp(&(b["file"].as_str(), b["name"].as_str()))
            });
        }
    }
    local
}
