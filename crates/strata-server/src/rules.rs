//! The rules a process evaluates: rule files from `rules.rule_files`
//! (reloaded on SIGHUP or `POST /-/reload`; a bad file keeps the rules
//! that run and says why) and, on a single node or a ruler, each tenant's
//! groups kept in the bucket by the ruler configuration API. Queries go
//! through the same engine as the API; the output goes through the write
//! path of the process (a single node, a writer) or over remote write to
//! a distributor or writer (a ruler).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_codec::Label;
use strata_promql::{Engine, Queryable};
use strata_rules::group::{Context, Group, GroupSpec, Sink};
use strata_rules::manager::RuleManager;
use strata_storage::Durability;
use strata_write::{DecodedWrite, RawLabel, RawLabels, RawSeries};

use crate::config::RulesConfig;
use crate::query_source::StorageSource;
use crate::ruler::lease::{Sharing, TenantClaim};
use crate::ruler::overlay::{OverlaySource, RecentWrites};
use crate::ruler::sink::RemoteSink;
use crate::ruler::store::{RuleStore, StoredGroup};
use crate::state::AppState;
use crate::tenants::{Tenant, TenantSource};

/// How the last load of the rule files went.
#[derive(Clone, Debug, Default)]
pub struct ReloadStatus {
    pub ok: bool,
    /// ms since the epoch.
    pub at: i64,
    pub error: Option<String>,
    pub successes: u64,
    pub failures: u64,
}

/// Where a process's rules write: its own writer (a single node or a
/// writer), or a distributor or writer over remote write (a ruler).
pub enum Output {
    Local,
    Remote {
        client: reqwest::Client,
        /// `<write_url>/api/v1/write`.
        url: String,
        bearer_token: Option<String>,
    },
}

/// How this process runs rules: where they write, whether it shares the
/// groups with other rulers, and the bucket's stored groups.
pub struct Setup {
    pub output: Output,
    pub sharing: Option<Arc<Sharing>>,
    /// The groups of the ruler configuration API; `None`: file rules only.
    pub store: Option<Arc<RuleStore>>,
}

/// The rules this process evaluates (the files' and the bucket's, each
/// tenant's apart), and how their last load went.
pub struct Rules {
    /// The rule files' groups, the default tenant's.
    pub manager: RuleManager,
    /// The groups kept in the bucket, by tenant name.
    stored: Mutex<BTreeMap<String, RuleManager>>,
    state: std::sync::Weak<AppState>,
    setup: Setup,
    config: RulesConfig,
    pub status: Mutex<ReloadStatus>,
    /// Woken when the configuration API changed the stored groups.
    changed: tokio::sync::Notify,
}

