//! Posting a batch: each group's Alertmanagers found, the group's
//! relabeling applied, and one request to each Alertmanager, all at once,
//! each bounded by the group's timeout. Prometheus' `sendAll`/`sendOne`.

use std::collections::HashMap;
use std::time::Instant;

use futures::future::join_all;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};

use crate::group::Notification;
use crate::relabel;

use super::settings::AlertmanagerSettings;
use super::stats::NotifierStats;
use super::target::Target;
use super::{body, NotifierError};

const USER_AGENT_VALUE: &str = concat!("Strata/", env!("CARGO_PKG_VERSION"));

/// A group of Alertmanagers ready to post to.
pub(crate) struct Group {
    settings: AlertmanagerSettings,
    targets: Vec<Target>,
    client: reqwest::Client,
}

impl Group {
    pub(crate) fn new(settings: &AlertmanagerSettings) -> Result<Self, NotifierError> {
        let targets = settings
            .urls
            .iter()
            .map(|u| Target::parse(u, &settings.path_prefix))
            .collect::<Result<_, _>>()
            .map_err(NotifierError::Settings)?;
        // Prometheus uses no proxy unless told to.
        let mut builder = reqwest::Client::builder().no_proxy();
        if let Some(tls) = &settings.tls {
            builder = builder.use_preconfigured_tls(super::tls::client_config(tls)?);
        }
        let client = builder
            .build()
            .map_err(|e| NotifierError::Client(e.to_string()))?;
        Ok(Self {
            settings: settings.clone(),
            targets,
            client,
        })
    }

    /// `request` with the group's credentials, files read now as
    /// Prometheus reads them at each request.
    async fn authorize(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, String> {
        async fn read(path: &std::path::Path) -> Result<String, String> {
            tokio::fs::read_to_string(path)
                .await
                .map(|t| t.trim().to_owned())
                .map_err(|e| format!("reading {}: {e}", path.display()))
        }
        let s = &self.settings;
        if let Some(token) = &s.bearer_token {
            return Ok(request.bearer_auth(&token.0));
        }
        if let Some(path) = &s.bearer_token_file {
            return Ok(request.bearer_auth(read(path).await?));
        }
        let Some(auth) = &s.basic_auth else {
            return Ok(request);
        };
        let password = match (&auth.password, &auth.password_file) {
            (Some(p), _) => p.0.clone(),
            (None, Some(path)) => read(path).await?,
            (None, None) => String::new(),
        };
        Ok(request.basic_auth(&auth.username, Some(password)))
    }

    /// Posts `payload` to `url`; any 2xx is success.
    async fn post(&self, url: &str, payload: Vec<u8>) -> Result<(), String> {
        let request = self
            .client
            .post(url)
            .timeout(self.settings.timeout)
            .header(USER_AGENT, USER_AGENT_VALUE)
            .header(CONTENT_TYPE, "application/json")
            .body(payload);
        let response = self
            .authorize(request)
            .await?
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        // Read to the end so the connection can be reused.
        let _ = response.bytes().await;
        if !status.is_success() {
            return Err(format!("bad response status {status}"));
        }
        Ok(())
    }
}

/// Finds each group's Alertmanagers now, a failed look-up keeping the
/// name's last addresses, and records them in `stats`.
pub(crate) async fn discover<'a>(
    groups: &'a [std::sync::Arc<Group>],
    resolved: &mut HashMap<String, Vec<String>>,
    stats: &NotifierStats,
) -> Vec<(&'a Group, Vec<String>)> {
    let lookups = groups.iter().map(|g| async move {
        let per_target = join_all(g.targets.iter().map(|t| t.resolve(g.settings.timeout))).await;
        (g, per_target)
    });
    let mut out = Vec::with_capacity(groups.len());
    for (group, per_target) in join_all(lookups).await {
        let mut urls = Vec::new();
        for (target, found) in group.targets.iter().zip(per_target) {
            match found {
                Ok(found) => {
                    urls.extend(found.iter().cloned());
                    resolved.insert(target.key(), found);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "finding Alertmanagers");
                    if let Some(last) = resolved.get(&target.key()) {
                        urls.extend(last.iter().cloned());
                    }
                }
            }
        }
        urls.sort();
        urls.dedup();
        out.push((group.as_ref(), urls));
    }
    stats.set_alertmanagers(
        out.iter()
            .flat_map(|(_, urls)| urls.iter().map(String::as_str)),
    );
    out
}

/// Posts `alerts` to every Alertmanager of every group at once. False when
/// some group that had Alertmanagers (and alerts left after its
/// relabeling) took them at none.
pub(crate) async fn send_all(
    groups: &[(&Group, Vec<String>)],
    alerts: &[Notification],
    stats: &NotifierStats,
) -> bool {
    let mut posts = Vec::new();
    for (index, (group, urls)) in groups.iter().enumerate() {
        if urls.is_empty() {
            continue;
        }
        let relabeled;
        let group_alerts = if group.settings.alert_relabel_configs.is_empty() {
            alerts
        } else {
            relabeled = alerts
                .iter()
                .filter_map(|a| {
                    let mut a = a.clone();
                    relabel::process(&mut a.labels, &group.settings.alert_relabel_configs)
                        .then_some(a)
                })
                .collect::<Vec<_>>();
            relabeled.as_slice()
        };
        if group_alerts.is_empty() {
            continue;
        }
        let payload = body::encode(group_alerts);
        let count = group_alerts.len();
        for url in urls {
            let payload = payload.clone();
            posts.push(async move {
                let begin = Instant::now();
                match group.post(url, payload).await {
                    Ok(()) => {
                        stats.record_sent(url, count, begin.elapsed());
                        (index, true)
                    }
                    Err(e) => {
                        tracing::error!(alertmanager = %url, count, error = %e, "error sending alerts");
                        stats.record_error(url, count);
                        (index, false)
                    }
                }
            });
        }
    }
    let results = join_all(posts).await;
    let mut attempted: Vec<usize> = results.iter().map(|(i, _)| *i).collect();
    attempted.dedup();
    attempted
        .iter()
        .all(|i| results.iter().any(|(j, ok)| j == i && *ok))
}
