//! Loading: the embedded default, then a file, then `STRATA_*`
//! environment variables, then flags, each layer recorded in [`Effective`].

use super::rules::external_url;
use super::shards::{hostname, shard_from_hostname};
use super::{Config, Effective, Role, ShardId, DEFAULT_TOML};

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
}
