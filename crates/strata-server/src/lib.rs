//! The `strata` server: configuration, the HTTP API and the process
//! lifecycle (recovery, readiness, graceful shutdown).

pub mod auth;
pub mod build_info;
pub mod config;
pub mod distributor;
pub mod effective_config;
pub mod http;
pub mod metrics;
mod query_source;
mod rate_limit;
mod serve;
pub mod state;
pub mod tenants;
mod tls;

use std::sync::Arc;

use anyhow::Context as _;
use object_store::ObjectStore;
use strata_storage::{check_object_store, open_object_store, Storage, SystemClock};

use crate::config::{Config, Role};
use crate::state::AppState;

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
    let role = config.server.role;
    let urls = if role == Role::Reader {
        config.read_urls()
    } else {
        config.write_url().map(|u| vec![u])
    }
    .map_err(anyhow::Error::msg)?;
    // A sharded `all` process also answers queries over the other shards,
    // opened read-only once they exist (they may start after this one).
    let other_shards: Vec<String> = if role == Role::All && config.shard_id().is_some() {
        config
            .read_urls()
            .map_err(anyhow::Error::msg)?
            .into_iter()
            .filter(|u| !urls.contains(u))
            .collect()
    } else {
        Vec::new()
    };
    let mut locations = Vec::with_capacity(urls.len());
    for url in &urls {
        let mut location = open_object_store(url, &config.object_store.s3)
            .map_err(|e| StartupError(e.to_string()))?;
        // Checked below, unlayered: the check is not the store's traffic.
        let probe = Arc::clone(&location.store);
        location.store = layer(location.store);
        locations.push((location, probe));
    }
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .map_err(|e| StartupError(format!("cannot listen on {}: {e}", config.server.listen)))?;
    tracing::info!(
        listen = %config.server.listen,
        object_store = %urls.join(","),
        tls = config.tls.enabled(),
        role = ?config.server.role,
        shard = ?config.shard_id(),
        "strata starting"
    );
    let shutdown_timeout = config.server.shutdown_timeout;
    let storage_settings = config.storage.clone();
    let reader_settings = config.reader.clone();
    let s3_settings = config.object_store.s3.clone();
    let tls = if config.tls.enabled() {
        Some(tls::server_config(&config.tls)?)
    } else {
        None
    };
    let state = Arc::new(AppState::new(config).map_err(anyhow::Error::msg)?);
    state.shards_expected.store(
        urls.len() + other_shards.len(),
        std::sync::atomic::Ordering::Release,
    );
    let app = http::router(Arc::clone(&state));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut stop_for_server = stop_rx.clone();
    let server = tokio::spawn(async move {
        let stopped = async move {
            let _ = stop_for_server.wait_for(|s| *s).await;
        };
        serve::serve(listener, app, tls, stopped).await;
    });
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: no new connections; finishing in-flight requests");
        let _ = stop_tx.send(true);
    });

    let started = std::time::Instant::now();
    let mut stop_during_recovery = stop_rx.clone();
    // Every shard a reader follows recovers at once.
    let opening = locations
        .into_iter()
        .zip(&urls)
        .map(|((location, probe), url)| {
            let state = Arc::clone(&state);
            let (storage_settings, reader_settings) =
                (storage_settings.clone(), reader_settings.clone());
            async move {
                // A store that cannot work fails the start with one line (exit
                // 2), instead of a recovery that retries for ever; meanwhile
                // the server answers 503.
                check_object_store(
                    probe.as_ref(),
                    url,
                    &location.path,
                    role != Role::Reader,
                    &state.startup_store,
                )
                .await
                .map_err(StartupError)?;
                let opened = if role == Role::Reader {
                    Storage::open_reader(
                        location.store,
                        &location.path,
                        storage_settings,
                        reader_settings,
                        Arc::new(SystemClock),
                    )
                    .await
                } else {
                    Storage::open(
                        location.store,
                        &location.path,
                        storage_settings,
                        Arc::new(SystemClock),
                    )
                    .await
                };
                opened
                    .map(Arc::new)
                    .with_context(|| format!("cannot open storage at {url}"))
            }
        });
    let storages: Vec<Arc<Storage>> = tokio::select! {
        s = futures::future::try_join_all(opening) => s?,
        _ = stop_during_recovery.wait_for(|s| *s) => {
            tracing::info!("stopped during recovery");
            return Ok(());
        }
    };
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        series = storages
            .iter()
            .map(|s| s.head().num_series())
            .sum::<usize>(),
        shards = storages.len(),
        "recovery done; ready"
    );
    if let Some(first) = storages.first() {
        state.shards.write().extend(storages.iter().cloned());
        let _ = state.storage.set(Arc::clone(first));
    }
    for url in other_shards {
        let (state, s3, settings, reader, mut stop) = (
            Arc::clone(&state),
            s3_settings.clone(),
            storage_settings.clone(),
            reader_settings.clone(),
            stop_rx.clone(),
        );
        tokio::spawn(async move {
            let mut told = false;
            loop {
                let opened = match open_object_store(&url, &s3) {
                    Ok(loc) => Storage::open_reader(
                        loc.store,
                        &loc.path,
                        settings.clone(),
                        reader.clone(),
                        Arc::new(SystemClock),
                    )
                    .await
                    .map_err(anyhow::Error::from),
                    Err(e) => Err(anyhow::Error::from(e)),
                };
                match opened {
                    Ok(s) => {
                        tracing::info!(%url, "opened another shard read-only for queries");
                        state.shards.write().push(Arc::new(s));
                        return;
                    }
                    Err(e) => {
                        if !told {
                            tracing::warn!(%url, error = %e, "other shard not available yet; retrying");
                            told = true;
                        }
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
    }

    server.await.context("HTTP server task")?;
    let open: Vec<Arc<Storage>> = state.shards.read().clone();
    let closing = futures::future::join_all(open.iter().map(|s| s.close()));
    match tokio::time::timeout(shutdown_timeout, closing).await {
        Ok(results) => match results.into_iter().find_map(Result::err) {
            None if role == Role::Reader => tracing::info!("stopped; bye"),
            None => tracing::info!("flushed to the object store; bye"),
            Some(e) => tracing::error!(error = %e, "closing storage failed"),
        },
        Err(_) => tracing::error!("closing storage timed out"),
    }
    Ok(())
}
