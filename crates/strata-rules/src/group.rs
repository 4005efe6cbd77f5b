//! A rule group and one evaluation of it: its rules in order at one
//! timestamp, each rule's output written before the next rule runs (so a
//! rule sees what the rules before it wrote), series that left an output
//! ended with a stale marker, alerts moved on and sent. Prometheus'
//! `rules/group.go` `Eval`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use strata_codec::{Label, MatchOp, Matcher};
use strata_promql::{Engine, QueryValue};

use crate::alerting::{ms, AlertError, AlertSet, AlertState, Found, LabelSet, Restart};
use crate::template::{self, TemplateData};

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
    written: FxHashSet<Vec<Label>>,
    /// Whether the `for` state was restored after a start: until it is, the
    /// rule writes no `ALERTS` or `ALERTS_FOR_STATE`, as Prometheus'.
    restored: bool,
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

/// A group: its rules and their state.
pub struct Group {
    pub spec: GroupSpec,
    pub rules: Mutex<Vec<RuleState>>,
    pub stats: Mutex<GroupStats>,
    /// Serialises evaluations (a reload's first one and the scheduler's).
    running: tokio::sync::Mutex<()>,
    /// Evaluations left before the alerts' `for` state is restored from
    /// `ALERTS_FOR_STATE`; 0: restored, or not to be.
    restore_in: Mutex<u8>,
}

/// The value `ALERTS_FOR_STATE` gives an alert's `activeAt`: whole
/// seconds since the epoch, as Prometheus writes it.
fn seconds(t_ms: i64) -> f64 {
    t_ms.div_euclid(1000) as f64
}

fn sorted(labels: LabelSet) -> Vec<Label> {
    labels.into_iter().map(|(n, v)| Label::new(n, v)).collect()
}

/// The stale marker Prometheus writes when a series leaves a rule's output.
const STALE_NAN: f64 = f64::from_bits(strata_promql::STALE_NAN_BITS);

/// After a start, the evaluations before the `for` state is restored:
/// Prometheus restores after the second, once recording rules the alerts
/// may read have written.
const RESTORE_AFTER: u8 = 2;

impl Group {
    pub fn new(spec: GroupSpec) -> Self {
        let rules = spec.rules.iter().cloned().map(RuleState::new).collect();
        Self {
            spec,
            rules: Mutex::new(rules),
            stats: Mutex::new(GroupStats::default()),
            running: tokio::sync::Mutex::new(()),
            restore_in: Mutex::new(RESTORE_AFTER),
        }
    }

    /// Starts the group restored: it writes `ALERTS` from its first
    /// evaluation and reads nothing back, as Prometheus does with a group a
    /// reload adds or changes.
    pub fn skip_restore(&self) {
        *self.restore_in.lock() = 0;
        for r in self.rules.lock().iter_mut() {
            r.restored = true;
        }
    }

    /// The group's key: file and name, as Prometheus keys groups.
    pub fn key(&self) -> (String, String) {
        (self.spec.file.clone(), self.spec.name.clone())
    }

    /// Takes over the state of `old`'s rules that are the same rule
    /// (name, expression and labels), as a reload does.
    pub fn take_state(&self, old: &Group) {
        let mut old_rules = old.rules.lock();
        let mut rules = self.rules.lock();
        for r in rules.iter_mut() {
            if let Some(o) = old_rules.iter_mut().find(|o| {
                o.spec.name() == r.spec.name()
                    && o.spec.expr() == r.spec.expr()
                    && o.spec.labels() == r.spec.labels()
            }) {
                r.health = o.health;
                r.last_error = o.last_error.take();
                r.last_evaluation = o.last_evaluation;
                r.evaluation_time = o.evaluation_time;
                r.alerts = std::mem::take(&mut o.alerts);
                r.written = std::mem::take(&mut o.written);
                r.restored = o.restored;
            }
        }
        *self.restore_in.lock() = *old.restore_in.lock();
        *self.stats.lock() = old.stats.lock().clone();
    }

