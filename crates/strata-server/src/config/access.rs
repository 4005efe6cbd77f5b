//! `[auth]`, `[tls]` and `[tenants]`: who may write and read, over what,
//! and as which tenant.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