/// Reads the rule files the globs name and checks them: every group as it
/// runs, or every problem, each naming its file.
pub fn load(config: &RulesConfig) -> Result<Vec<GroupSpec>, String> {
    let files = strata_rules::file::load_globs(&config.rule_files).map_err(|problems| {
        problems
            .iter()
            .map(|(path, p)| format!("{}: {p}", path.display()))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let mut specs = Vec::new();
    for (path, file) in files {
        let name = path.display().to_string();
        for g in &file.groups {
            specs.push(GroupSpec::from_file(
                &name,
                g,
                config.evaluation_interval,
                config.query_offset,
            ));
        }
    }
    Ok(specs)
}

/// The specs of stored groups (one tenant's): each group's file is its
/// namespace, as Mimir shows it. A group that no longer checks (stored by
/// an older version) is left out and logged.
pub fn stored_specs(groups: &[StoredGroup], config: &RulesConfig) -> Vec<GroupSpec> {
    groups
        .iter()
        .filter_map(|g| match strata_rules::file::parse_group(&g.yaml) {
            Ok(parsed) => Some(GroupSpec::from_file(
                &g.namespace,
                &parsed,
                config.evaluation_interval,
                config.query_offset,
            )),
            Err(problems) => {
                tracing::warn!(tenant = %g.tenant, namespace = %g.namespace, group = %g.name,
                    problems = ?problems, "stored rule group does not check; not evaluated");
                None
            }
        })
        .collect()
}

impl Rules {
    /// Starts the rules of `state`'s configuration: the rule files' now
    /// (an error when they do not load, a start-up error as Prometheus'),
    /// and with a store, the bucket's at its first poll.
    pub fn start(state: &Arc<AppState>, setup: Setup) -> Result<Self, String> {
        let config = state.config.rules.clone();
        let specs = load(&config)?;
        let manager = new_manager(state, &setup, &Tenant::DEFAULT, None);
        let groups = specs.len();
        manager.update(specs);
        if groups > 0 {
            tracing::info!(groups, "rules loaded");
        }
        Ok(Self {
            manager,
            stored: Mutex::new(BTreeMap::new()),
            state: Arc::downgrade(state),
            setup,
            config,
            status: Mutex::new(ReloadStatus {
                ok: true,
                at: strata_codec::clock::Clock::now_ms(state.clock.as_ref()),
                error: None,
                successes: 1,
                failures: 0,
            }),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// Reads the rule files again and runs what they hold now; a file
    /// that does not load keeps the rules running and is the error.
    pub fn reload(&self, now_ms: i64) -> Result<(), String> {
        let loaded = load(&self.config);
        let mut st = self.status.lock();
        st.at = now_ms;
        match loaded {
            Ok(specs) => {
                self.manager.update(specs);
                st.ok = true;
                st.error = None;
                st.successes += 1;
                tracing::info!("rules reloaded");
                self.changed.notify_one();
                Ok(())
            }
            Err(e) => {
                st.ok = false;
                st.error = Some(e.clone());
                st.failures += 1;
                tracing::error!(error = %e, "rule files not reloaded; the rules loaded before keep running");
                Err(e)
            }
        }
    }

    /// How this ruler shares the groups with the others, when it does.
    pub fn sharing(&self) -> Option<&Arc<Sharing>> {
        self.setup.sharing.as_ref()
    }

    /// The bucket's groups, if this process evaluates them.
    pub fn store(&self) -> Option<&Arc<RuleStore>> {
        self.setup.store.as_ref()
    }

    /// Says the stored groups changed: the poll runs now.
    pub fn stored_changed(&self) {
        self.changed.notify_one();
    }

    /// Reads the bucket's groups and runs each tenant's: new and changed
    /// groups start (a changed group keeps the state of its rules that
    /// stayed), removed ones stop.
    pub async fn poll_stored(&self) -> Result<(), String> {
        let Some(store) = &self.setup.store else {
            return Ok(());
        };
        let Some(state) = self.state.upgrade() else {
            return Ok(());
        };
        let all = store.list(None).await?;
        let mut by_tenant: BTreeMap<String, Vec<StoredGroup>> = BTreeMap::new();
        for g in all {
            by_tenant.entry(g.tenant.clone()).or_default().push(g);
        }
        let mut running = self.stored.lock();
        running.retain(|tenant, manager| {
            let keep = by_tenant.contains_key(tenant);
            if !keep {
                manager.stop();
            }
            keep
        });
        for (tenant_name, groups) in by_tenant {
            let specs = stored_specs(&groups, &self.config);
            if let Some(m) = running.get(&tenant_name) {
                let now: Vec<GroupSpec> = m.groups().iter().map(|g| g.spec.clone()).collect();
                if now != specs {
                    m.update(specs);
                }
                continue;
            }
            let tenant = state.tenants.by_name(&tenant_name);
            let manager = new_manager(&state, &self.setup, &tenant, Some(&tenant_name));
            manager.update(specs);
            running.insert(tenant_name, manager);
        }
        Ok(())
    }

    /// Polls the bucket's groups every `interval`, and at once when the
    /// configuration API changed them, until the rules stop.
    pub async fn poll_stored_forever(&self, interval: Duration) {
        loop {
            if let Err(e) = self.poll_stored().await {
                tracing::warn!(error = %e, "stored rule groups not read; the groups read before keep running");
            }
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = self.changed.notified() => {}
            }
        }
    }

    /// Every group this process evaluates now, with its tenant's name
    /// (`None`: the rule files', the default tenant's). A ruler that
    /// shares the groups lists those it holds.
    pub fn groups_here(&self) -> Vec<(Option<String>, Arc<Group>)> {
        let mut out: Vec<(Option<String>, Arc<Group>)> = self
            .manager
            .groups()
            .into_iter()
            .map(|g| (None, g))
            .collect();
        for (tenant, m) in self.stored.lock().iter() {
            out.extend(m.groups().into_iter().map(|g| (Some(tenant.clone()), g)));
        }
        if let Some(sharing) = &self.setup.sharing {
            let default = self.default_tenant_name();
            out.retain(|(tenant, g)| sharing.holds(tenant.as_deref().unwrap_or(&default), &g.spec));
        }
        out
    }

    /// The groups one tenant sees in `/api/v1/rules` and `/api/v1/alerts`:
    /// for the default tenant the rule files' and its stored ones.
    pub fn groups_of(&self, tenant_name: &str) -> Vec<Arc<Group>> {
        let default = self.default_tenant_name();
        self.groups_here()
            .into_iter()
            .filter(|(t, _)| t.as_deref().unwrap_or(&default) == tenant_name)
            .map(|(_, g)| g)
            .collect()
    }

    fn default_tenant_name(&self) -> String {
        self.state
            .upgrade()
            .map(|s| s.tenants.name(&Tenant::DEFAULT).to_owned())
            .unwrap_or_default()
    }

    /// Stops every group; a ruler that shares them gives its groups up.
    pub async fn stop(&self) {
        self.manager.stop();
        for m in self.stored.lock().values() {
            m.stop();
        }
        if let Some(sharing) = &self.setup.sharing {
            sharing.leave().await;
        }
    }

    /// The rules' metrics, named after Prometheus'.
    pub fn render(&self, out: &mut String) {
        crate::rules_metrics::render(self, out);
    }
}

/// A rule manager for one tenant's groups: queries read that tenant's
/// series, the output is written in its name.
fn new_manager(
    state: &Arc<AppState>,
    setup: &Setup,
    tenant: &Tenant,
    tenant_name: Option<&str>,
) -> RuleManager {
    let config = &state.config.rules;
    let scoped: Arc<dyn Queryable> = Arc::new(TenantSource::new(
        Arc::new(StorageSource::new(Arc::clone(state))),
        tenant.clone(),
    ));
    let (source, sink): (Arc<dyn Queryable>, Arc<dyn Sink>) = match &setup.output {
        Output::Local => (
            scoped,
            Arc::new(WriteSink {
                state: Arc::clone(state),
                tenant: tenant.clone(),
            }),
        ),
        Output::Remote {
            client,
            url,
            bearer_token,
        } => {
            let recent = Arc::new(RecentWrites::default());
            (
                Arc::new(OverlaySource {
                    inner: scoped,
                    recent: Arc::clone(&recent),
                }),
                Arc::new(RemoteSink {
                    client: client.clone(),
                    url: url.clone(),
                    tenant: tenant.0.as_ref().map(|t| t.to_string()),
                    bearer_token: bearer_token.clone(),
                    recent,
                }),
            )
        }
    };
    let claim = setup.sharing.as_ref().map(|s| {
        Arc::new(TenantClaim {
            sharing: Arc::clone(s),
            tenant: tenant_name
                .map(str::to_owned)
                .unwrap_or_else(|| state.tenants.name(&Tenant::DEFAULT).to_owned()),
        }) as Arc<dyn strata_rules::group::Claim>
    });
    let ctx = Context {
        engine: Engine::new(source, state.config.query.limits()),
        sink,
        notify: state
            .notifier
            .as_ref()
            .map(|n| Arc::clone(n) as Arc<dyn strata_rules::group::Notify>),
        external_labels: config.external_labels_map(),
        external_url: config.external_url.clone(),
        resend_delay: config.resend_delay,
        for_grace: config.for_grace_period,
        outage_tolerance: config.for_outage_tolerance,
        claim,
    };
    // Rules are query work: they run on the query runtime, below ingest
    // and the probes.
    let mut manager = RuleManager::new(Arc::new(ctx), Arc::clone(&state.clock));
    if let Some(rt) = state.query_pool.handle() {
        manager = manager.on_runtime(rt);
    }
    manager
}

/// Writes what rules produce as remote write would: the tenant's label,
/// the one validation step and limits, then storage, applied.
struct WriteSink {
    state: Arc<AppState>,
    tenant: Tenant,
}

#[async_trait::async_trait]
impl Sink for WriteSink {
    async fn write(&self, samples: Vec<(Vec<Label>, i64, f64)>) -> Result<(), String> {
        let Some(writer) = self.state.writer() else {
            return Err("this node has no writer: it cannot store what its rules record".into());
        };
        let mut series: Vec<RawSeries> = Vec::with_capacity(samples.len());
        for (labels, t, v) in samples {
            let labels = labels
                .into_iter()
                .filter_map(|l| {
                    RawLabel::new(
                        bytes::Bytes::from(l.name.into_bytes()),
                        bytes::Bytes::from(l.value.into_bytes()),
                    )
                })
                .collect();
            series.push(RawSeries {
                labels: RawLabels(labels),
                samples: vec![(t, v)],
                histograms: Vec::new(),
                exemplars: Vec::new(),
            });
        }
        let decoded = DecodedWrite {
            series,
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        };
        match crate::ingest::ingest(
            &self.state,
            &self.tenant,
            writer,
            decoded,
            Durability::Applied,
        )
        .await
        {
            Ok(i) => match i.reasons {
                Some(why) if i.rejected > 0 => {
                    Err(format!("{} samples refused: {why}", i.rejected))
                }
                _ => Ok(()),
            },
            Err(response) => {
                let status = response.status();
                let body = axum::body::to_bytes(response.into_body(), 64 << 10)
                    .await
                    .unwrap_or_default();
                Err(format!(
                    "writing the rule's output failed ({status}): {}",
                    String::from_utf8_lossy(&body).trim()
                ))
            }
        }
    }
}

/// Waits for SIGHUP and reloads the rules at each, until the process ends.
pub fn reload_on_sighup(state: Arc<AppState>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            if let Some(rules) = state.rules.get() {
                let now = strata_codec::clock::Clock::now_ms(state.clock.as_ref());
                let _ = rules.reload(now);
            }
        }
    });
    #[cfg(not(unix))]
    let _ = state;
}

/// How long to wait between looks for a writer before rules can start.
pub const START_RETRY: Duration = Duration::from_millis(200);
