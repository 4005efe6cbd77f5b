//! The alerts' `for` state restored from `ALERTS_FOR_STATE` after a
//! start, as Prometheus' `RestoreForState`.

use std::time::Duration;

use strata_codec::{MatchOp, Matcher};

use super::{Context, Group, RuleSpec};
use crate::alerting::{ms, LabelSet, Restart};

impl Group {
    /// Restores the `for` state of the alerting rules not restored yet,
    /// at `now` (ms), as Prometheus' `RestoreForState`: each rule's
    /// `ALERTS_FOR_STATE` series within the outage tolerance, matched by
    /// the rule's name and labels as written in the file (so a rule with
    /// templated labels finds none, as in Prometheus), gives each alert of
    /// the same labels the `activeAt` it last showed, unless its last
    /// sample is a stale marker. See [`crate::alerting::AlertSet::restore`].
    pub(super) async fn restore_for_state(&self, ctx: &Context, now: i64) {
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