    /// Forgets what the evaluations of this process left (alerts, series
    /// written, the restore), for a group another process evaluated in
    /// between: it restores the `for` state from `ALERTS_FOR_STATE` as
    /// after a restart.
    pub fn forget_state(&self) {
        for r in self.rules.lock().iter_mut() {
            r.alerts = AlertSet::default();
            r.written.clear();
            r.restored = false;
        }
        *self.restore_in.lock() = RESTORE_AFTER;
    }

    /// Evaluates every rule at `ts` (ms), in order.
    pub async fn eval(&self, ctx: &Context, ts: i64) {
        let _one = self.running.lock().await;
        let began = Instant::now();
        let count = self.rules.lock().len();
        let mut samples = 0;
        let mut failures = 0;
        let mut rule_time = Duration::ZERO;
        for i in 0..count {
            let Some(spec) = self.rules.lock().get(i).map(|r| r.spec.clone()) else {
                break;
            };
            let rule_began = Instant::now();
            let outcome = self.eval_rule(ctx, i, &spec, ts).await;
            let mut rules = self.rules.lock();
            let Some(r) = rules.get_mut(i) else { break };
            r.last_evaluation = ts;
            r.evaluation_time = rule_began.elapsed();
            rule_time += r.evaluation_time;
            match outcome {
                Ok(n) => {
                    samples += n;
                    r.health = Health::Ok;
                    r.last_error = None;
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!(group = %self.spec.name, rule = %spec.name(), error = %e, "rule evaluation failed");
                    r.health = Health::Err;
                    r.last_error = Some(e);
                }
            }
        }
        let restore_now = {
            let mut left = self.restore_in.lock();
            if *left == 0 {
                false
            } else {
                *left -= 1;
                *left == 0
            }
        };
        if restore_now {
            // At the time the evaluation ends, as Prometheus' clock reads it
            // then.
            let now = ts + ms(began.elapsed());
            self.restore_for_state(ctx, now).await;
        }
        let mut st = self.stats.lock();
        st.last_evaluation = ts;
        st.evaluation_time = began.elapsed();
        st.iterations += 1;
        st.evaluations += count as u64;
        st.evaluation_failures += failures;
        st.last_samples = samples;
        let took = st.evaluation_time;
        st.total_time += took;
        st.rule_time += rule_time;
    }

    /// Evaluates rule `i` and writes what it produced; the samples written.
    async fn eval_rule(
        &self,
        ctx: &Context,
        i: usize,
        spec: &RuleSpec,
        ts: i64,
    ) -> Result<usize, String> {
        let at = ts - ms(self.spec.query_offset);
        let result = ctx
            .engine
            .instant_query(spec.expr(), at, None)
            .await
            .map_err(|e| e.to_string())?;
        let vector = match result {
            QueryValue::Vector(v) => v
                .into_iter()
                .filter(|s| s.h.is_none())
                .map(|s| (s.labels.to_vec(), s.v))
                .collect::<Vec<_>>(),
            QueryValue::Scalar { v, .. } => vec![(Vec::new(), v)],
            other => {
                return Err(format!(
                    "rule result is not a vector or scalar: {}",
                    other.result_type()
                ))
            }
        };
        let out = match spec {
            RuleSpec::Recording { record, labels, .. } => {
                record_samples(record, labels, vector, self.spec.limit)?
            }
            RuleSpec::Alerting { .. } => self.alert(ctx, i, spec, ts, vector).await?,
        };
        // Series written last time and not now end with a stale marker.
        let now: FxHashSet<Vec<Label>> = out.iter().map(|(l, _)| l.clone()).collect();
        let ended: Vec<Vec<Label>> = {
            let mut rules = self.rules.lock();
            let Some(r) = rules.get_mut(i) else {
                return Ok(0);
            };
            let ended = r.written.difference(&now).cloned().collect();
            r.written = now;
            ended
        };
        let mut write: Vec<(Vec<Label>, i64, f64)> =
            out.into_iter().map(|(l, v)| (l, at, v)).collect();
        write.extend(ended.into_iter().map(|l| (l, at, STALE_NAN)));
        let n = write.len();
        if n > 0 {
            ctx.sink.write(write).await?;
        }
        Ok(n)
    }

