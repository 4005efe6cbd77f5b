//! What every handler shares: the storage (once recovery is done), the
//! limits and the server's own metrics.

use std::sync::{Arc, OnceLock};

use strata_remote_write::DecodeLimits;
use strata_storage::{Durability, Storage};

use crate::config::Config;
use crate::metrics::ServerMetrics;
use crate::rate_limit::RateLimiter;

pub struct AppState {
    /// Set once recovery has finished; until then the server is not ready.
    pub storage: OnceLock<Arc<Storage>>,
    /// Every database queries read, set with `storage`: the writer's own,
    /// or on a reader each shard's (the first is also `storage`).
    pub shards: OnceLock<Vec<Arc<Storage>>>,
    pub decode_limits: DecodeLimits,
    pub default_durability: Durability,
    pub rate_limiter: Option<RateLimiter>,
    pub metrics: ServerMetrics,
    pub config: Config,
}

impl AppState {
    pub fn new(config: Config) -> Self {
        let limits = &config.limits;
        Self {
            storage: OnceLock::new(),
            shards: OnceLock::new(),
            decode_limits: DecodeLimits {
                max_body_bytes: limits.max_body_bytes,
                max_decoded_bytes: limits.max_decoded_bytes,
            },
            default_durability: match config.server.default_durability {
                crate::config::DurabilityConfig::Applied => Durability::Applied,
                crate::config::DurabilityConfig::Durable => Durability::Durable,
            },
            rate_limiter: (limits.ingest_rate_limit > 0).then(|| {
                RateLimiter::new(
                    limits.ingest_rate_limit,
                    if limits.ingest_burst == 0 {
                        limits.ingest_rate_limit
                    } else {
                        limits.ingest_burst
                    },
                )
            }),
            metrics: ServerMetrics::default(),
            config,
        }
    }

    pub fn storage(&self) -> Option<&Arc<Storage>> {
        self.storage.get()
    }

    /// The databases queries fan out over, once recovery is done.
    pub fn shards(&self) -> Option<&[Arc<Storage>]> {
        self.shards.get().map(Vec::as_slice)
    }
}
