//! What a group's evaluation talks to: where samples are written, where
//! alerts go, who claims a group, and what every evaluation shares.

use std::sync::Arc;
use std::time::Duration;

use strata_codec::Label;
use strata_promql::Engine;

use super::GroupSpec;
use crate::alerting::LabelSet;

/// What a group's rules write their samples to.
#[async_trait::async_trait]
pub trait Sink: Send + Sync {
    /// Writes `samples` (labels sorted by name, `__name__` among them) and
    /// returns once queries read them.
    async fn write(&self, samples: Vec<(Vec<Label>, i64, f64)>) -> Result<(), String>;
}

/// An alert as it is sent to the Alertmanagers.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub labels: LabelSet,
    pub annotations: LabelSet,
    /// ms since the epoch.
    pub starts_at: i64,
    pub ends_at: i64,
    pub generator_url: String,
}

/// Where alerts go: the notifier's queue. Never blocks.
pub trait Notify: Send + Sync {
    fn send(&self, alerts: Vec<Notification>);
}

/// Who evaluates a group when several processes share the groups: asked
/// before each evaluation, it answers whether this process takes it.
#[async_trait::async_trait]
pub trait Claim: Send + Sync {
    /// Whether this process evaluates `group` at `ts` (ms since the epoch);
    /// false leaves the evaluation to another process.
    async fn claim(&self, group: &GroupSpec, ts: i64) -> bool;
}

/// What every group's evaluation shares.
pub struct Context {
    pub engine: Engine,
    pub sink: Arc<dyn Sink>,
    pub notify: Option<Arc<dyn Notify>>,
    pub external_labels: LabelSet,
    pub external_url: String,
    /// Prometheus' `--rules.alert.resend-delay` (1 minute).
    pub resend_delay: Duration,
    /// Prometheus' `--rules.alert.for-grace-period` (10 minutes).
    pub for_grace: Duration,
    /// Prometheus' `--rules.alert.for-outage-tolerance` (1 hour).
    pub outage_tolerance: Duration,
    /// Asked before each evaluation when several processes share the
    /// groups; `None`: this process evaluates every group.
    pub claim: Option<Arc<dyn Claim>>,
}