    /// Moves an alerting rule's alerts on at `ts`, sends those due, and
    /// answers its `ALERTS` and `ALERTS_FOR_STATE` samples.
    async fn alert(
        &self,
        ctx: &Context,
        i: usize,
        spec: &RuleSpec,
        ts: i64,
        vector: Vec<(Vec<Label>, f64)>,
    ) -> Result<Vec<(Vec<Label>, f64)>, String> {
        let RuleSpec::Alerting {
            alert,
            expr,
            hold,
            keep_firing_for,
            labels,
            annotations,
        } = spec
        else {
            return Ok(Vec::new());
        };
        let mut found = Vec::with_capacity(vector.len());
        for (sample_labels, value) in vector {
            let data = TemplateData {
                labels: sample_labels
                    .iter()
                    .map(|l| (l.name.clone(), l.value.clone()))
                    .collect(),
                external_labels: ctx.external_labels.clone(),
                external_url: ctx.external_url.clone(),
                value,
            };
            let mut l: LabelSet = sample_labels
                .into_iter()
                .filter(|l| l.name != "__name__")
                .map(|l| (l.name, l.value))
                .collect();
            for (name, text) in labels {
                l.insert(
                    name.clone(),
                    expand(ctx, &format!("__alert_{alert}"), text, &data, ts).await,
                );
            }
            l.insert("alertname".into(), alert.clone());
            let mut a = LabelSet::new();
            for (name, text) in annotations {
                a.insert(
                    name.clone(),
                    expand(ctx, &format!("__alert_{alert}"), text, &data, ts).await,
                );
            }
            found.push(Found {
                labels: l,
                annotations: a,
                value,
            });
        }
        let mut notifications = Vec::new();
        let out = {
            let mut rules = self.rules.lock();
            let Some(r) = rules.get_mut(i) else {
                return Ok(Vec::new());
            };
            let stepped = r
                .alerts
                .step(ts, found, *hold, *keep_firing_for, self.spec.limit);
            if let Err(e) = stepped {
                return Err(match e {
                    AlertError::OverLimit { .. } | AlertError::DuplicateLabels => e.to_string(),
                });
            }
            let delta = ms(ctx.resend_delay.max(self.spec.interval));
            // The link is to the expression as Prometheus prints it.
            let mut link = None;
            for a in r.alerts.all_mut() {
                if a.needs_sending(ts, ctx.resend_delay) {
                    a.last_sent_at = ts;
                    a.valid_until = ts + 4 * delta;
                    notifications.push(Notification {
                        labels: a.labels.clone(),
                        annotations: a.annotations.clone(),
                        starts_at: a.fired_at,
                        ends_at: if a.resolved_at != 0 {
                            a.resolved_at
                        } else {
                            a.valid_until
                        },
                        generator_url: link
                            .get_or_insert_with(|| {
                                generator_url(&ctx.external_url, &crate::api::query_string(expr))
                            })
                            .clone(),
                    });
                }
            }
            let mut out = Vec::new();
            // Nothing is written before the `for` state is restored.
            let active = if r.restored {
                r.alerts.active()
            } else {
                Vec::new()
            };
            for a in active {
                let mut with_state = a.labels.clone();
                with_state.insert("__name__".into(), "ALERTS".into());
                with_state.insert("alertstate".into(), a.state.as_str().into());
                out.push((sorted(with_state), 1.0));
                let mut for_state = a.labels.clone();
                for_state.insert("__name__".into(), "ALERTS_FOR_STATE".into());
                out.push((sorted(for_state), seconds(a.active_at)));
            }
            out
        };
        if let (Some(n), false) = (&ctx.notify, notifications.is_empty()) {
            n.send(notifications);
        }
        Ok(out)
    }

