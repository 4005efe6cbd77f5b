//! The notifier's settings, as the server reads them from TOML: Prometheus'
//! `alerting` section (`config/config.go`'s `AlertmanagerConfig`) with the
//! flags that go with it (`--alertmanager.notification-queue-capacity`,
//! `--alertmanager.drain-notification-queue-on-shutdown`).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::alerting::LabelSet;
use crate::relabel::RelabelConfig;

use super::NotifierError;

/// Where alerts go and what they carry there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifierSettings {
    /// Groups of Alertmanagers; each Alertmanager gets every alert.
    pub alertmanagers: Vec<AlertmanagerSettings>,
    /// Labels added to every alert that lacks them, before relabeling.
    pub external_labels: LabelSet,
    /// Relabeling of every alert as it is queued; an alert a step drops is
    /// not sent.
    pub alert_relabel_configs: Vec<RelabelConfig>,
    /// Most alerts waiting to be sent; when full, the oldest are dropped.
    pub queue_capacity: usize,
    /// Most alerts in one request to an Alertmanager.
    pub max_batch_size: usize,
    /// Whether shutting down sends what is queued first.
    pub drain_on_shutdown: bool,
}

/// Prometheus' `--alertmanager.notification-queue-capacity`.
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;
/// Prometheus' `DefaultMaxBatchSize`.
pub const DEFAULT_MAX_BATCH_SIZE: usize = 256;
/// Prometheus' default Alertmanager `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for NotifierSettings {
    fn default() -> Self {
        Self {
            alertmanagers: Vec::new(),
            external_labels: LabelSet::new(),
            alert_relabel_configs: Vec::new(),
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            max_batch_size: DEFAULT_MAX_BATCH_SIZE,
            drain_on_shutdown: true,
        }
    }
}

/// One group of Alertmanagers sharing how they are reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertmanagerSettings {
    /// `http(s)://host:port` (one Alertmanager), or `dns+http(s)://name:port`
    /// and plain `name:port` (one Alertmanager per A/AAAA record of `name`,
    /// looked up at each send).
    pub urls: Vec<String>,
    /// Put before `/api/v2/alerts`.
    pub path_prefix: String,
    /// How long one request, name look-up included, may take.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    pub api_version: ApiVersion,
    pub basic_auth: Option<BasicAuth>,
    pub bearer_token: Option<Secret>,
    /// Read at each request, surrounding white space trimmed.
    pub bearer_token_file: Option<PathBuf>,
    pub tls: Option<TlsSettings>,
    /// Relabeling of the alerts sent to this group only, after the global
    /// steps.
    pub alert_relabel_configs: Vec<RelabelConfig>,
}

impl Default for AlertmanagerSettings {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            path_prefix: String::new(),
            timeout: DEFAULT_TIMEOUT,
            api_version: ApiVersion::V2,
            basic_auth: None,
            bearer_token: None,
            bearer_token_file: None,
            tls: None,
            alert_relabel_configs: Vec::new(),
        }
    }
}

/// The Alertmanager API alerts are posted to. Alertmanager removed v1 in
/// 0.27, and Prometheus 3 sends only v2.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiVersion {
    #[default]
    V2,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BasicAuth {
    pub username: String,
    pub password: Option<Secret>,
    /// Read at each request, surrounding white space trimmed.
    pub password_file: Option<PathBuf>,
}

/// How HTTPS Alertmanagers are checked, and the certificate shown to them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM CA certificates that replace the built-in roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain, with `key_file`.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// The name the server's certificate is checked against, instead of
    /// the URL's host (needed for addresses found by DNS).
    pub server_name: Option<String>,
    /// Accept any server certificate.
    pub insecure_skip_verify: bool,
}

/// A password or token: shown as `<secret>` when printed or serialised,
/// as Prometheus shows its secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<secret>")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

impl NotifierSettings {
    /// Checks what serde cannot: limits, relabel steps, URLs and
    /// credentials, as Prometheus checks its `alerting` section.
    pub fn validate(&self) -> Result<(), NotifierError> {
        let bad = |m: String| Err(NotifierError::Settings(m));
        if self.queue_capacity == 0 {
            return bad("queue_capacity must be positive".into());
        }
        if self.max_batch_size == 0 {
            return bad("max_batch_size must be positive".into());
        }
        for (i, rc) in self.alert_relabel_configs.iter().enumerate() {
            rc.validate()
                .map_err(|e| NotifierError::Settings(format!("alert_relabel_configs[{i}]: {e}")))?;
        }
        for (i, am) in self.alertmanagers.iter().enumerate() {
            am.validate()
                .map_err(|e| NotifierError::Settings(format!("alertmanagers[{i}]: {e}")))?;
        }
        Ok(())
    }
}

impl AlertmanagerSettings {
    fn validate(&self) -> Result<(), String> {
        if self.timeout.is_zero() {
            return Err("timeout must be positive".into());
        }
        let auths = [
            self.basic_auth.is_some(),
            self.bearer_token.is_some(),
            self.bearer_token_file.is_some(),
        ];
        if auths.iter().filter(|set| **set).count() > 1 {
            return Err(
                "at most one of basic_auth, bearer_token and bearer_token_file may be set".into(),
            );
        }
        if let Some(b) = &self.basic_auth {
            if b.password.is_some() && b.password_file.is_some() {
                return Err(
                    "basic_auth: at most one of password and password_file may be set".into(),
                );
            }
        }
        if let Some(tls) = &self.tls {
            if tls.cert_file.is_some() != tls.key_file.is_some() {
                return Err("tls: cert_file and key_file go together".into());
            }
        }
        for (i, rc) in self.alert_relabel_configs.iter().enumerate() {
            rc.validate()
                .map_err(|e| format!("alert_relabel_configs[{i}]: {e}"))?;
        }
        for url in &self.urls {
            super::target::Target::parse(url, &self.path_prefix)?;
        }
        Ok(())
    }
}
