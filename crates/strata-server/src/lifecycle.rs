//! A writer's or reader node's life, step by step: plan which databases
//! to open, listen, serve (answering 503 until ready), open and recover,
//! follow the other shards, and close once the server has stopped.
//!
//! ```text
//!  plan ─▶ listen ─▶ serve ─────────────────────────────▶ stopped ─▶ close
//!                      └─▶ open (check store, recover) ─▶ ready
//!                                └─▶ follow other shards (sharded `all`)
//! ```

use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Context as _;
use object_store::ObjectStore;
use strata_storage::{
    check_object_store, open_object_store, ObjectStoreLocation, ReaderSettings, S3Settings,
    Storage, StorageSettings, SystemClock, Writer,
};
use tokio::sync::watch;

use crate::config::{Config, Role};
use crate::state::AppState;
use crate::{http, serve, tls, StartupError, StoreLayer};

/// How often a sharded `all` process retries opening another shard that
/// does not exist yet.
const OTHER_SHARD_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The databases this process opens, before any is.
struct Plan {
    role: Role,
    /// Each database it opens itself (the writer's one, or each shard a
    /// reader follows), on the layered store, with the unlayered store
    /// the start-up check probes.
    locations: Vec<(String, ObjectStoreLocation, Arc<dyn ObjectStore>)>,
    /// In a sharded `all` process, the other shards, opened read-only for
    /// queries once they exist (they may start after this one).
    other_shards: Vec<String>,
}

impl Plan {
    fn new(config: &Config, layer: &StoreLayer) -> anyhow::Result<Self> {
        let role = config.server.role;
        let urls = if role.reads_only() {
            config.read_urls()
        } else {
            config.write_url().map(|u| vec![u])
        }
        .map_err(anyhow::Error::msg)?;
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
        for url in urls {
            let mut location = open_object_store(&url, &config.object_store.s3)
                .map_err(|e| StartupError(e.to_string()))?;
            // The start-up check probes the store unlayered: the check is
            // not the store's traffic.
            let probe = Arc::clone(&location.store);
            location.store = layer(location.store);
            locations.push((url, location, probe));
        }
        Ok(Self {
            role,
            locations,
            other_shards,
        })
    }

    fn databases(&self) -> usize {
        self.locations.len() + self.other_shards.len()
    }
}

/// The settings the open and follow steps need once the configuration
/// has moved into the shared state.
#[derive(Clone)]
struct OpenSettings {
    role: Role,
    storage: StorageSettings,
    reader: ReaderSettings,
    s3: S3Settings,
}

/// Runs a writer or reader node until `shutdown` resolves.
pub(crate) async fn run(
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    layer: StoreLayer,
) -> anyhow::Result<()> {
    let plan = Plan::new(&config, &layer)?;
    // Rule files that do not load stop the start, as Prometheus' do.
    if config.server.role != Role::Reader {
        crate::rules::load(&config.rules).map_err(|e| StartupError(format!("rule files: {e}")))?;
    }
    let listener = listen(&config, &plan).await?;
    let settings = OpenSettings {
        role: plan.role,
        storage: config.storage.clone(),
        reader: config.reader.clone(),
        s3: config.object_store.s3.clone(),
    };
    let shutdown_timeout = config.server.shutdown_timeout;
    let tls = if config.tls.enabled() {
        Some(tls::server_config(&config.tls)?)
    } else {
        None
    };
    let rule_store = open_rule_store(&config)?;
    let state = Arc::new(AppState::new(config).map_err(anyhow::Error::msg)?);
    let _ = state.rule_store.set(rule_store);
    state
        .shards_expected
        .store(plan.databases(), Ordering::Release);
    let (server, stop) = serve(listener, &state, tls, shutdown);
    let other_shards = plan.other_shards.clone();
    if !open(plan, &state, &settings, stop.clone()).await? {
        tracing::info!("stopped during recovery");
        return Ok(());
    }
    start_rules(&state, settings.role).map_err(StartupError)?;
    crate::rules::reload_on_sighup(Arc::clone(&state));
    for url in other_shards {
        tokio::spawn(follow_other_shard(
            url,
            Arc::clone(&state),
            settings.clone(),
            stop.clone(),
        ));
    }
    server.await.context("HTTP server task")?;
    if let Some(rules) = state.rules.get() {
        rules.stop().await;
    }
    if let Some(n) = &state.notifier {
        n.shutdown().await;
    }
    close(&state, settings.role, shutdown_timeout).await;
    Ok(())
}

