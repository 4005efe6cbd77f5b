//! Configuration: the embedded default (`config/strata.toml`), then a file,
//! then `STRATA_*` environment variables, then flags. A bad value stops
//! start-up with a message naming the key.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_storage::{Durability, ReaderSettings, S3Settings, StorageSettings};

/// The commented default configuration, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../config/strata.toml");

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub limits: LimitsConfig,
    pub query: QueryConfig,
    pub object_store: ObjectStoreConfig,
    pub storage: StorageSettings,
    pub reader: ReaderSettings,
    pub shards: ShardsConfig,
    pub auth: AuthConfig,
    pub tls: TlsConfig,
    pub tenants: TenantsConfig,
    pub otlp: OtlpConfig,
    pub rules: RulesConfig,
    pub alerting: AlertingConfig,
    pub ruler: RulerConfig,
}

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

/// How OTLP metrics become Prometheus series: Prometheus 3's `otlp`
/// settings, by the same names and with the same defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// `UnderscoreEscapingWithSuffixes`, `UnderscoreEscapingWithoutSuffixes`,
    /// `NoUTF8EscapingWithSuffixes` or `NoTranslation`.
    pub translation_strategy: String,
    #[serde(deserialize_with = "name_list")]
    pub promote_resource_attributes: Vec<String>,
    pub promote_all_resource_attributes: bool,
    #[serde(deserialize_with = "name_list")]
    pub ignore_resource_attributes: Vec<String>,
    pub keep_identifying_resource_attributes: bool,
    pub promote_scope_metadata: bool,
    pub label_name_underscore_sanitization: bool,
    pub label_name_preserve_multiple_underscores: bool,
}

impl OtlpConfig {
    /// The translation settings, or what is wrong with them.
    pub fn settings(&self) -> Result<strata_otlp::Settings, String> {
        let strategy = strata_otlp::TranslationStrategy::from_name(&self.translation_strategy)
            .ok_or_else(|| {
                format!(
                    "otlp.translation_strategy: {:?} is none of {}",
                    self.translation_strategy,
                    strata_otlp::TranslationStrategy::ALL
                        .map(|s| s.name())
                        .join(", ")
                )
            })?;
        if self.promote_all_resource_attributes && !self.promote_resource_attributes.is_empty() {
            return Err(
                "otlp: promote_all_resource_attributes and promote_resource_attributes \
                        exclude each other"
                    .into(),
            );
        }
        if !self.promote_all_resource_attributes && !self.ignore_resource_attributes.is_empty() {
            return Err(
                "otlp.ignore_resource_attributes needs promote_all_resource_attributes = true"
                    .into(),
            );
        }
        Ok(strata_otlp::Settings {
            translation_strategy: strategy,
            promote_resource_attributes: self.promote_resource_attributes.clone(),
            promote_all_resource_attributes: self.promote_all_resource_attributes,
            ignore_resource_attributes: self.ignore_resource_attributes.clone(),
            keep_identifying_resource_attributes: self.keep_identifying_resource_attributes,
            promote_scope_metadata: self.promote_scope_metadata,
            label_name_underscore_sanitization: self.label_name_underscore_sanitization,
            label_name_preserve_multiple_underscores: self.label_name_preserve_multiple_underscores,
        })
    }
}

/// A list in a file, or a comma-separated string in the environment; each
/// entry trimmed, empty ones left out.
fn name_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Text(String),
    }
    let list = match Raw::deserialize(d)? {
        Raw::List(l) => l,
        Raw::Text(t) => t.split(',').map(str::to_owned).collect(),
    };
    Ok(list
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    All,
    Writer,
    Reader,
    /// Stateless: splits remote write by series over the writer shards.
    Distributor,
    /// Evaluates rules: reads the bucket as a reader node does and writes
    /// what its rules produce through a distributor or writer.
    Ruler,
}