    /// Restores the `for` state of the alerting rules not restored yet,
    /// at `now` (ms), as Prometheus' `RestoreForState`: each rule's
    /// `ALERTS_FOR_STATE` series within the outage tolerance, matched by
    /// the rule's name and labels as written in the file (so a rule with
    /// templated labels finds none, as in Prometheus), gives each alert of
    /// the same labels the `activeAt` it last showed, unless its last
    /// sample is a stale marker. See [`crate::alerting::AlertSet::restore`].
    async fn restore_for_state(&self, ctx: &Context, now: i64) {
        let todo: Vec<(usize, String, Duration, LabelSet)> = self
            .rules
            .lock()
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.restored)
            .filter_map(|(i, r)| match &r.spec {
                RuleSpec::Alerting {
                    alert,
                    hold,
                    labels,
                    ..
                } => Some((i, alert.clone(), *hold, labels.clone())),
                RuleSpec::Recording { .. } => None,
            })
            .collect();
        let from = now - ms(ctx.outage_tolerance);
        for (i, alert, hold, labels) in todo {
            let mut matchers = vec![
                Matcher::new(MatchOp::Equal, "__name__", "ALERTS_FOR_STATE"),
                Matcher::new(MatchOp::Equal, "alertname", alert.as_str()),
            ];
            for (n, v) in labels
                .iter()
                .filter(|(n, v)| !v.is_empty() && *n != "alertname")
            {
                matchers.push(Matcher::new(MatchOp::Equal, n.as_str(), v.as_str()));
            }
            let matchers: Result<Vec<Matcher>, _> = matchers.into_iter().collect();
            let found = match matchers {
                Ok(m) => ctx.engine.source().select(&m, from, now).await,
                Err(e) => Err(strata_promql::SourceError::Internal(e.to_string())),
            };
            let mut last = std::collections::BTreeMap::new();
            match found {
                Ok(series) => {
                    for s in series {
                        let (Some(&t), Some(&v)) = (s.timestamps.last(), s.values.last()) else {
                            continue;
                        };
                        // Stale: the alert was not active.
                        if v.to_bits() == strata_promql::STALE_NAN_BITS {
                            continue;
                        }
                        let key: LabelSet = s
                            .labels
                            .iter()
                            .filter(|l| l.name != "__name__")
                            .map(|l| (l.name.clone(), l.value.clone()))
                            .collect();
                        // Whole seconds, as Prometheus reads them back.
                        last.insert(key, ((v as i64) * 1000, t.div_euclid(1000) * 1000));
                    }
                }
                Err(e) => {
                    tracing::warn!(group = %self.spec.name, rule = %alert, error = %e,
                        "'for' state not restored");
                }
            }
            let mut rules = self.rules.lock();
            let Some(r) = rules.get_mut(i) else { continue };
            r.alerts.restore(
                &last,
                Restart {
                    now,
                    hold,
                    for_grace: ctx.for_grace,
                },
            );
            r.restored = true;
        }
        for r in self.rules.lock().iter_mut() {
            r.restored = true;
        }
    }
}

/// A recording rule's output: each sample renamed and relabelled.
fn record_samples(
    record: &str,
    labels: &LabelSet,
    vector: Vec<(Vec<Label>, f64)>,
    limit: usize,
) -> Result<Vec<(Vec<Label>, f64)>, String> {
    let mut out = Vec::with_capacity(vector.len());
    let mut seen = FxHashSet::default();
    for (sample_labels, v) in vector {
        let mut l: LabelSet = sample_labels
            .into_iter()
            .map(|l| (l.name, l.value))
            .collect();
        l.insert("__name__".into(), record.to_owned());
        for (n, v) in labels {
            l.insert(n.clone(), v.clone());
        }
        let l = sorted(l);
        if !seen.insert(l.clone()) {
            return Err(
                "vector contains metrics with the same labelset after applying rule labels".into(),
            );
        }
        out.push((l, v));
    }
    if limit > 0 && out.len() > limit {
        return Err(format!(
            "exceeded limit of {limit} with {} series",
            out.len()
        ));
    }
    Ok(out)
}

