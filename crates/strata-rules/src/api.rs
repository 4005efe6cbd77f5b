//! `/api/v1/rules` and `/api/v1/alerts` as Prometheus answers them: the
//! same fields, names, order and formats (times as Go's RFC 3339 with
//! nanoseconds, values as Go's `%e`), so Grafana, `promtool` and scripts
//! written for Prometheus read them unchanged.

use serde_json::{json, Map, Value};
use strata_codec::Matcher;

use crate::alerting::{Alert, AlertState, LabelSet};
use crate::group::{Group, RuleSpec, RuleState};

/// Which rules a `/api/v1/rules` request asks for.
#[derive(Clone, Debug, Default)]
pub struct RuleFilter {
    /// `type`: "alert" or "record"; none: both.
    pub kind: Option<RuleKind>,
    pub rule_names: Vec<String>,
    pub group_names: Vec<String>,
    pub files: Vec<String>,
    /// `match[]`: rules whose labels match any of these selectors.
    pub matchers: Vec<Vec<Matcher>>,
    /// `exclude_alerts`: the rules without their alerts.
    pub exclude_alerts: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    Alerting,
    Recording,
}

impl RuleFilter {
    fn keeps(&self, group: &Group, rule: &RuleSpec) -> bool {
        let kind_ok = matches!(
            (self.kind, rule),
            (None, _)
                | (Some(RuleKind::Alerting), RuleSpec::Alerting { .. })
                | (Some(RuleKind::Recording), RuleSpec::Recording { .. })
        );
        let in_list = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        let matched = self.matchers.is_empty()
            || self.matchers.iter().any(|set| {
                set.iter().all(|m| {
                    let v = rule.labels().get(&m.name).map(String::as_str);
                    m.matches(v.unwrap_or(""))
                })
            });
        kind_ok
            && in_list(&self.rule_names, rule.name())
            && in_list(&self.group_names, &group.spec.name)
            && in_list(&self.files, &group.spec.file)
            && matched
    }
}

/// A time in ms as Go's `time.Time` marshals it in UTC: RFC 3339 with the
/// fraction's trailing zeros cut; the zero time for 0.
pub fn go_time(t_ms: i64) -> String {
    if t_ms == 0 {
        return "0001-01-01T00:00:00Z".into();
    }
    let Some(t) = chrono::DateTime::from_timestamp_millis(t_ms) else {
        return "0001-01-01T00:00:00Z".into();
    };
    let mut s = t.format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s.push('Z');
    s
}

