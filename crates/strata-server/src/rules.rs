//! The rules a writer (or a single node) evaluates itself: rule files
//! from `rules.rule_files`, read through the same query engine as the API,
//! their output written through the same write path as remote write, and
//! reloaded on SIGHUP or `POST /-/reload` (a bad file keeps the rules that
//! run and says why).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_codec::Label;
use strata_promql::{Engine, Queryable};
use strata_remote_write::{DecodedWrite, RawLabel, RawLabels, RawSeries, Version};
use strata_rules::group::{Context, GroupSpec, Sink};
use strata_rules::manager::RuleManager;
use strata_storage::Durability;

use crate::config::RulesConfig;
use crate::query_source::StorageSource;
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

/// The rules this process evaluates, and how their last load went.
pub struct Rules {
    pub manager: RuleManager,
    config: RulesConfig,
    pub status: Mutex<ReloadStatus>,
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

impl Rules {
    /// Starts the rules of `state`'s configuration on its writer; fails
    /// when the rule files do not load (a start-up error, as Prometheus').
    pub fn start(state: &Arc<AppState>) -> Result<Self, String> {
        let config = state.config.rules.clone();
        let specs = load(&config)?;
        let source: Arc<dyn Queryable> = Arc::new(TenantSource::new(
            Arc::new(StorageSource::new(Arc::clone(state))),
            Tenant::DEFAULT,
        ));
        let limits = state.config.query.limits();
        let ctx = Context {
            engine: Engine::new(source, limits),
            sink: Arc::new(WriteSink {
                state: Arc::clone(state),
                tenant: Tenant::DEFAULT,
            }),
            notify: state
                .notifier
                .as_ref()
                .map(|n| Arc::clone(n) as Arc<dyn strata_rules::group::Notify>),
            external_labels: config.external_labels_map(),
            external_url: config.external_url.clone(),
            resend_delay: config.resend_delay,
            for_grace: config.for_grace_period,
            outage_tolerance: config.for_outage_tolerance,
        };
        // Rules are query work: they run on the query runtime, below
        // ingest and the probes.
        let mut manager = RuleManager::new(Arc::new(ctx), Arc::clone(&state.clock));
        if let Some(rt) = state.query_pool.handle() {
            manager = manager.on_runtime(rt);
        }
        let groups = specs.len();
        manager.update(specs);
        if groups > 0 {
            tracing::info!(groups, "rules loaded");
        }
        Ok(Self {
            manager,
            config,
            status: Mutex::new(ReloadStatus {
                ok: true,
                at: strata_codec::clock::Clock::now_ms(state.clock.as_ref()),
                error: None,
                successes: 1,
                failures: 0,
            }),
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

    /// The rules' metrics, named after Prometheus'.
    pub fn render(&self, out: &mut String) {
        crate::rules_metrics::render(self, out);
    }
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
            version: Version::V1,
            series,
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        };
        match crate::http::write::ingest(
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