/// Expands one label or annotation template; an error becomes the value,
/// as Prometheus does.
async fn expand(ctx: &Context, name: &str, text: &str, data: &TemplateData, ts: i64) -> String {
    if !text.contains("{{") {
        return text.to_owned();
    }
    let querier = BlockingQuery {
        engine: ctx.engine.clone(),
        handle: tokio::runtime::Handle::current(),
    };
    let (name, text, data) = (name.to_owned(), text.to_owned(), data.clone());
    // A template may run queries: it runs on a blocking thread that waits
    // for them.
    let expanded =
        tokio::task::spawn_blocking(move || template::expand(&name, &text, &data, ts, &querier))
            .await;
    match expanded {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => template::error_value(&e),
        Err(e) => format!("<error expanding template: {e}>"),
    }
}

/// The `query` template function, on a blocking thread.
struct BlockingQuery {
    engine: Engine,
    handle: tokio::runtime::Handle,
}

impl template::QueryFn for BlockingQuery {
    fn query(&self, q: &str, at_ms: i64) -> Result<Vec<template::QueryResultSample>, String> {
        let result = self
            .handle
            .block_on(self.engine.instant_query(q, at_ms, None))
            .map_err(|e| e.to_string())?;
        Ok(match result {
            QueryValue::Vector(v) => v
                .into_iter()
                .map(|s| template::QueryResultSample {
                    labels: s
                        .labels
                        .iter()
                        .map(|l| (l.name.clone(), l.value.clone()))
                        .collect(),
                    value: s.v,
                })
                .collect(),
            QueryValue::Scalar { v, .. } => vec![template::QueryResultSample {
                labels: Vec::new(),
                value: v,
            }],
            _ => return Err("query did not return a vector or a scalar".into()),
        })
    }
}