impl Role {
    /// The role's name, as `server.role` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Writer => "writer",
            Self::Reader => "reader",
            Self::Distributor => "distributor",
            Self::Ruler => "ruler",
        }
    }

    /// Whether the process opens the database read-only (a reader node
    /// or a ruler), not as its writer.
    pub fn reads_only(self) -> bool {
        matches!(self, Self::Reader | Self::Ruler)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub role: Role,
    pub listen: String,
    pub log_level: String,
    pub default_durability: Durability,
    #[serde(with = "humantime_serde")]
    pub shutdown_timeout: Duration,
    /// `/-/healthy` answers 503 once every object-store request has failed
    /// for this long; 0 = never.
    #[serde(with = "humantime_serde")]
    pub store_unhealthy_after: Duration,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    pub max_decoded_bytes: usize,
    /// Most series in one remote-write request (413 above it).
    pub max_series_per_request: usize,
    /// Most samples in one remote-write request (413 above it).
    pub max_samples_per_request: usize,
    /// Longest label name, in bytes (the series is rejected above it).
    pub max_label_name_length: usize,
    /// Longest label value, in bytes.
    pub max_label_value_length: usize,
    /// Most labels on one series, `__name__` included.
    pub max_labels_per_series: usize,
    /// Samples later than now plus this are rejected.
    #[serde(with = "humantime_serde")]
    pub max_future: Duration,
    /// Samples per second each tenant may write; 0 = no limit.
    pub ingest_rate_limit: u64,
    pub ingest_burst: u64,
    /// Most active series per tenant; 0 = no limit.
    pub max_active_series: usize,
}

/// Who may write and who may read. Each side is open until it has a
/// credential; `token_file` gives both sides the same tokens.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// A file of bearer tokens, one per line, valid for writes and reads.
    pub token_file: String,
    /// Threads that run bcrypt; 0 = half the cores, at least one.
    pub verify_threads: usize,
    /// Credentials that may wait for a verify thread; more get 503.
    pub verify_queue: usize,
    /// How long a credential bcrypt accepted is remembered.
    #[serde(with = "humantime_serde")]
    pub cache_ttl: Duration,
    /// Most credentials remembered per side.
    pub cache_size: usize,
    /// Credentials needing bcrypt per second per client address (a
    /// verified one is given back); past it, 429. 0 = no limit.
    pub failure_rate_limit: u32,
    pub failure_burst: u32,
    pub write: CredentialsConfig,
    pub read: CredentialsConfig,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CredentialsConfig {
    /// bcrypt hashes of accepted bearer tokens. Secret: `strata config`
    /// and the status endpoints show `<secret>`.
    pub bearer_token_hashes: Vec<String>,
    /// Accepted basic-auth users as `user:bcrypt-hash`. Secret, as above.
    pub basic_auth: Vec<String>,
}

/// HTTPS instead of HTTP when `cert_file` and `key_file` are set.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub cert_file: String,
    pub key_file: String,
    /// CA bundle; when set, clients must present a certificate it signed.
    pub client_ca_file: String,
}

impl TlsConfig {
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty() || !self.key_file.is_empty()
    }
}