/// Starts the rules of this role: a single node evaluates its rule files
/// and the bucket's groups and writes through its own writer; a writer its
/// rule files; a ruler both, over remote write, sharing the groups with
/// the other rulers. A reader evaluates none.
fn start_rules(state: &Arc<AppState>, role: Role) -> Result<(), String> {
    use crate::rules::{Output, Rules, Setup};
    let config = &state.config;
    let store = state.rule_store.get().cloned();
    let setup = match role {
        Role::Reader | Role::Distributor => return Ok(()),
        Role::Writer if config.rules.rule_files.is_empty() => return Ok(()),
        Role::Writer => Setup {
            output: Output::Local,
            sharing: None,
            store: None,
        },
        Role::All => Setup {
            output: Output::Local,
            sharing: None,
            store,
        },
        Role::Ruler => {
            let store = store.ok_or("the ruler's bucket is not open")?;
            let bearer_token = match config.ruler.write_bearer_token_file.as_str() {
                "" => None,
                path => Some(
                    std::fs::read_to_string(path)
                        .map_err(|e| format!("ruler.write_bearer_token_file: {path}: {e}"))?
                        .trim()
                        .to_owned(),
                ),
            };
            let client = reqwest::Client::builder()
                .timeout(config.ruler.write_timeout)
                .build()
                .map_err(|e| format!("ruler: {e}"))?;
            let sharing = Arc::new(crate::ruler::lease::Sharing::new(
                Arc::clone(store.object_store()),
                store.ruler_root(),
                ruler_id(state.clock.as_ref()),
                config.ruler.heartbeat_interval,
                Arc::clone(&state.clock),
            ));
            tokio::spawn(Arc::clone(&sharing).heartbeat(config.ruler.advertise_url.clone()));
            Setup {
                output: Output::Remote {
                    client,
                    url: format!(
                        "{}/api/v1/write",
                        config.ruler.write_url.trim_end_matches('/')
                    ),
                    bearer_token,
                },
                sharing: Some(sharing),
                store: Some(store),
            }
        }
    };
    let polls = setup.store.is_some();
    let rules = Rules::start(state, setup)?;
    if state.rules.set(rules).is_err() {
        return Ok(());
    }
    if polls {
        let state = Arc::clone(state);
        let interval = state.config.ruler.poll_interval;
        tokio::spawn(async move {
            if let Some(rules) = state.rules.get() {
                rules.poll_stored_forever(interval).await;
            }
        });
    }
    Ok(())
}

/// A ruler's name among the rulers: its host name and a part that differs
/// at each start.
fn ruler_id(clock: &dyn strata_codec::clock::Clock) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "ruler".into());
    let salt = clock.now_ms().unsigned_abs() ^ (u64::from(std::process::id()) << 20);
    format!("{host}-{:08x}", salt & 0xffff_ffff)
}

/// The store of the groups the ruler configuration API manages: beside
/// the data, at the object store's root.
fn open_rule_store(config: &Config) -> anyhow::Result<Arc<crate::ruler::store::RuleStore>> {
    let url = config.object_store_url().map_err(anyhow::Error::msg)?;
    let location = open_object_store(&url, &config.object_store.s3)
        .map_err(|e| StartupError(e.to_string()))?;
    Ok(Arc::new(crate::ruler::store::RuleStore::new(
        location.store,
        &object_store::path::Path::from(location.path.as_str()),
    )))
}

/// Binds the listen address first, so `/-/ready` can say recovery is in
/// progress.
async fn listen(config: &Config, plan: &Plan) -> anyhow::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .map_err(|e| StartupError(format!("cannot listen on {}: {e}", config.server.listen)))?;
    let urls: Vec<&str> = plan.locations.iter().map(|(u, ..)| u.as_str()).collect();
    tracing::info!(
        listen = %config.server.listen,
        object_store = %urls.join(","),
        tls = config.tls.enabled(),
        role = ?config.server.role,
        shard = ?config.shard_id(),
        "strata starting"
    );
    Ok(listener)
}

/// Serves HTTP until `shutdown` resolves, then stops accepting and
/// finishes in-flight requests; the receiver turns true at `shutdown`.
fn serve(
    listener: tokio::net::TcpListener,
    state: &Arc<AppState>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> (tokio::task::JoinHandle<()>, watch::Receiver<bool>) {
    let app = http::router(Arc::clone(state));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut stopped = stop_rx.clone();
    let server = tokio::spawn(async move {
        let stopped = async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        serve::serve(listener, app, tls, stopped).await;
    });
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: no new connections; finishing in-flight requests");
        let _ = stop_tx.send(true);
    });
    (server, stop_rx)
}

