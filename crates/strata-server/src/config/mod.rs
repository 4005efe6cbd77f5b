//! Configuration: the embedded default (`config/strata.toml`), then a file,
//! then `STRATA_*` environment variables, then flags. A bad value stops
//! start-up with a message naming the key.
//!
//! By section: `server` (role, listen address), `limits` (`[limits]` and
//! `[query]`), `access` (`[auth]`, `[tls]`, `[tenants]`), `otlp`, `rules`
//! (`[rules]`, `[alerting]`, `[ruler]`), `shards` (`[object_store]`,
//! `[shards]` and the URLs they give); then `load` (the layers merged) and
//! `validate` (the checks across sections).

use serde::{Deserialize, Serialize};
use strata_storage::{ReaderSettings, StorageSettings};

mod access;
mod limits;
mod load;
mod otlp;
mod rules;
mod server;
mod shards;
mod validate;

#[cfg(test)]
mod tests;

pub use access::{AuthConfig, CredentialsConfig, TenantOverride, TenantsConfig, TlsConfig};
pub use limits::{LimitsConfig, QueryConfig};
pub use load::Overrides;
pub use otlp::OtlpConfig;
pub use rules::{AlertingConfig, RulerConfig, RulesConfig};
pub use server::{Role, ServerConfig};
pub(crate) use shards::hostname;
pub use shards::{shard_from_hostname, shard_url, ObjectStoreConfig, ShardId, ShardsConfig};

pub use crate::effective_config::Effective;

/// The commented default configuration, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../../config/strata.toml");

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