/// Tenants, chosen per request by the `X-Scope-OrgID` header.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantsConfig {
    /// Refuse requests without the header (401) instead of giving them the
    /// default tenant.
    pub required: bool,
    /// The tenant of requests without the header; the header may name it.
    pub default_tenant: String,
    /// Limits of particular tenants, over those of `[limits]`.
    pub overrides: Vec<TenantOverride>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantOverride {
    pub tenant: String,
    pub ingest_rate_limit: Option<u64>,
    pub ingest_burst: Option<u64>,
    pub max_active_series: Option<usize>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueryConfig {
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    pub max_samples: usize,
    /// Longest regular expression in a matcher, in bytes.
    pub max_regex_bytes: usize,
    /// Most points a subquery may evaluate per series.
    pub max_subquery_points: usize,
    /// Most query requests running at once on the node; the others wait
    /// their turn in the queue.
    pub max_concurrent: usize,
    /// Most query requests running at once per tenant; 0: no limit of its
    /// own (the node's).
    pub max_concurrent_per_tenant: usize,
    /// Most query requests waiting for a turn; more are refused (503).
    pub max_queued: usize,
    /// Longest a query request waits for a turn before it is refused (503).
    #[serde(with = "humantime_serde")]
    pub queue_timeout: Duration,
    /// Most samples all running queries may hold loaded at once.
    pub max_samples_total: usize,
}

impl QueryConfig {
    /// The engine's limits these settings give, for the API and the rules.
    pub fn limits(&self) -> strata_promql::QueryLimits {
        strata_promql::QueryLimits {
            timeout: self.timeout,
            max_samples: self.max_samples,
            max_regex_bytes: self.max_regex_bytes,
            max_subquery_points: self.max_subquery_points,
            max_concurrent: self.max_concurrent,
            max_samples_total: self.max_samples_total,
            ..strata_promql::QueryLimits::default()
        }
    }
}

#[cfg(test)]
impl Default for QueryConfig {
    fn default() -> Self {
        #[allow(clippy::expect_used)]
        Config::load(None, Vec::new(), &Overrides::default())
            .expect("the built-in defaults load")
            .query
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    pub url: String,
    #[serde(default)]
    pub s3: S3Settings,
}

/// Writer shards: how many, which one this writer is, where a distributor
/// sends each shard's series and what else a reader opens.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShardsConfig {
    /// Number of writer shards; 1 = unsharded (data at the object store's
    /// root). With more, shard `i` lives under `<url>/shard-<i>`.
    pub count: u32,
    /// This writer's shard.
    pub id: ShardId,
    /// Distributor: the writers' base URLs, shard `i` first at index `i`.
    /// A list, or one comma-separated string (for the environment).
    #[serde(deserialize_with = "url_list")]
    pub writers: Vec<String>,
    /// Readers: more object-store URLs to open read-only besides the
    /// `count` shards, e.g. the shards of a previous shard count.
    #[serde(deserialize_with = "url_list")]
    pub extra_read_urls: Vec<String>,
    /// Distributor: longest wait for a writer's answer.
    #[serde(with = "humantime_serde")]
    pub forward_timeout: Duration,
}

/// A writer's shard: a number, or `"auto"` for the trailing `-<n>` of the
/// host name (a Kubernetes StatefulSet ordinal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardId {
    Index(u32),
    FromHostname,
}

impl<'de> Deserialize<'de> for ShardId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Index(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Index(i) => Ok(Self::Index(i)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for ShardId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Index(i) => s.serialize_u32(*i),
            Self::FromHostname => s.serialize_str("auto"),
        }
    }
}

impl std::str::FromStr for ShardId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Self::FromHostname);
        }
        s.parse().map(Self::Index).map_err(|_| {
            format!(
                "shard id {s:?} is neither a number nor \"auto\" (the host name's trailing -<n>)"
            )
        })
    }
}

fn url_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(name_list(d)?
        .into_iter()
        .map(|u| u.trim_end_matches('/').to_owned())
        .filter(|u| !u.is_empty())
        .collect())
}

/// The shard number at the end of a host name such as `strata-writer-2`.
pub fn shard_from_hostname(hostname: &str) -> Option<u32> {
    let (_, n) = hostname.trim().rsplit_once('-')?;
    n.parse().ok()
}

/// This machine's host name: `$HOSTNAME`, else the kernel's.
pub(crate) fn hostname() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
}

/// The object-store URL of shard `id`: `<url>/shard-<id>` (for
/// `s3://bucket/prefix`, the prefix `prefix/shard-<id>`).
pub fn shard_url(url: &str, id: u32) -> String {
    format!("{}/shard-{id}", url.trim_end_matches('/'))
}

pub use crate::effective_config::Effective;