/// A value as Go's `strconv.FormatFloat(v, 'e', -1, 64)` writes it.
pub fn go_e(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{v:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// A float as Go's `encoding/json` writes a `float64`: a whole number
/// without a fraction (`1`, not `1.0`).
pub fn go_number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

fn labels_json(l: &LabelSet) -> Value {
    Value::Object(
        l.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// An alert as both APIs list it.
fn alert_json(a: &Alert) -> Value {
    let mut m = Map::new();
    m.insert("labels".into(), labels_json(&a.labels));
    m.insert("annotations".into(), labels_json(&a.annotations));
    m.insert("state".into(), a.state.as_str().into());
    m.insert("activeAt".into(), go_time(a.active_at).into());
    if a.keep_firing_since != 0 {
        m.insert(
            "keepFiringSince".into(),
            go_time(a.keep_firing_since).into(),
        );
    }
    m.insert("value".into(), go_e(a.value).into());
    Value::Object(m)
}

/// The expression as Prometheus prints a parsed one: one line, without
/// comments.
pub fn query_string(expr: &str) -> String {
    promql_parser::parser::parse(expr)
        .map(|e| e.to_string())
        .unwrap_or_else(|_| expr.to_owned())
}

fn rule_json(r: &RuleState, exclude_alerts: bool) -> Value {
    let mut m = Map::new();
    match &r.spec {
        RuleSpec::Alerting {
            alert,
            expr,
            hold,
            keep_firing_for,
            labels,
            annotations,
        } => {
            m.insert("state".into(), r.state().as_str().into());
            m.insert("name".into(), alert.clone().into());
            m.insert("query".into(), query_string(expr).into());
            m.insert("duration".into(), go_number(hold.as_secs_f64()));
            m.insert(
                "keepFiringFor".into(),
                go_number(keep_firing_for.as_secs_f64()),
            );
            m.insert("labels".into(), labels_json(labels));
            m.insert("annotations".into(), labels_json(annotations));
            // Without its alerts, a rule's `alerts` is null, as Prometheus
            // writes a nil list.
            let alerts = if exclude_alerts {
                Value::Null
            } else {
                Value::Array(r.alerts.active().into_iter().map(alert_json).collect())
            };
            m.insert("alerts".into(), alerts);
            push_health(&mut m, r);
            m.insert("type".into(), "alerting".into());
        }
        RuleSpec::Recording {
            record,
            expr,
            labels,
        } => {
            m.insert("name".into(), record.clone().into());
            m.insert("query".into(), query_string(expr).into());
            // `{}` without labels: Prometheus 3's labels are never omitted.
            m.insert("labels".into(), labels_json(labels));
            push_health(&mut m, r);
            m.insert("type".into(), "recording".into());
        }
    }
    Value::Object(m)
}

fn push_health(m: &mut Map<String, Value>, r: &RuleState) {
    m.insert("health".into(), r.health.as_str().into());
    if let Some(e) = &r.last_error {
        m.insert("lastError".into(), e.clone().into());
    }
    m.insert(
        "evaluationTime".into(),
        go_number(r.evaluation_time.as_secs_f64()),
    );
    m.insert("lastEvaluation".into(), go_time(r.last_evaluation).into());
}

/// The `data` of `/api/v1/rules`: the groups sorted by file, then name, as
/// Prometheus lists them; a group none of whose rules is asked for is left
/// out.
pub fn rules(groups: &[std::sync::Arc<Group>], filter: &RuleFilter) -> Value {
    let mut sorted: Vec<&std::sync::Arc<Group>> = groups.iter().collect();
    sorted.sort_by(|a, b| (&a.spec.file, &a.spec.name).cmp(&(&b.spec.file, &b.spec.name)));
    let mut out = Vec::new();
    for g in sorted {
        if !filter.group_names.is_empty() && !filter.group_names.contains(&g.spec.name) {
            continue;
        }
        if !filter.files.is_empty() && !filter.files.contains(&g.spec.file) {
            continue;
        }
        let rules: Vec<Value> = g
            .rules
            .lock()
            .iter()
            .filter(|r| filter.keeps(g, &r.spec))
            .map(|r| rule_json(r, filter.exclude_alerts))
            .collect();
        if rules.is_empty() {
            continue;
        }
        let st = g.stats.lock().clone();
        out.push(json!({
            "name": g.spec.name,
            "file": g.spec.file,
            "rules": rules,
            "interval": go_number(g.spec.interval.as_secs_f64()),
            "limit": g.spec.limit,
            "evaluationTime": go_number(st.evaluation_time.as_secs_f64()),
            "lastEvaluation": go_time(st.last_evaluation),
        }));
    }
    json!({ "groups": out })
}

/// The `data` of `/api/v1/alerts`: every pending and firing alert.
pub fn alerts(groups: &[std::sync::Arc<Group>]) -> Value {
    let mut out = Vec::new();
    for g in groups {
        for r in g.rules.lock().iter() {
            for a in r.alerts.active() {
                if a.state != AlertState::Inactive {
                    out.push(alert_json(a));
                }
            }
        }
    }
    json!({ "alerts": out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_values_as_go_writes_them() {
        assert_eq!(go_time(0), "0001-01-01T00:00:00Z");
        assert_eq!(go_time(1_530_728_832_606), "2018-07-04T18:27:12.606Z");
        assert_eq!(go_time(1_530_728_832_600), "2018-07-04T18:27:12.6Z");
        assert_eq!(go_time(1_530_728_832_000), "2018-07-04T18:27:12Z");
        assert_eq!(go_e(1.0), "1e+00");
        assert_eq!(go_e(0.0), "0e+00");
        assert_eq!(go_e(314.159), "3.14159e+02");
        assert_eq!(go_e(-0.00125), "-1.25e-03");
        assert_eq!(go_e(1e300), "1e+300");
        assert_eq!(go_e(f64::NAN), "NaN");
        assert_eq!(go_e(f64::NEG_INFINITY), "-Inf");
        assert_eq!(go_number(1.0).to_string(), "1");
        assert_eq!(go_number(0.0).to_string(), "0");
        assert_eq!(go_number(3600.0).to_string(), "3600");
        assert_eq!(go_number(0.5).to_string(), "0.5");
        assert_eq!(go_number(0.000123).to_string(), "0.000123");
    }

    #[test]
    fn alert_links_are_to_the_printed_expression() {
        let expr = "# Without max_over_time, reloads are missed.\nmax_over_time(x{job=\"p\"}[5m])\n  == 1\n";
        assert_eq!(query_string(expr), "max_over_time(x{job=\"p\"}[5m]) == 1");
        assert_eq!(
            crate::group::generator_url("http://h:9090/prom", &query_string(expr)),
            "http://h:9090/prom/graph?g0.expr=max_over_time%28x%7Bjob%3D%22p%22%7D%5B5m%5D%29+%3D%3D+1&g0.tab=1"
        );
    }
}
