//! A rule group and one evaluation of it: its rules in order at one
//! timestamp, each rule's output written before the next rule runs (so a
//! rule sees what the rules before it wrote), series that left an output
//! ended with a stale marker, alerts moved on and sent. Prometheus'
//! `rules/group.go` `Eval`.

mod alert;
mod context;
mod record;
mod restore;
mod spec;
#[cfg(test)]
mod tests;

pub use alert::generator_url;
pub use context::{Claim, Context, Notification, Notify, Sink};
pub use spec::{GroupSpec, GroupStats, Health, RuleSpec, RuleState};

use record::record_samples;

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use strata_codec::Label;
use strata_promql::QueryValue;

use crate::alerting::{ms, AlertSet, LabelSet};

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
}
