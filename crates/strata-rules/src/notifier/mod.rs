//! Sending alerts to Alertmanagers, as Prometheus' notifier does
//! (`notifier/`): alerts get the external labels they lack and the global
//! relabeling as they are queued; a task takes batches from the queue and
//! posts each to every Alertmanager of every group at once, after the
//! group's own relabeling.
//!
//! ```text
//!  group eval ─send─▶ external labels, relabel ─▶ queue (drops oldest when full)
//!                                                   │ batches of max_batch_size
//!                                                   ▼
//!                           per group: relabel ─▶ POST /api/v2/alerts to each Alertmanager
//! ```
//!
//! A failed post is not retried: the rules resend firing alerts on their
//! own schedule (`resend_delay`), as Prometheus does.

mod body;
mod queue;
mod send;
pub mod settings;
mod stats;
mod target;
mod tls;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify as Wake;

use crate::alerting::LabelSet;
use crate::group::{Notification, Notify};
use crate::relabel::{self, RelabelConfig};

pub use settings::{
    AlertmanagerSettings, ApiVersion, BasicAuth, NotifierSettings, Secret, TlsSettings,
};
pub use stats::{AlertmanagerStats, NotifierStats};

use queue::AlertQueue;
use send::Group;

/// Settings the notifier could not use.
#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    #[error("notifier settings: {0}")]
    Settings(String),
    #[error("notifier TLS settings: {0}")]
    Tls(String),
    #[error("notifier HTTP client: {0}")]
    Client(String),
}

/// The notifier: a queue that [`Notify::send`] fills without waiting, and
/// the task that empties it. Shut it down with [`Notifier::shutdown`]; a
/// notifier dropped without it stops its task after what is queued (or
/// at once, without `drain_on_shutdown`).
pub struct Notifier {
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What `send` and the task share.
struct Shared {
    queue: Mutex<AlertQueue>,
    config: RwLock<Arc<Compiled>>,
    wake: Wake,
    stopping: AtomicBool,
    stats: Arc<NotifierStats>,
    max_batch_size: usize,
    drain_on_shutdown: bool,
}

/// The settings that can change on a reload, made ready for use.
struct Compiled {
    external_labels: LabelSet,
    relabel: Vec<RelabelConfig>,
    groups: Vec<Arc<Group>>,
}

impl Compiled {
    fn new(settings: &NotifierSettings) -> Result<Self, NotifierError> {
        settings.validate()?;
        let groups = settings
            .alertmanagers
            .iter()
            .map(|am| Group::new(am).map(Arc::new))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            external_labels: settings.external_labels.clone(),
            relabel: settings.alert_relabel_configs.clone(),
            groups,
        })
    }
}

impl Notifier {
    /// Checks `settings` and starts the sending task on the current tokio
    /// runtime.
    pub fn start(settings: &NotifierSettings) -> Result<Self, NotifierError> {
        let compiled = Compiled::new(settings)?;
        let queue = AlertQueue::new(settings.queue_capacity);
        let stats = Arc::new(NotifierStats::new(queue.capacity()));
        let shared = Arc::new(Shared {
            queue: Mutex::new(queue),
            config: RwLock::new(Arc::new(compiled)),
            wake: Wake::new(),
            stopping: AtomicBool::new(false),
            stats,
            max_batch_size: settings.max_batch_size.max(1),
            drain_on_shutdown: settings.drain_on_shutdown,
        });
        let task = tokio::spawn(run(Arc::clone(&shared)));
        Ok(Self {
            shared,
            task: Mutex::new(Some(task)),
        })
    }

    /// Takes new Alertmanagers, external labels and relabeling; the queue
    /// and its capacity stay. On an error the old settings stay.
    pub fn reload(&self, settings: &NotifierSettings) -> Result<(), NotifierError> {
        let compiled = Compiled::new(settings)?;
        *self.shared.config.write() = Arc::new(compiled);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// The notifier's counts, for `/metrics`.
    pub fn stats(&self) -> Arc<NotifierStats> {
        Arc::clone(&self.shared.stats)
    }

    /// Stops taking alerts and waits for the task: after it sent what was
    /// queued with `drain_on_shutdown`, at once (what was queued counted as
    /// dropped) without.
    pub async fn shutdown(&self) {
        self.shared.stop();
        let task = self.task.lock().take();
        if let Some(task) = task {
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "notifier task ended abnormally");
            }
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

impl Shared {
    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

impl Notify for Notifier {
    fn send(&self, alerts: Vec<Notification>) {
        if self.shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let config = Arc::clone(&self.shared.config.read());
        let alerts = relabel_alerts(alerts, &config.external_labels, &config.relabel);
        if alerts.is_empty() {
            return;
        }
        let (dropped, len) = {
            let mut queue = self.shared.queue.lock();
            (queue.push(alerts), queue.len())
        };
        if dropped > 0 {
            tracing::warn!(dropped, "alert notification queue full, dropping alerts");
            self.shared.stats.add_dropped(dropped);
        }
        self.shared.stats.set_queue_length(len);
        self.shared.wake.notify_one();
    }
}

/// Adds each of `external` an alert lacks, then relabels it; alerts a
/// step drops are left out. Prometheus' `relabelAlerts`.
fn relabel_alerts(
    alerts: Vec<Notification>,
    external: &LabelSet,
    configs: &[RelabelConfig],
) -> Vec<Notification> {
    if external.is_empty() && configs.is_empty() {
        return alerts;
    }
    alerts
        .into_iter()
        .filter_map(|mut a| {
            for (name, value) in external {
                if a.labels.get(name).is_none_or(String::is_empty) {
                    a.labels.insert(name.clone(), value.clone());
                }
            }
            relabel::process(&mut a.labels, configs).then_some(a)
        })
        .collect()
}

/// The sending task: batches out of the queue until stopped.
async fn run(shared: Arc<Shared>) {
    // Each name's last addresses, kept when a look-up fails.
    let mut resolved: HashMap<String, Vec<String>> = HashMap::new();
    let config = Arc::clone(&shared.config.read());
    send::discover(&config.groups, &mut resolved, &shared.stats).await;
    loop {
        let stopping = shared.stopping.load(Ordering::SeqCst);
        let batch = {
            let mut queue = shared.queue.lock();
            if stopping && !shared.drain_on_shutdown {
                let left = queue.len();
                queue.next_batch(left);
                shared.stats.add_dropped(left);
                shared.stats.set_queue_length(0);
                return;
            }
            let batch = queue.next_batch(shared.max_batch_size);
            shared.stats.set_queue_length(queue.len());
            batch
        };
        if batch.is_empty() {
            if stopping {
                return;
            }
            shared.wake.notified().await;
            continue;
        }
        let config = Arc::clone(&shared.config.read());
        let groups = send::discover(&config.groups, &mut resolved, &shared.stats).await;
        if !send::send_all(&groups, &batch, &shared.stats).await {
            shared.stats.add_dropped(batch.len());
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