/// Command-line values that override the configuration.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub role: Option<Role>,
    pub listen: Option<String>,
    pub object_store: Option<String>,
    pub cache_dir: Option<String>,
    pub shards: Option<u32>,
    pub shard_id: Option<ShardId>,
    pub writers: Option<Vec<String>>,
    pub auth_token_file: Option<String>,
}

/// Sections an environment variable may address, longest first so
/// `OBJECT_STORE_S3_` wins over `OBJECT_STORE_`.
const ENV_SECTIONS: &[(&str, &[&str])] = &[
    ("RULER_", &["ruler"]),
    ("OBJECT_STORE_S3_", &["object_store", "s3"]),
    ("OBJECT_STORE_", &["object_store"]),
    ("SERVER_", &["server"]),
    ("LIMITS_", &["limits"]),
    ("QUERY_", &["query"]),
    ("STORAGE_", &["storage"]),
    ("READER_", &["reader"]),
    ("SHARDS_", &["shards"]),
    ("AUTH_WRITE_", &["auth", "write"]),
    ("AUTH_READ_", &["auth", "read"]),
    ("AUTH_", &["auth"]),
    ("TLS_", &["tls"]),
    ("TENANTS_", &["tenants"]),
    ("OTLP_", &["otlp"]),
    ("RULES_", &["rules"]),
    ("ALERTING_", &["alerting"]),
];

/// `ip:port`, `[ipv6]:port` or `hostname:port`.
fn is_listen_address(s: &str) -> bool {
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    port.parse::<u16>().is_ok()
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

impl Overrides {
    /// Each flag given: the setting it sets, its value, and the flag.
    fn settings(&self) -> Vec<(Vec<&'static str>, toml::Value, &'static str)> {
        use toml::Value;
        let mut out = Vec::new();
        if let Some(role) = self.role {
            out.push((vec!["server", "role"], Value::from(role.name()), "--role"));
        }
        if let Some(listen) = &self.listen {
            out.push((
                vec!["server", "listen"],
                Value::from(listen.as_str()),
                "--listen",
            ));
        }
        if let Some(url) = &self.object_store {
            out.push((
                vec!["object_store", "url"],
                Value::from(url.as_str()),
                "--object-store",
            ));
        }
        if let Some(dir) = &self.cache_dir {
            out.push((
                vec!["reader", "cache_dir"],
                Value::from(dir.as_str()),
                "--cache-dir",
            ));
        }
        if let Some(n) = self.shards {
            out.push((
                vec!["shards", "count"],
                Value::from(i64::from(n)),
                "--shards",
            ));
        }
        if let Some(id) = &self.shard_id {
            let value = match id {
                ShardId::Index(i) => Value::from(i64::from(*i)),
                ShardId::FromHostname => Value::from("auto"),
            };
            out.push((vec!["shards", "id"], value, "--shard-id"));
        }
        if let Some(writers) = &self.writers {
            let list: Vec<Value> = writers
                .iter()
                .map(|u| u.trim().trim_end_matches('/'))
                .filter(|u| !u.is_empty())
                .map(Value::from)
                .collect();
            out.push((vec!["shards", "writers"], Value::Array(list), "--writers"));
        }
        if let Some(f) = &self.auth_token_file {
            out.push((
                vec!["auth", "token_file"],
                Value::from(f.as_str()),
                "--auth-token-file",
            ));
        }
        out
    }
}

/// Parses an environment value as a TOML value (numbers, booleans), or as
/// a string when it is not one.
fn env_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| !matches!(v, toml::Value::Table(_)))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}

impl Config {
    /// Loads the configuration: defaults, then `file`, then `env`
    /// (`STRATA_*` pairs), then `overrides`.
    pub fn load(
        file: Option<&str>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &Overrides,
    ) -> Result<Self, String> {
        Self::load_effective(file, env, overrides).map(|(config, _)| config)
    }

