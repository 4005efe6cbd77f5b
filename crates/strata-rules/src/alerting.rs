//! An alerting rule's alerts and how they move: pending while the
//! expression holds for less than `for`, firing after, kept firing for
//! `keep_firing_for` after it stops holding, then resolved and kept 15
//! minutes to be sent as resolved. Prometheus' `rules/alerting.go`, step
//! for step, so that states, `activeAt` and the `ALERTS` and
//! `ALERTS_FOR_STATE` series are the same.

use std::collections::BTreeMap;
use std::time::Duration;

use rustc_hash::FxHashMap;

/// Labels as sorted pairs: an alert's identity.
pub type LabelSet = BTreeMap<String, String>;

/// How long a resolved alert is kept to be sent as resolved.
pub const RESOLVED_RETENTION_MS: i64 = 15 * 60 * 1000;

/// An alert's state, as Prometheus names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertState {
    Inactive,
    Pending,
    Firing,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inactive => "inactive",
            Self::Pending => "pending",
            Self::Firing => "firing",
        }
    }
}

/// One alert of a rule: one label set of its expression's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Alert {
    pub state: AlertState,
    /// The result's labels, the rule's and the group's, and `alertname`.
    pub labels: LabelSet,
    pub annotations: LabelSet,
    /// The expression's value at the last evaluation it held.
    pub value: f64,
    /// When it became pending (ms).
    pub active_at: i64,
    /// When it fired (ms); 0 before.
    pub fired_at: i64,
    /// When it was resolved (ms); 0 while active.
    pub resolved_at: i64,
    /// When it was last sent to the Alertmanagers (ms); 0 never.
    pub last_sent_at: i64,
    /// Until when the last send holds it firing (ms), without a resend.
    pub valid_until: i64,
    /// When the expression stopped holding while it kept firing (ms); 0
    /// otherwise.
    pub keep_firing_since: i64,
}

impl Alert {
    /// Whether it is to be sent at `ts`: not while pending; once it is
    /// resolved since the last send; else every `resend_delay`.
    pub fn needs_sending(&self, ts: i64, resend_delay: Duration) -> bool {
        if self.state == AlertState::Pending {
            return false;
        }
        if self.last_sent_at == 0 || self.resolved_at > self.last_sent_at {
            return true;
        }
        self.last_sent_at + ms(resend_delay) < ts
    }
}

pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// What an alerting rule's evaluation found: one result sample, its
/// labels and annotations already expanded.
#[derive(Clone, Debug)]
pub struct Found {
    pub labels: LabelSet,
    pub annotations: LabelSet,
    pub value: f64,
}

/// The alerts of one rule, by label set.
#[derive(Debug, Default)]
pub struct AlertSet {
    active: FxHashMap<LabelSet, Alert>,
}

/// Why an evaluation failed after its query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlertError {
    #[error("vector contains metrics with the same labelset after applying alert labels")]
    DuplicateLabels,
    #[error("exceeded limit of {limit} with {count} alerts")]
    OverLimit { limit: usize, count: usize },
}

impl AlertSet {
    /// Moves the alerts on at `ts` given what the expression found:
    /// Prometheus' `AlertingRule.Eval` after its query.
    pub fn step(
        &mut self,
        ts: i64,
        found: Vec<Found>,
        hold: Duration,
        keep_firing_for: Duration,
        limit: usize,
    ) -> Result<(), AlertError> {
        let mut seen: rustc_hash::FxHashSet<LabelSet> = Default::default();
        for f in &found {
            if !seen.insert(f.labels.clone()) {
                return Err(AlertError::DuplicateLabels);
            }
        }
        for f in found {
            match self.active.get_mut(&f.labels) {
                Some(a) if a.state != AlertState::Inactive => {
                    a.value = f.value;
                    a.annotations = f.annotations;
                }
                _ => {
                    self.active.insert(
                        f.labels.clone(),
                        Alert {
                            state: AlertState::Pending,
                            labels: f.labels,
                            annotations: f.annotations,
                            value: f.value,
                            active_at: ts,
                            fired_at: 0,
                            resolved_at: 0,
                            last_sent_at: 0,
                            valid_until: 0,
                            keep_firing_since: 0,
                        },
                    );
                }
            }
        }
        let mut active_count = 0;
        let mut gone = Vec::new();
        for (key, a) in self.active.iter_mut() {
            if !seen.contains(key) {
                let mut keep_firing = false;
                if a.state == AlertState::Firing && !keep_firing_for.is_zero() {
                    if a.keep_firing_since == 0 {
                        a.keep_firing_since = ts;
                    }
                    if ts - a.keep_firing_since < ms(keep_firing_for) {
                        keep_firing = true;
                    }
                }
                // A resolved alert is kept a while, to be sent as resolved.
                if a.state == AlertState::Pending
                    || (a.resolved_at != 0 && ts - a.resolved_at > RESOLVED_RETENTION_MS)
                {
                    gone.push(key.clone());
                }
                if a.state != AlertState::Inactive && !keep_firing {
                    a.state = AlertState::Inactive;
                    a.resolved_at = ts;
                }
                if !keep_firing {
                    continue;
                }
            } else {
                a.keep_firing_since = 0;
            }
            active_count += 1;
            if a.state == AlertState::Pending && ts - a.active_at >= ms(hold) {
                a.state = AlertState::Firing;
                a.fired_at = ts;
            }
        }
        for key in gone {
            self.active.remove(&key);
        }
        if limit > 0 && active_count > limit {
            self.active.clear();
            return Err(AlertError::OverLimit {
                limit,
                count: active_count,
            });
        }
        Ok(())
    }

