//! An alerting rule's evaluation: its alerts moved on, sent when due, and
//! its `ALERTS` and `ALERTS_FOR_STATE` samples; the templates of their
//! labels and annotations, and the link Prometheus puts in an alert.

use strata_codec::Label;
use strata_promql::{Engine, QueryValue};

use super::{seconds, sorted, Context, Group, Notification, RuleSpec};
use crate::alerting::{ms, AlertError, Found, LabelSet};
use crate::template::{self, TemplateData};

impl Group {
    /// Moves an alerting rule's alerts on at `ts`, sends those due, and
    /// answers its `ALERTS` and `ALERTS_FOR_STATE` samples.
    pub(super) async fn alert(
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
