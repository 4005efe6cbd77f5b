//! Configuration: the embedded default (`config/strata.toml`), then a file,
//! then `STRATA_*` environment variables, then flags. A bad value stops
//! start-up with a message naming the key.

use std::time::Duration;

use serde::Deserialize;
use strata_storage::{ReaderSettings, S3Settings, StorageSettings};

/// The commented default configuration, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../config/strata.toml");

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub limits: LimitsConfig,
    pub query: QueryConfig,
    pub object_store: ObjectStoreConfig,
    pub storage: StorageSettings,
    pub reader: ReaderSettings,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    All,
    Writer,
    Reader,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DurabilityConfig {
    Applied,
    Durable,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub role: Role,
    pub listen: String,
    pub log_level: String,
    pub default_durability: DurabilityConfig,
    #[serde(with = "humantime_serde")]
    pub shutdown_timeout: Duration,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    pub max_decoded_bytes: usize,
    pub ingest_rate_limit: u64,
    pub ingest_burst: u64,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueryConfig {
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    pub max_samples: usize,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    pub url: String,
    #[serde(default)]
    pub s3: S3Settings,
}

/// Command-line values that override the configuration.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub role: Option<Role>,
    pub listen: Option<String>,
    pub object_store: Option<String>,
    pub cache_dir: Option<String>,
}

/// Sections an environment variable may address, longest first so
/// `OBJECT_STORE_S3_` wins over `OBJECT_STORE_`.
const ENV_SECTIONS: &[(&str, &[&str])] = &[
    ("OBJECT_STORE_S3_", &["object_store", "s3"]),
    ("OBJECT_STORE_", &["object_store"]),
    ("SERVER_", &["server"]),
    ("LIMITS_", &["limits"]),
    ("QUERY_", &["query"]),
    ("STORAGE_", &["storage"]),
    ("READER_", &["reader"]),
];

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
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
        let mut table: toml::Table = DEFAULT_TOML
            .parse()
            .map_err(|e| format!("embedded default configuration: {e}"))?;
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read configuration file {path}: {e}"))?;
            let over: toml::Table = text
                .parse()
                .map_err(|e| format!("configuration file {path}: {e}"))?;
            merge(&mut table, over);
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
            let mut section = &mut table;
            for part in path.iter() {
                section = match section
                    .entry(part.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                {
                    toml::Value::Table(t) => t,
                    _ => return Err(format!("{key}: {} is not a section", path.join("."))),
                };
            }
            section.insert(name, env_value(&raw));
        }
        let mut config: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| format!("invalid configuration: {e}"))?;
        if let Some(role) = overrides.role {
            config.server.role = role;
        }
        if let Some(listen) = &overrides.listen {
            config.server.listen = listen.clone();
        }
        if let Some(url) = &overrides.object_store {
            config.object_store.url = url.clone();
        }
        if let Some(dir) = &overrides.cache_dir {
            config.reader.cache_dir = Some(dir.into());
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
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        self.storage
            .validate()
            .map_err(|e| format!("invalid configuration: storage.{e}"))?;
        self.reader
            .validate()
            .map_err(|e| format!("invalid configuration: {e}"))?;
        if self.server.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(format!(
                "invalid configuration: server.listen: {:?} is not an address like 127.0.0.1:9470",
                self.server.listen
            ));
        }
        if self.limits.max_body_bytes == 0 || self.limits.max_decoded_bytes == 0 {
            return Err("invalid configuration: limits.max_body_bytes and limits.max_decoded_bytes must be greater than 0".into());
        }
        if self.query.timeout.is_zero() {
            return Err("invalid configuration: query.timeout: must be greater than 0".into());
        }
        Ok(())
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
}
