//! A group and its rules as loaded, and what their evaluations leave.

use std::time::Duration;

use rustc_hash::FxHashSet;
use strata_codec::Label;

use crate::alerting::{AlertSet, AlertState, LabelSet};

/// A recording or alerting rule as loaded.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleSpec {
    Recording {
        record: String,
        expr: String,
        labels: LabelSet,
    },
    Alerting {
        alert: String,
        expr: String,
        hold: Duration,
        keep_firing_for: Duration,
        labels: LabelSet,
        annotations: LabelSet,
    },
}

impl RuleSpec {
    pub fn name(&self) -> &str {
        match self {
            Self::Recording { record, .. } => record,
            Self::Alerting { alert, .. } => alert,
        }
    }

    pub fn expr(&self) -> &str {
        match self {
            Self::Recording { expr, .. } | Self::Alerting { expr, .. } => expr,
        }
    }

    pub fn labels(&self) -> &LabelSet {
        match self {
            Self::Recording { labels, .. } | Self::Alerting { labels, .. } => labels,
        }
    }
}

/// A group as loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSpec {
    pub name: String,
    pub file: String,
    pub interval: Duration,
    pub query_offset: Duration,
    /// Most series a recording rule, or alerts an alerting rule, may have;
    /// 0: no limit.
    pub limit: usize,
    /// Rules of the group, group labels already merged into theirs.
    pub rules: Vec<RuleSpec>,
}

/// A rule's health after its last evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Unknown,
    Ok,
    Err,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Ok => "ok",
            Self::Err => "err",
        }
    }
}

/// A rule and what its evaluations left.
pub struct RuleState {
    pub spec: RuleSpec,
    pub health: Health,
    pub last_error: Option<String>,
    /// ms since the epoch; 0 never.
    pub last_evaluation: i64,
    pub evaluation_time: Duration,
    pub alerts: AlertSet,
    /// Label sets written at the last evaluation: those missing at the next
    /// get a stale marker.
    pub(super) written: FxHashSet<Vec<Label>>,
    /// Whether the `for` state was restored after a start: until it is, the
    /// rule writes no `ALERTS` or `ALERTS_FOR_STATE`, as Prometheus'.
    pub(super) restored: bool,
}

impl RuleState {
    pub fn new(spec: RuleSpec) -> Self {
        Self {
            spec,
            health: Health::Unknown,
            last_error: None,
            last_evaluation: 0,
            evaluation_time: Duration::ZERO,
            alerts: AlertSet::default(),
            written: FxHashSet::default(),
            restored: false,
        }
    }

    /// The rule's alert state: firing, pending or inactive.
    pub fn state(&self) -> AlertState {
        self.alerts.state()
    }
}

/// What a group's evaluations have done, for the API and `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct GroupStats {
    pub last_evaluation: i64,
    pub evaluation_time: Duration,
    pub iterations: u64,
    pub iterations_missed: u64,
    pub evaluations: u64,
    pub evaluation_failures: u64,
    /// Samples the last evaluation wrote.
    pub last_samples: usize,
    /// Time the group's evaluations took, in all.
    pub total_time: Duration,
    /// Time its rules' evaluations took, in all.
    pub rule_time: Duration,
}

impl GroupSpec {
    /// The group `g` of the rule file at `file` as it runs: its interval,
    /// else `default_interval`; its query offset, else `default_offset`;
    /// its labels under each rule's (a rule's own win).
    pub fn from_file(
        file: &str,
        g: &crate::file::RuleGroup,
        default_interval: Duration,
        default_offset: Duration,
    ) -> Self {
        let merged = |own: &LabelSet| {
            let mut l = g.labels.clone();
            l.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            l
        };
        let rules = g
            .rules
            .iter()
            .map(|r| match (&r.record, &r.alert) {
                (Some(record), _) => RuleSpec::Recording {
                    record: record.clone(),
                    expr: r.expr.clone(),
                    labels: merged(&r.labels),
                },
                (None, alert) => RuleSpec::Alerting {
                    alert: alert.clone().unwrap_or_default(),
                    expr: r.expr.clone(),
                    hold: r.r#for.unwrap_or_default(),
                    keep_firing_for: r.keep_firing_for.unwrap_or_default(),
                    labels: merged(&r.labels),
                    annotations: r.annotations.clone(),
                },
            })
            .collect();
        Self {
            name: g.name.clone(),
            file: file.to_owned(),
            interval: g
                .interval
                .filter(|d| !d.is_zero())
                .unwrap_or(default_interval),
            query_offset: g.query_offset.unwrap_or(default_offset),
            limit: g.limit,
            rules,
        }
    }
}