    /// [`Config::load`], with the merged settings and where each came
    /// from (`strata config` prints them).
    pub fn load_effective(
        file: Option<&str>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &Overrides,
    ) -> Result<(Self, Effective), String> {
        let table: toml::Table = DEFAULT_TOML
            .parse()
            .map_err(|e| format!("embedded default configuration: {e}"))?;
        let mut effective = Effective::new(table);
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read configuration file {path}: {e}"))?;
            let over: toml::Table = text
                .parse()
                .map_err(|e| format!("configuration file {path}: {e}"))?;
            effective.merge(over, &format!("file {path}"));
        }
        for (key, raw) in env {
            let Some(rest) = key.strip_prefix("STRATA_") else {
                continue;
            };
            let Some((prefix, path)) = ENV_SECTIONS.iter().find(|(p, _)| rest.starts_with(p))
            else {
                continue;
            };
            let name = rest[prefix.len()..].to_ascii_lowercase();
            let mut full: Vec<&str> = path.to_vec();
            full.push(&name);
            effective
                .set(&full, env_value(&raw), &format!("env {key}"))
                .map_err(|section| format!("{key}: {section} is not a section"))?;
        }
        for (path, value, flag) in overrides.settings() {
            effective
                .set(&path, value, &format!("flag {flag}"))
                .map_err(|section| format!("{flag}: {section} is not a section"))?;
        }
        let mut config: Config = toml::Value::Table(effective.table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| format!("invalid configuration: {e}"))?;
        if config.shards.id == ShardId::FromHostname {
            let host = hostname().unwrap_or_default();
            let id = shard_from_hostname(&host).ok_or_else(|| {
                format!("invalid configuration: shards.id is \"auto\" but the host name {host:?} does not end in -<number>")
            })?;
            config.shards.id = ShardId::Index(id);
        }
        // An empty folder in the file means no disk cache.
        if config
            .reader
            .cache_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            config.reader.cache_dir = None;
        }
        // `:9470` listens on every interface, as Go servers read it.
        if config.server.listen.starts_with(':') {
            config.server.listen = format!("0.0.0.0{}", config.server.listen);
        }
        config.rules.external_url = external_url(&config.rules.external_url);
        config.validate()?;
        Ok((config, effective))
    }

    fn validate(&self) -> Result<(), String> {
        self.storage
            .validate()
            .map_err(|e| format!("invalid configuration: storage.{e}"))?;
        self.reader
            .validate()
            .map_err(|e| format!("invalid configuration: {e}"))?;
        if !is_listen_address(&self.server.listen) {
            return Err(format!(
                "invalid configuration: server.listen: {:?} is not an address like 127.0.0.1:9470, localhost:9470 or :9470",
                self.server.listen
            ));
        }
        if self.limits.max_body_bytes == 0 || self.limits.max_decoded_bytes == 0 {
            return Err("invalid configuration: limits.max_body_bytes and limits.max_decoded_bytes must be greater than 0".into());
        }
        if self.tls.enabled() && (self.tls.cert_file.is_empty() || self.tls.key_file.is_empty()) {
            return Err(
                "invalid configuration: tls: cert_file and key_file must be set together".into(),
            );
        }
        if !self.tls.client_ca_file.is_empty() && !self.tls.enabled() {
            return Err(
                "invalid configuration: tls.client_ca_file needs tls.cert_file and tls.key_file"
                    .into(),
            );
        }
        crate::tenant_id::check_tenant_id(&self.tenants.default_tenant)
            .map_err(|e| format!("invalid configuration: tenants.default_tenant: {e}"))?;
        for o in &self.tenants.overrides {
            crate::tenant_id::check_tenant_id(&o.tenant)
                .map_err(|e| format!("invalid configuration: tenants.overrides: {e}"))?;
        }
        self.otlp
            .settings()
            .map_err(|e| format!("invalid configuration: {e}"))?;
        if self.auth.failure_rate_limit > 0 && self.auth.failure_burst == 0 {
            return Err(
                "invalid configuration: auth.failure_burst: must be at least 1 when auth.failure_rate_limit is set"
                    .into(),
            );
        }
        if self.query.timeout.is_zero() {
            return Err("invalid configuration: query.timeout: must be greater than 0".into());
        }
        for e in &self.rules.external_labels {
            if !e.contains('=') {
                return Err(format!(
                    "invalid configuration: rules.external_labels: {e:?} is not name=value"
                ));
            }
        }
        self.notifier_settings()
            .validate()
            .map_err(|e| format!("invalid configuration: alerting: {e}"))?;
        if self.rules.evaluation_interval.is_zero() {
            return Err(
                "invalid configuration: rules.evaluation_interval: must be greater than 0".into(),
            );
        }
        if self.query.queue_timeout.is_zero() {
            return Err(
                "invalid configuration: query.queue_timeout: must be greater than 0".into(),
            );
        }
        if self.query.max_concurrent == 0 {
            return Err("invalid configuration: query.max_concurrent: must be at least 1".into());
        }
        self.validate_shards()
    }

    fn validate_shards(&self) -> Result<(), String> {
        let shards = &self.shards;
        if shards.count == 0 {
            return Err("invalid configuration: shards.count: must be at least 1".into());
        }
        if let ShardId::Index(id) = shards.id {
            if id >= shards.count {
                return Err(format!(
                    "invalid configuration: shards.id: {id} is not below shards.count ({})",
                    shards.count
                ));
            }
        }
        if shards.forward_timeout.is_zero() {
            return Err(
                "invalid configuration: shards.forward_timeout: must be greater than 0".into(),
            );
        }
        if self.server.role == Role::Ruler {
            let url = &self.ruler.write_url;
            if url.is_empty() {
                return Err("invalid configuration: ruler.write_url: a ruler needs the URL of the distributor or writer it writes to".into());
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "invalid configuration: ruler.write_url: {url:?} is not an http:// or https:// URL"
                ));
            }
        }
        for (key, d) in [
            ("ruler.write_timeout", self.ruler.write_timeout),
            ("ruler.poll_interval", self.ruler.poll_interval),
            ("ruler.heartbeat_interval", self.ruler.heartbeat_interval),
        ] {
            if d.is_zero() {
                return Err(format!(
                    "invalid configuration: {key}: must be greater than 0"
                ));
            }
        }
        if self.server.role == Role::Distributor {
            if shards.writers.is_empty() {
                return Err("invalid configuration: shards.writers: a distributor needs the writers' URLs (--writers URL,URL,...)".into());
            }
            if let Some(bad) = shards
                .writers
                .iter()
                .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
            {
                return Err(format!(
                    "invalid configuration: shards.writers: {bad:?} is not an http:// or https:// URL"
                ));
            }
        }
        Ok(())
    }

    /// This writer's shard, `None` when unsharded.
    pub fn shard_id(&self) -> Option<u32> {
        match (self.shards.count, &self.shards.id) {
            (1, _) => None,
            (_, ShardId::Index(i)) => Some(*i),
            // Resolved by `load`.
            (_, ShardId::FromHostname) => Some(0),
        }
    }

    /// The object-store URLs a reader opens: every shard's (or the root
    /// when unsharded), then `shards.extra_read_urls`.
    pub fn read_urls(&self) -> Result<Vec<String>, String> {
        let root = self.object_store_url()?;
        let mut urls: Vec<String> = if self.shards.count == 1 {
            vec![root]
        } else {
            (0..self.shards.count)
                .map(|i| shard_url(&root, i))
                .collect()
        };
        for extra in &self.shards.extra_read_urls {
            if !urls.contains(extra) {
                urls.push(extra.clone());
            }
        }
        Ok(urls)
    }

    /// The object-store URL a writer (or `all`) opens: its shard's.
    pub fn write_url(&self) -> Result<String, String> {
        let root = self.object_store_url()?;
        Ok(match self.shard_id() {
            Some(i) => shard_url(&root, i),
            None => root,
        })
    }

    /// The object store URL with a relative folder turned into `file://`.
    pub fn object_store_url(&self) -> Result<String, String> {
        let url = &self.object_store.url;
        if url.contains("://") {
            return Ok(url.clone());
        }
        let dir = std::path::Path::new(url);
        let abs = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| format!("object_store.url: cannot resolve {url:?}: {e}"))?
                .join(dir)
        };
        Ok(format!("file://{}", abs.display()))
    }
}