/// The link Prometheus puts in an alert: the expression (as Prometheus
/// prints it: [`crate::api::query_string`]) in its table view.
pub fn generator_url(external_url: &str, expr: &str) -> String {
    let mut q = String::new();
    for b in expr.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                q.push(b as char)
            }
            b' ' => q.push('+'),
            _ => q.push_str(&format!("%{b:02X}")),
        }
    }
    format!(
        "{}/graph?g0.expr={q}&g0.tab=1",
        external_url.trim_end_matches('/')
    )
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use strata_promql::{MemSource, QueryLimits};

    struct MemSink(Arc<MemSource>);

    #[async_trait::async_trait]
    impl Sink for MemSink {
        async fn write(&self, samples: Vec<(Vec<Label>, i64, f64)>) -> Result<(), String> {
            for (l, t, v) in samples {
                self.0.append(&l, t, v);
            }
            Ok(())
        }
    }

    fn alert(name: &str, expr: &str, secs: u64, labels: &[(&str, &str)]) -> RuleSpec {
        RuleSpec::Alerting {
            alert: name.into(),
            expr: expr.into(),
            hold: Duration::from_secs(secs),
            keep_firing_for: Duration::ZERO,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: LabelSet::new(),
        }
    }

    fn l(name: &str) -> Vec<Label> {
        vec![Label::new("__name__", name)]
    }

    const T0: i64 = 1_700_000_000_000;

    /// `ALERTS_FOR_STATE` of `alertname`: its samples' times and values.
    fn for_state(src: &MemSource, alertname: &str) -> Vec<(i64, f64)> {
        let m = [
            Matcher::new(MatchOp::Equal, "__name__", "ALERTS_FOR_STATE").unwrap(),
            Matcher::new(MatchOp::Equal, "alertname", alertname).unwrap(),
        ];
        let rt = tokio::runtime::Handle::current();
        let series = tokio::task::block_in_place(|| {
            rt.block_on(strata_promql::Queryable::select(src, &m, 0, i64::MAX))
        })
        .unwrap();
        series
            .iter()
            .flat_map(|s| s.timestamps.iter().copied().zip(s.values.iter().copied()))
            .collect()
    }

    fn active_at(g: &Group, alertname: &str) -> (i64, AlertState) {
        let rules = g.rules.lock();
        let r = rules.iter().find(|r| r.spec.name() == alertname).unwrap();
        let a = r.alerts.active()[0];
        (a.active_at, a.state)
    }

    /// Prometheus 3's restart: no `ALERTS` before the second evaluation,
    /// after which `activeAt` is read back from `ALERTS_FOR_STATE`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_for_state_is_restored_after_the_second_evaluation() {
        let src = Arc::new(MemSource::new());
        let ctx = Context {
            engine: Engine::new(src.clone(), QueryLimits::default()),
            sink: Arc::new(MemSink(src.clone())),
            notify: None,
            external_labels: LabelSet::new(),
            external_url: String::new(),
            resend_delay: Duration::from_secs(60),
            for_grace: Duration::from_secs(10),
            outage_tolerance: Duration::from_secs(3600),
            claim: None,
        };
        let spec = GroupSpec {
            name: "g".into(),
            file: "rules.yml".into(),
            interval: Duration::from_secs(1),
            query_offset: Duration::ZERO,
            limit: 0,
            rules: vec![
                // `for` past the grace period, pending when it stops.
                alert("Long", "vector(1)", 30, &[("severity", "page")]),
                // Firing when it stops, though its `for` is short.
                alert("Short", "vector(1)", 5, &[]),
                // Pending with a `for` shorter than the grace period.
                alert("Brief", "vector(1)", 8, &[]),
                // Templated labels match no series: never restored.
                alert("Templated", "vector(1)", 30, &[("x", "{{ \"y\" }}")]),
                // Resolved before the stop: a stale marker last.
                alert("Gone", "gone_source == 1", 30, &[]),
            ],
        };
        src.append(&l("gone_source"), T0 - 1000, 1.0);
        src.append(&l("gone_source"), T0 + 3500, 0.0);
        let g = Group::new(spec.clone());
        for k in 0..=6 {
            g.eval(&ctx, T0 + k * 1000).await;
        }
        // Written from the third evaluation on.
        let long = for_state(&src, "Long");
        assert_eq!(long.first(), Some(&(T0 + 2000, (T0 / 1000) as f64)));
        assert_eq!(long.last(), Some(&(T0 + 6000, (T0 / 1000) as f64)));
        assert_eq!(active_at(&g, "Short"), (T0, AlertState::Firing));
        let gone = for_state(&src, "Gone");
        assert!(gone.last().unwrap().1.is_nan(), "{gone:?}");

        // A restart 14 s later.
        let r = T0 + 20_000;
        src.append(&l("gone_source"), r - 500, 1.0);
        let g = Group::new(spec);
        g.eval(&ctx, r).await;
        g.eval(&ctx, r + 1000).await;
        assert_eq!(for_state(&src, "Long").last().unwrap().0, T0 + 6000);
        // Restored at the end of the second evaluation: the 6 s pending
        // before the stop count, the time down does not.
        let (long_at, state) = active_at(&g, "Long");
        assert_eq!(state, AlertState::Pending);
        let restored = r + 1000 - 6000;
        assert!(
            (restored..restored + 1000).contains(&long_at),
            "{long_at} vs {restored}"
        );
        assert_eq!(active_at(&g, "Short").0, T0);
        assert_eq!(active_at(&g, "Brief").0, r);
        assert_eq!(active_at(&g, "Templated").0, r);
        assert_eq!(active_at(&g, "Gone").0, r);
        g.eval(&ctx, r + 2000).await;
        assert_eq!(active_at(&g, "Short"), (T0, AlertState::Firing));
        assert_eq!(
            for_state(&src, "Long").last(),
            Some(&(r + 2000, (long_at / 1000) as f64))
        );
    }
}