    /// Every alert kept: pending, firing, and resolved ones still to be
    /// sent as resolved.
    pub fn all(&self) -> impl Iterator<Item = &Alert> {
        self.active.values()
    }

    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut Alert> {
        self.active.values_mut()
    }

    /// Pending and firing alerts, sorted by labels.
    pub fn active(&self) -> Vec<&Alert> {
        let mut v: Vec<&Alert> = self
            .active
            .values()
            .filter(|a| a.state != AlertState::Inactive)
            .collect();
        v.sort_by(|a, b| a.labels.cmp(&b.labels));
        v
    }

    /// The rule's state: firing if any alert fires, else pending if any
    /// is pending.
    pub fn state(&self) -> AlertState {
        let mut state = AlertState::Inactive;
        for a in self.active.values() {
            match a.state {
                AlertState::Firing => return AlertState::Firing,
                AlertState::Pending => state = AlertState::Pending,
                AlertState::Inactive => {}
            }
        }
        state
    }

    /// Gives restored `activeAt` times to the alerts of the same labels
    /// (Prometheus 3's `RestoreForState`): `restored` maps each alert's
    /// labels to its `activeAt` and the time of the last evaluation before
    /// the restart, as `ALERTS_FOR_STATE` last showed them (ms, whole
    /// seconds). An alert that was firing keeps its `activeAt` and fires
    /// again at the next evaluation; a pending one with a `for` shorter than
    /// the grace period starts its `for` over; one with less than the grace
    /// period of its `for` left fires the grace period after the restore;
    /// one with more counts the time down as pending.
    pub fn restore(&mut self, restored: &BTreeMap<LabelSet, (i64, i64)>, restart: Restart) {
        let hold = ms(restart.hold);
        let grace = ms(restart.for_grace);
        for (labels, a) in self.active.iter_mut() {
            let Some(&(was_active_at, down_at)) = restored.get(labels) else {
                continue;
            };
            let remaining = hold - (down_at - was_active_at);
            a.active_at = if remaining <= 0 {
                was_active_at
            } else if hold < grace {
                continue;
            } else if remaining < grace {
                restart.now + grace - hold
            } else {
                was_active_at + (restart.now - down_at)
            };
        }
    }
}