/// `url` as Prometheus reads `--web.external-url`: its path without
/// trailing slashes (and with a leading one), so `$externalURL`,
/// `pathPrefix` and the alerts' `generatorURL` are Prometheus'.
fn external_url(url: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(file: Option<&str>, env: &[(&str, &str)], o: &Overrides) -> Result<Config, String> {
        Config::load(
            file,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            o,
        )
    }

    #[test]
    fn external_url_is_read_as_prometheus_reads_it() {
        for (given, used) in [
            ("", ""),
            ("http://strata.example.com", "http://strata.example.com"),
            ("http://strata.example.com/", "http://strata.example.com"),
            (
                "https://example.com:9090/prom/",
                "https://example.com:9090/prom",
            ),
            ("https://example.com/a/b//", "https://example.com/a/b"),
            (
                "https://example.com/prom/?x=1",
                "https://example.com/prom?x=1",
            ),
            ("prom/", "/prom"),
        ] {
            let env = [("STRATA_RULES_EXTERNAL_URL", given)];
            assert_eq!(
                load(None, &env, &Overrides::default())
                    .unwrap()
                    .rules
                    .external_url,
                used,
                "{given}"
            );
        }
    }

    #[test]
    fn listen_takes_host_port_forms() {
        for (given, used) in [
            ("127.0.0.1:9470", "127.0.0.1:9470"),
            ("localhost:9470", "localhost:9470"),
            (":9470", "0.0.0.0:9470"),
            ("[::1]:9470", "[::1]:9470"),
        ] {
            let o = Overrides {
                listen: Some(given.into()),
                ..Overrides::default()
            };
            assert_eq!(load(None, &[], &o).unwrap().server.listen, used);
        }
        for bad in ["9470", "localhost", "local host:1", "h:99999"] {
            let o = Overrides {
                listen: Some(bad.into()),
                ..Overrides::default()
            };
            let e = load(None, &[], &o).unwrap_err();
            assert!(e.contains("server.listen"), "{bad}: {e}");
        }
    }

    #[test]
    fn sources_name_default_file_env_and_flag() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            "[storage]\nretention = \"30d\"\n[object_store.s3]\nsecret_access_key = \"hush\"\n",
        )
        .unwrap();
        let path = path.to_str().unwrap();
        let o = Overrides {
            listen: Some(":1234".into()),
            ..Overrides::default()
        };
        let (c, e) = Config::load_effective(
            Some(path),
            [("STRATA_SERVER_LOG_LEVEL".to_owned(), "debug".to_owned())],
            &o,
        )
        .unwrap();
        assert_eq!(c.server.log_level, "debug");
        assert_eq!(e.source("server.role"), Some("default"));
        assert_eq!(
            e.source("storage.retention"),
            Some(format!("file {path}").as_str())
        );
        assert_eq!(
            e.source("server.log_level"),
            Some("env STRATA_SERVER_LOG_LEVEL")
        );
        assert_eq!(e.source("server.listen"), Some("flag --listen"));
        let text = e.render();
        assert!(text.contains("retention = \"30d\"  # file "), "{text}");
        assert!(text.contains("secret_access_key = \"<secret>\""), "{text}");
        assert!(!text.contains("hush"), "{text}");
        assert_eq!(e.flat()["object_store.s3.secret_access_key"], "<secret>");
    }

    #[test]
    fn defaults_load() {
        let c = load(None, &[], &Overrides::default()).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:9470");
        assert_eq!(c.storage, StorageSettings::default());
        assert_eq!(c.server.role, Role::All);
    }

    #[test]
    fn precedence_file_env_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            "[server]\nlisten = \"127.0.0.1:1\"\nlog_level = \"debug\"\n[storage]\nretention = \"30d\"\n",
        )
        .unwrap();
        let env = [
            ("STRATA_SERVER_LOG_LEVEL", "warn"),
            ("STRATA_STORAGE_FLUSH_INTERVAL", "250ms"),
            ("STRATA_OBJECT_STORE_S3_ALLOW_HTTP", "true"),
            ("UNRELATED", "x"),
        ];
        let o = Overrides {
            listen: Some("127.0.0.1:2".into()),
            ..Overrides::default()
        };
        let c = load(path.to_str(), &env, &o).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:2");
        assert_eq!(c.server.log_level, "warn");
        assert_eq!(c.storage.retention, Duration::from_secs(30 * 86400));
        assert_eq!(c.storage.flush_interval, Duration::from_millis(250));
        assert!(c.object_store.s3.allow_http);
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = load(
            None,
            &[("STRATA_STORAGE_FLUSH_INTERVAL", "soon")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.contains("flush_interval"), "{e}");
        let e = load(
            None,
            &[("STRATA_STORAGE_BOGUS", "1")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = load(
            None,
            &[("STRATA_SERVER_LISTEN", "nowhere")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.contains("server.listen"), "{e}");
        let e = load(
            None,
            &[("STRATA_STORAGE_FLUSH_INTERVAL", "0s")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.contains("storage.flush_interval"), "{e}");
    }

    #[test]
    fn shards_from_env_and_flags() {
        let env = [
            ("STRATA_SHARDS_COUNT", "3"),
            ("STRATA_SHARDS_ID", "2"),
            (
                "STRATA_SHARDS_EXTRA_READ_URLS",
                "file:///old/a, file:///old/b/",
            ),
        ];
        let o = Overrides {
            object_store: Some("s3://bucket/prefix".into()),
            ..Overrides::default()
        };
        let c = load(None, &env, &o).unwrap();
        assert_eq!(c.shard_id(), Some(2));
        assert_eq!(c.write_url().unwrap(), "s3://bucket/prefix/shard-2");
        assert_eq!(
            c.read_urls().unwrap(),
            [
                "s3://bucket/prefix/shard-0",
                "s3://bucket/prefix/shard-1",
                "s3://bucket/prefix/shard-2",
                "file:///old/a",
                "file:///old/b"
            ]
        );
        let e = load(
            None,
            &[("STRATA_SHARDS_ID", "3"), ("STRATA_SHARDS_COUNT", "3")],
            &o,
        )
        .unwrap_err();
        assert!(e.contains("shards.id"), "{e}");
        let o = Overrides {
            role: Some(Role::Distributor),
            writers: Some(vec!["http://a:9470/".into(), "http://b:9470".into()]),
            ..Overrides::default()
        };
        let c = load(None, &[], &o).unwrap();
        assert_eq!(c.shards.writers, ["http://a:9470", "http://b:9470"]);
        let o = Overrides {
            role: Some(Role::Distributor),
            ..Overrides::default()
        };
        assert!(load(None, &[], &o).unwrap_err().contains("shards.writers"));
    }

    #[test]
    fn shard_id_from_hostname() {
        assert_eq!(shard_from_hostname("strata-writer-12"), Some(12));
        assert_eq!(shard_from_hostname("strata-writer-0\n"), Some(0));
        assert_eq!(shard_from_hostname("strata-writer"), None);
        assert_eq!(shard_from_hostname("node7"), None);
        assert_eq!("auto".parse::<ShardId>(), Ok(ShardId::FromHostname));
        assert_eq!("4".parse::<ShardId>(), Ok(ShardId::Index(4)));
        assert!("x".parse::<ShardId>().is_err());
    }
}
