//! `[rules]`, `[alerting]` and `[ruler]`: the rules a node evaluates, where
//! their alerts go, and how a ruler node writes and shares them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{name_list, Config};

/// A ruler node (role `ruler`): where it writes what its rules produce,
/// how often it reads the rules kept in the bucket, and how rulers share
/// the groups.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RulerConfig {
    /// Base URL of the distributor or writer the rules' output is
    /// remote-written to (`<url>/api/v1/write`).
    pub write_url: String,
    /// Longest wait for the write's answer.
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// A file holding the bearer token sent with each write.
    pub write_bearer_token_file: String,
    /// How often the rules kept in the bucket (the ruler configuration
    /// API's) are read again.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// How often a ruler says it is alive; one not heard of for three
    /// times this is left out when groups are shared.
    #[serde(with = "humantime_serde")]
    pub heartbeat_interval: Duration,
    /// The URL other rulers reach this one at, for `/api/v1/rules` and
    /// `/api/v1/alerts` answered over all rulers; empty: this node
    /// answers for the groups it evaluates only.
    pub advertise_url: String,
}

/// Where alerts are sent: Prometheus' `alerting` section and its
/// notification-queue flags, by the same names.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AlertingConfig {
    /// Groups of Alertmanagers; each gets every alert.
    pub alertmanagers: Vec<strata_rules::notifier::AlertmanagerSettings>,
    /// Relabeling of every alert before it is sent.
    pub alert_relabel_configs: Vec<strata_rules::relabel::RelabelConfig>,
    /// Alerts waiting to be sent; past it the oldest are dropped.
    pub queue_capacity: usize,
    /// Most alerts in one request to an Alertmanager.
    pub max_batch_size: usize,
    /// Whether a stop sends what is queued first.
    pub drain_on_shutdown: bool,
}

impl Config {
    /// The notifier's settings: `[alerting]`, with `rules.external_labels`.
    pub fn notifier_settings(&self) -> strata_rules::notifier::NotifierSettings {
        strata_rules::notifier::NotifierSettings {
            alertmanagers: self.alerting.alertmanagers.clone(),
            external_labels: self.rules.external_labels_map(),
            alert_relabel_configs: self.alerting.alert_relabel_configs.clone(),
            queue_capacity: self.alerting.queue_capacity,
            max_batch_size: self.alerting.max_batch_size,
            drain_on_shutdown: self.alerting.drain_on_shutdown,
        }
    }
}

/// Recording and alerting rules this node evaluates: Prometheus'
/// `rule_files` and the flags of its rule manager, by the same names.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RulesConfig {
    /// Glob patterns of rule files in Prometheus' format.
    #[serde(deserialize_with = "name_list")]
    pub rule_files: Vec<String>,
    /// A group's interval when it names none (Prometheus'
    /// `global.evaluation_interval`).
    #[serde(with = "humantime_serde")]
    pub evaluation_interval: Duration,
    /// How far back of its evaluation time a group queries when it names
    /// no `query_offset` (Prometheus' `global.rule_query_offset`).
    #[serde(with = "humantime_serde")]
    pub query_offset: Duration,
    /// How often a firing alert is sent again.
    #[serde(with = "humantime_serde")]
    pub resend_delay: Duration,
    /// The least time an alert waits to fire after a restart.
    #[serde(with = "humantime_serde")]
    pub for_grace_period: Duration,
    /// How long a restart may last for alerts to keep their `for` state.
    #[serde(with = "humantime_serde")]
    pub for_outage_tolerance: Duration,
    /// The URL users reach this server at: `$externalURL` in templates
    /// and the alerts' generator links.
    pub external_url: String,
    /// Labels added to every alert sent, and `$externalLabels` in
    /// templates: `name=value` entries.
    #[serde(deserialize_with = "name_list")]
    pub external_labels: Vec<String>,
}

impl RulesConfig {
    /// `external_labels` as a map.
    pub fn external_labels_map(&self) -> std::collections::BTreeMap<String, String> {
        self.external_labels
            .iter()
            .filter_map(|e| e.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect()
    }
}

/// `url` as Prometheus reads `--web.external-url`: its path without
/// trailing slashes (and with a leading one), so `$externalURL`,
/// `pathPrefix` and the alerts' `generatorURL` are Prometheus'.
pub(super) fn external_url(url: &str) -> String {
    if url.is_empty() {
        return String::new();
    }
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let (base, rest) = url.split_at(end);
    let path_at = match base.find("://") {
        Some(i) => base[i + 3..].find('/').map_or(base.len(), |j| i + 3 + j),
        None => 0,
    };
    let (head, path) = base.split_at(path_at);
    let path = path.trim_end_matches('/');
    let slash = if path.is_empty() || path.starts_with('/') {
        ""
    } else {
        "/"
    };
    format!("{head}{slash}{path}{rest}")
}
