//! The rules' metrics, named after Prometheus' own (`prometheus_rule_*`
//! become `strata_rule_*`), each group labelled `rule_group="<file>;<name>"`
//! as Prometheus labels it (and a stored group `user="<tenant>"` too, as
//! Mimir's ruler does), so dashboards and alerts written for
//! Prometheus' rule evaluation read them with the prefix changed.

use std::fmt::Write as _;

use crate::rules::Rules;

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes the rules' metrics in the Prometheus text format.
pub fn render(rules: &Rules, out: &mut String) {
    let groups = rules.groups_here();
    let rows: Vec<(String, strata_rules::group::GroupStats, f64, usize)> = groups
        .iter()
        .map(|(tenant, g)| {
            let group = escape(&format!("{};{}", g.spec.file, g.spec.name));
            (
                match tenant {
                    // The bucket's groups are a tenant's: `user`, as Mimir
                    // labels them.
                    Some(t) => format!("rule_group=\"{group}\",user=\"{}\"", escape(t)),
                    None => format!("rule_group=\"{group}\""),
                },
                g.stats.lock().clone(),
                g.spec.interval.as_secs_f64(),
                g.spec.rules.len(),
            )
        })
        .collect();
    let family = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    type Row = (String, strata_rules::group::GroupStats, f64, usize);
    let each = |out: &mut String, name: &str, value: &dyn Fn(&Row) -> String| {
        for row in &rows {
            let _ = writeln!(out, "{name}{{{}}} {}", row.0, value(row));
        }
    };
    // Each per-group family: its name, type, help and value of a group.
    type Family = (&'static str, &'static str, &'static str, fn(&Row) -> String);
    let families: [Family; 9] = [
        (
            "strata_rule_group_interval_seconds",
            "gauge",
            "The interval of a rule group.",
            |r| r.2.to_string(),
        ),
        (
            "strata_rule_group_rules",
            "gauge",
            "The number of rules in a group.",
            |r| r.3.to_string(),
        ),
        (
            "strata_rule_group_last_duration_seconds",
            "gauge",
            "The duration of the last evaluation of a rule group.",
            |r| r.1.evaluation_time.as_secs_f64().to_string(),
        ),
        (
            "strata_rule_group_last_evaluation_timestamp_seconds",
            "gauge",
            "The timestamp of the last evaluation of a rule group (0 before the first).",
            |r| (r.1.last_evaluation as f64 / 1000.0).to_string(),
        ),
        (
            "strata_rule_group_last_evaluation_samples",
            "gauge",
            "The samples the last evaluation of a rule group wrote.",
            |r| r.1.last_samples.to_string(),
        ),
        (
            "strata_rule_group_iterations_total",
            "counter",
            "Evaluations of a rule group, run or missed.",
            |r| (r.1.iterations + r.1.iterations_missed).to_string(),
        ),
        (
            "strata_rule_group_iterations_missed_total",
            "counter",
            "Evaluations of a rule group missed because the one before was too slow or the process was stopped.",
            |r| r.1.iterations_missed.to_string(),
        ),
        (
            "strata_rule_evaluations_total",
            "counter",
            "Rule evaluations.",
            |r| r.1.evaluations.to_string(),
        ),
        (
            "strata_rule_evaluation_failures_total",
            "counter",
            "Rule evaluations that failed.",
            |r| r.1.evaluation_failures.to_string(),
        ),
    ];
    for (name, kind, help, value) in families {
        family(out, name, kind, help);
        each(out, name, &value);
    }
    let (mut group_sum, mut group_count, mut rule_sum, mut rule_count) = (0.0, 0, 0.0, 0);
    for r in &rows {
        group_sum += r.1.total_time.as_secs_f64();
        group_count += r.1.iterations;
        rule_sum += r.1.rule_time.as_secs_f64();
        rule_count += r.1.evaluations;
    }
    family(
        out,
        "strata_rule_group_duration_seconds",
        "summary",
        "The duration of rule group evaluations.",
    );
    let _ = writeln!(
        out,
        "strata_rule_group_duration_seconds_sum {group_sum}\nstrata_rule_group_duration_seconds_count {group_count}"
    );
    family(
        out,
        "strata_rule_evaluation_duration_seconds",
        "summary",
        "The duration of rule evaluations.",
    );
    let _ = writeln!(
        out,
        "strata_rule_evaluation_duration_seconds_sum {rule_sum}\nstrata_rule_evaluation_duration_seconds_count {rule_count}"
    );
    let st = rules.status.lock().clone();
    family(
        out,
        "strata_rules_config_last_reload_successful",
        "gauge",
        "Whether the last load of the rule files succeeded.",
    );
    let _ = writeln!(
        out,
        "strata_rules_config_last_reload_successful {}",
        u8::from(st.ok)
    );
    family(
        out,
        "strata_rules_config_last_reload_success_timestamp_seconds",
        "gauge",
        "When the rule files last loaded.",
    );
    let _ = writeln!(
        out,
        "strata_rules_config_last_reload_success_timestamp_seconds {}",
        if st.ok { st.at as f64 / 1000.0 } else { 0.0 }
    );
}
