//! What every handler shares: the storage (once recovery is done), the
//! limits and the server's own metrics.

use std::sync::{Arc, OnceLock};

use strata_remote_write::DecodeLimits;
use strata_storage::instrumented::StoreHealth;
use strata_storage::{Durability, Storage, Writer};

use crate::auth::Authenticator;
use crate::config::Config;
use crate::metrics::ServerMetrics;
use crate::tenants::Tenants;

pub struct AppState {
    /// Set once recovery has finished; until then the server is not ready.
    pub storage: OnceLock<Arc<Storage>>,
    /// The writer's handle, set with `storage` on a writer; never on a
    /// reader node.
    pub writer: OnceLock<Arc<Writer>>,
    /// Every database queries read: the writer's own, or on a reader each
    /// shard's (the first is also `storage`). A sharded `all` process adds
    /// the other shards as they become available.
    pub shards: parking_lot::RwLock<Vec<Arc<Storage>>>,
    /// How many databases queries must read before they may answer.
    pub shards_expected: std::sync::atomic::AtomicUsize,
    pub decode_limits: DecodeLimits,
    /// What every written series is held to (`ingest::series_limits`).
    pub series_limits: strata_write::SeriesLimits,
    pub default_durability: Durability,
    pub tenants: Tenants,
    pub auth: Arc<Authenticator>,
    pub metrics: ServerMetrics,
    /// The turns of query requests (`query.max_concurrent` and the queue).
    pub admission: crate::admission::QueryAdmission,
    /// The rules this node evaluates, once recovery is done (writers and
    /// single nodes with `rules.rule_files`).
    pub rules: OnceLock<crate::rules::Rules>,
    /// For requests this server makes of its peers (rulers asking each
    /// other for their groups).
    pub http_client: reqwest::Client,
    /// The groups the ruler configuration API keeps in the bucket.
    pub rule_store: OnceLock<Arc<crate::ruler::store::RuleStore>>,
    /// Where alerts are sent: the Alertmanagers of `[alerting]`.
    pub notifier: Option<Arc<strata_rules::notifier::Notifier>>,
    /// The runtime query requests run on, apart from ingest and probes.
    pub query_pool: crate::admission::QueryPool,
    pub config: Config,
    /// How OTLP metrics become series (`config.otlp`, checked).
    pub otlp: strata_otlp::Settings,
    /// The start-up check's view of the object store, before the storage
    /// is open.
    pub startup_store: StoreHealth,
    /// The clock the server reads the time from.
    pub clock: Arc<dyn strata_codec::clock::Clock>,
    /// When the server started (and read its configuration), in ms since
    /// the epoch.
    pub started_ms: i64,
}

impl AppState {
    /// The state for `config`; fails when credentials or the token file
    /// cannot be read.
    pub fn new(config: Config) -> Result<Self, String> {
        let limits = &config.limits;
        Ok(Self {
            storage: OnceLock::new(),
            writer: OnceLock::new(),
            shards: parking_lot::RwLock::new(Vec::new()),
            shards_expected: std::sync::atomic::AtomicUsize::new(1),
            decode_limits: DecodeLimits {
                max_body_bytes: limits.max_body_bytes,
                max_decoded_bytes: limits.max_decoded_bytes,
            },
            series_limits: crate::ingest::series_limits(&config),
            default_durability: config.server.default_durability,
            tenants: Tenants::new(&config.tenants, limits),
            auth: Authenticator::new(&config.auth)?,
            metrics: ServerMetrics::default(),
            admission: crate::admission::QueryAdmission::new(&config.query),
            rules: OnceLock::new(),
            rule_store: OnceLock::new(),
            http_client: reqwest::Client::new(),
            notifier: if config.alerting.alertmanagers.is_empty() {
                None
            } else {
                Some(Arc::new(
                    strata_rules::notifier::Notifier::start(&config.notifier_settings())
                        .map_err(|e| format!("alerting: {e}"))?,
                ))
            },
            query_pool: crate::admission::QueryPool::new()
                .map_err(|e| format!("cannot start the query runtime: {e}"))?,
            otlp: config.otlp.settings()?,
            config,
            startup_store: StoreHealth::default(),
            clock: Arc::new(strata_codec::clock::SystemClock),
            started_ms: strata_codec::clock::Clock::now_ms(&strata_codec::clock::SystemClock),
        })
    }

    /// How long the object store has failed every request, and the last
    /// failure: the start-up check's until the storage is open, then the
    /// longest over the databases this process reads.
    pub fn store_failing_for(&self) -> Option<(std::time::Duration, String)> {
        let shards = self.shards.read().clone();
        if shards.is_empty() {
            return self.startup_store.failing_for();
        }
        shards
            .iter()
            .filter_map(|s| s.object_store_failing_for())
            .max_by_key(|(d, _)| *d)
    }

    pub fn storage(&self) -> Option<&Arc<Storage>> {
        self.storage.get()
    }

    /// The writer, once recovery has finished on a writer; never on a
    /// reader node.
    pub fn writer(&self) -> Option<&Arc<Writer>> {
        self.writer.get()
    }

    /// The databases queries fan out over, once recovery is done; an
    /// error names what is still missing.
    pub fn query_storages(&self) -> Result<Vec<Arc<Storage>>, String> {
        let shards = self.shards.read().clone();
        if shards.is_empty() {
            return Err("recovery is in progress".into());
        }
        let expected = self
            .shards_expected
            .load(std::sync::atomic::Ordering::Acquire);
        if shards.len() < expected {
            return Err(format!(
                "{} of {expected} shards are open; waiting for the others to exist",
                shards.len()
            ));
        }
        Ok(shards)
    }
}