/// Checks each store and opens its database (every shard a reader follows
/// at once), then makes them the state's; false when stopped first.
async fn open(
    plan: Plan,
    state: &Arc<AppState>,
    settings: &OpenSettings,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    let started = std::time::Instant::now();
    let role = plan.role;
    let opening = plan.locations.into_iter().map(|(url, location, probe)| {
        let state = Arc::clone(state);
        let settings = settings.clone();
        async move {
            // A store that cannot work fails the start with one line (exit
            // 2), instead of a recovery that retries for ever; meanwhile
            // the server answers 503.
            check_object_store(
                probe.as_ref(),
                &url,
                &location.path,
                role != Role::Reader,
                &state.startup_store,
            )
            .await
            .map_err(StartupError)?;
            let opened = if role.reads_only() {
                Storage::open_reader(
                    location.store,
                    &location.path,
                    settings.storage,
                    settings.reader,
                    Arc::new(SystemClock),
                )
                .await
                .map(|s| Opened::Reader(Arc::new(s)))
            } else {
                Writer::open(
                    location.store,
                    &location.path,
                    settings.storage,
                    Arc::new(SystemClock),
                )
                .await
                .map(|w| Opened::Writer(Arc::new(w)))
            };
            opened.with_context(|| format!("cannot open storage at {url}"))
        }
    });
    let opened: Vec<Opened> = tokio::select! {
        s = futures::future::try_join_all(opening) => s?,
        _ = stop.wait_for(|s| *s) => return Ok(false),
    };
    let storages: Vec<Arc<Storage>> = opened.iter().map(Opened::storage).collect();
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        series = storages
            .iter()
            .map(|s| s.head().num_series())
            .sum::<usize>(),
        shards = storages.len(),
        "recovery done; ready"
    );
    for o in &opened {
        if let Opened::Writer(w) = o {
            let _ = state.writer.set(Arc::clone(w));
        }
    }
    if let Some(first) = storages.first() {
        state.shards.write().extend(storages.iter().cloned());
        let _ = state.storage.set(Arc::clone(first));
    }
    Ok(true)
}

/// A database this process opened itself.
enum Opened {
    Writer(Arc<Writer>),
    Reader(Arc<Storage>),
}

impl Opened {
    fn storage(&self) -> Arc<Storage> {
        match self {
            Opened::Writer(w) => Arc::clone(w.storage()),
            Opened::Reader(s) => Arc::clone(s),
        }
    }
}

/// Opens another shard read-only for queries once it exists, retrying
/// until it does or the server stops.
async fn follow_other_shard(
    url: String,
    state: Arc<AppState>,
    settings: OpenSettings,
    mut stop: watch::Receiver<bool>,
) {
    let mut told = false;
    loop {
        let opened = match open_object_store(&url, &settings.s3) {
            Ok(loc) => Storage::open_reader(
                loc.store,
                &loc.path,
                settings.storage.clone(),
                settings.reader.clone(),
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
            Err(e) if !told => {
                tracing::warn!(%url, error = %e, "other shard not available yet; retrying");
                told = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(OTHER_SHARD_RETRY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Closes every database the process opened: the writer flushes to the
/// object store, readers stop following; bounded by `timeout`.
async fn close(state: &AppState, role: Role, timeout: std::time::Duration) {
    let open: Vec<Arc<Storage>> = state.shards.read().clone();
    let writer = state.writer.get().cloned();
    let closing = async {
        let writer_closed = async {
            match &writer {
                Some(w) => w.close().await,
                None => Ok(()),
            }
        };
        let (mut results, writer) = futures::future::join(
            futures::future::join_all(open.iter().map(|s| s.close())),
            writer_closed,
        )
        .await;
        results.push(writer);
        results
    };
    match tokio::time::timeout(timeout, closing).await {
        Ok(results) => match results.into_iter().find_map(Result::err) {
            None if role.reads_only() => tracing::info!("stopped; bye"),
            None => tracing::info!("flushed to the object store; bye"),
            Some(e) => tracing::error!(error = %e, "closing storage failed"),
        },
        Err(_) => tracing::error!("closing storage timed out"),
    }
}