/// What [`AlertSet::restore`] needs to know of the restart.
#[derive(Clone, Copy, Debug)]
pub struct Restart {
    /// When the state is restored: the end of the second evaluation after
    /// the restart (ms).
    pub now: i64,
    /// The rule's `for`.
    pub hold: Duration,
    /// The least time an alert waits to fire after a restart
    /// (Prometheus' `--rules.alert.for-grace-period`, 10 minutes).
    pub for_grace: Duration,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn found(instance: &str, v: f64) -> Found {
        Found {
            labels: [("alertname", "Down"), ("instance", instance)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            annotations: LabelSet::new(),
            value: v,
        }
    }

    const MIN: i64 = 60_000;

    #[test]
    fn pending_then_firing_then_resolved_then_gone() {
        let mut s = AlertSet::default();
        let hold = Duration::from_secs(120);
        let none = Duration::ZERO;
        s.step(0, vec![found("a", 1.0)], hold, none, 0).unwrap();
        assert_eq!(s.state(), AlertState::Pending);
        s.step(MIN, vec![found("a", 2.0)], hold, none, 0).unwrap();
        assert_eq!(s.state(), AlertState::Pending);
        s.step(2 * MIN, vec![found("a", 3.0)], hold, none, 0)
            .unwrap();
        assert_eq!(s.state(), AlertState::Firing);
        let a = s.active()[0].clone();
        assert_eq!((a.active_at, a.fired_at, a.value), (0, 2 * MIN, 3.0));
        // Gone: resolved, kept for 15 minutes, then dropped.
        s.step(3 * MIN, vec![], hold, none, 0).unwrap();
        assert_eq!(s.state(), AlertState::Inactive);
        assert_eq!(s.all().next().unwrap().resolved_at, 3 * MIN);
        s.step(18 * MIN, vec![], hold, none, 0).unwrap();
        assert_eq!(s.all().count(), 1);
        s.step(18 * MIN + 1, vec![], hold, none, 0).unwrap();
        assert_eq!(s.all().count(), 0);
    }

    #[test]
    fn a_pending_alert_that_stops_holding_is_dropped_at_once() {
        let mut s = AlertSet::default();
        let hold = Duration::from_secs(600);
        s.step(0, vec![found("a", 1.0)], hold, Duration::ZERO, 0)
            .unwrap();
        s.step(MIN, vec![], hold, Duration::ZERO, 0).unwrap();
        assert_eq!(s.all().count(), 0);
        // Back: pending from now.
        s.step(2 * MIN, vec![found("a", 1.0)], hold, Duration::ZERO, 0)
            .unwrap();
        assert_eq!(s.active()[0].active_at, 2 * MIN);
    }

    #[test]
    fn keep_firing_for_holds_a_firing_alert() {
        let mut s = AlertSet::default();
        let keep = Duration::from_secs(120);
        s.step(0, vec![found("a", 1.0)], Duration::ZERO, keep, 0)
            .unwrap();
        assert_eq!(s.state(), AlertState::Firing);
        s.step(MIN, vec![], Duration::ZERO, keep, 0).unwrap();
        assert_eq!(s.state(), AlertState::Firing);
        assert_eq!(s.active()[0].keep_firing_since, MIN);
        s.step(2 * MIN, vec![], Duration::ZERO, keep, 0).unwrap();
        assert_eq!(s.state(), AlertState::Firing);
        s.step(3 * MIN, vec![], Duration::ZERO, keep, 0).unwrap();
        assert_eq!(s.state(), AlertState::Inactive);
    }

    #[test]
    fn duplicate_label_sets_and_the_limit_fail_the_evaluation() {
        let mut s = AlertSet::default();
        let z = Duration::ZERO;
        assert_eq!(
            s.step(0, vec![found("a", 1.0), found("a", 2.0)], z, z, 0),
            Err(AlertError::DuplicateLabels)
        );
        assert_eq!(
            s.step(0, vec![found("a", 1.0), found("b", 2.0)], z, z, 1),
            Err(AlertError::OverLimit { limit: 1, count: 2 })
        );
        assert_eq!(s.all().count(), 0);
    }

    #[test]
    fn resolved_alerts_are_sent_once_then_every_resend_delay() {
        let mut s = AlertSet::default();
        let z = Duration::ZERO;
        let resend = Duration::from_secs(60);
        let t0 = 10 * MIN;
        s.step(t0, vec![found("a", 1.0)], z, z, 0).unwrap();
        let a = s.all_mut().next().unwrap();
        // Never sent: due at once.
        assert!(a.needs_sending(t0, resend));
        a.last_sent_at = t0;
        assert!(!a.needs_sending(t0 + 30_000, resend));
        assert!(a.needs_sending(t0 + MIN + 1, resend));
        s.step(t0 + 2 * MIN, vec![], z, z, 0).unwrap();
        let a = s.all().next().unwrap();
        assert!(a.needs_sending(t0 + 2 * MIN, resend));
    }

    #[test]
    fn restored_alerts_keep_their_active_at() {
        let mut s = AlertSet::default();
        let hold = Duration::from_secs(3600);
        let grace = Duration::from_secs(600);
        let restart = Restart {
            now: 100 * MIN,
            hold,
            for_grace: grace,
        };
        let labels = |i: &str| found(i, 1.0).labels;
        let all = ["long", "short", "fired"].map(|i| found(i, 1.0)).to_vec();
        s.step(100 * MIN, all, hold, Duration::ZERO, 0).unwrap();
        let restored: BTreeMap<LabelSet, (i64, i64)> = [
            // Pending 10 minutes when it went down at 90: 50 left, the 10
            // down count as pending.
            (labels("long"), (80 * MIN, 90 * MIN)),
            // Pending 55 minutes: 5 left, under the grace: fires 10
            // minutes after the restart.
            (labels("short"), (35 * MIN, 90 * MIN)),
            // Firing when it went down: keeps its activeAt.
            (labels("fired"), (10 * MIN, 90 * MIN)),
        ]
        .into();
        s.restore(&restored, restart);
        let at = |i: &str| s.all().find(|a| a.labels == labels(i)).unwrap().active_at;
        assert_eq!(at("long"), 90 * MIN);
        assert_eq!(at("short"), 50 * MIN);
        assert_eq!(at("fired"), 10 * MIN);
    }

    #[test]
    fn a_for_shorter_than_the_grace_restarts_unless_it_fired() {
        let mut s = AlertSet::default();
        let hold = Duration::from_secs(300);
        let restart = Restart {
            now: 100 * MIN,
            hold,
            for_grace: Duration::from_secs(600),
        };
        let labels = |i: &str| found(i, 1.0).labels;
        let all = ["pending", "fired"].map(|i| found(i, 1.0)).to_vec();
        s.step(99 * MIN, all, hold, Duration::ZERO, 0).unwrap();
        let restored: BTreeMap<LabelSet, (i64, i64)> = [
            // Pending 2 of its 5 minutes: starts over.
            (labels("pending"), (88 * MIN, 90 * MIN)),
            // Firing: keeps its activeAt, though its `for` is short.
            (labels("fired"), (80 * MIN, 90 * MIN)),
        ]
        .into();
        s.restore(&restored, restart);
        let at = |i: &str| s.all().find(|a| a.labels == labels(i)).unwrap().active_at;
        assert_eq!(at("pending"), 99 * MIN);
        assert_eq!(at("fired"), 80 * MIN);
    }
}
