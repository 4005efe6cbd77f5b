//! The `strata` server: configuration, the HTTP API and the process
//! lifecycle (recovery, readiness, graceful shutdown).

pub mod admission;
pub mod alloc;
pub mod auth;
pub mod build_info;
pub mod config;
pub mod distributor;
pub mod effective_config;
pub mod http;
pub mod ingest;
mod lifecycle;
pub mod metrics;
mod query_source;
mod rate_limit;
pub mod ruler;
pub mod rules;
mod rules_metrics;
mod serve;
pub mod state;
mod tenant_id;
pub mod tenants;
mod tls;

use std::sync::Arc;

use object_store::ObjectStore;

use crate::config::{Config, Role};

/// A problem found while starting (the object store, the listen address):
/// the process exits 2, as for a configuration error.
#[derive(Debug)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

/// Wraps each object store the server opens its storage on, e.g. to
/// inject faults in tests.
pub type StoreLayer = Arc<dyn Fn(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> + Send + Sync>;

/// Runs the server until `shutdown` resolves: listen first (so `/-/ready`
/// can say recovery is in progress), recover, serve, then stop accepting,
/// finish in-flight requests and flush everything to the object store.
pub async fn run(
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run_with_store_layer(config, shutdown, Arc::new(|store| store)).await
}

/// [`run`], with the storage opened on `layer(store)`.
pub async fn run_with_store_layer(
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    layer: StoreLayer,
) -> anyhow::Result<()> {
    if config.server.role == Role::Distributor {
        return distributor::run(config, shutdown).await;
    }
    lifecycle::run(config, shutdown, layer).await
}
