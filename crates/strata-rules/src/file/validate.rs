//! The checks Prometheus' `rulefmt` makes on a decoded rule file, in its
//! order, with its messages.

use std::collections::HashSet;

use super::expr::parse_expr;
use super::positions::{FilePositions, RulePositions};
use super::{NameValidation, Position, Problem, Rule, RuleFault, RuleFile, RuleProblem};

/// Everything wrong with `file`, in file order.
pub(crate) fn check(
    file: &RuleFile,
    positions: &FilePositions,
    names: NameValidation,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (j, group) in file.groups.iter().enumerate() {
        let rule_positions = positions.groups.get(j).map(|g| g.rules.as_slice());
        if group.name.is_empty() {
            problems.push(Problem::EmptyGroupName { at: group.position });
        }
        if !seen.insert(group.name.as_str()) {
            problems.push(Problem::RepeatedGroup {
                name: group.name.clone(),
                at: group.position,
            });
        }
        for name in group.labels.keys() {
            if !label_name_ok(name, names) {
                problems.push(Problem::GroupLabelName {
                    group: group.name.clone(),
                    name: name.clone(),
                });
            }
        }
        for (i, rule) in group.rules.iter().enumerate() {
            let name = rule.alert.as_ref().or(rule.record.as_ref());
            let at = rule_positions
                .and_then(|rules| rules.get(i))
                .copied()
                .unwrap_or_default();
            problems.extend(
                rule_faults(rule, &at, names)
                    .into_iter()
                    .map(|(fault, at)| {
                        Problem::Rule(Box::new(RuleProblem {
                            group: group.name.clone(),
                            rule: i + 1,
                            name: name.cloned().unwrap_or_default(),
                            at,
                            fault,
                        }))
                    }),
            );
        }
    }
    problems
}

type Located = (RuleFault, Vec<Position>);

fn rule_faults(rule: &Rule, at: &RulePositions, names: NameValidation) -> Vec<Located> {
    // Where a field is missing altogether Prometheus says `0:0`; the
    // rule's own start says more.
    let or_rule = |found: Vec<Position>| {
        if found.is_empty() {
            at.at.into_iter().collect()
        } else {
            found
        }
    };
    let record_at: Vec<_> = at.record.into_iter().collect();
    let record_and_alert = || or_rule(at.record.into_iter().chain(at.alert).collect());
    let mut faults: Vec<Located> = Vec::new();
    match (&rule.record, &rule.alert) {
        (Some(_), Some(_)) => faults.push((RuleFault::RecordAndAlert, record_and_alert())),
        (None, None) => faults.push((RuleFault::NoRecordOrAlert, record_and_alert())),
        _ => {}
    }
    if rule.expr.is_empty() {
        faults.push((RuleFault::NoExpr, or_rule(at.expr.into_iter().collect())));
    } else if let Err(e) = parse_expr(&rule.expr) {
        faults.push((RuleFault::Expr(e), at.expr.into_iter().collect()));
    }
    if let Some(record) = &rule.record {
        if !rule.annotations.is_empty() {
            faults.push((RuleFault::AnnotationsInRecordingRule, record_at.clone()));
        }
        if rule.r#for.is_some() {
            faults.push((RuleFault::ForInRecordingRule, record_at.clone()));
        }
        if rule.keep_firing_for.is_some() {
            faults.push((RuleFault::KeepFiringForInRecordingRule, record_at.clone()));
        }
        if !metric_name_ok(record, names) {
            faults.push((RuleFault::RecordName(record.clone()), record_at.clone()));
        }
        // Valid UTF-8, but most likely a selector put where the name goes.
        if record.contains(['{', '}']) {
            faults.push((RuleFault::BracesInRecordName(record.clone()), record_at));
        }
    }
    for name in rule.labels.keys() {
        if !label_name_ok(name, names) {
            faults.push((RuleFault::LabelName(name.clone()), Vec::new()));
        }
    }
    for name in rule.annotations.keys() {
        if !names.label_name_ok(name) {
            faults.push((RuleFault::AnnotationName(name.clone()), Vec::new()));
        }
    }
    if let Some(alert) = &rule.alert {
        for (name, text) in &rule.labels {
            if let Err(error) = parse_template(alert, text) {
                let name = name.clone();
                faults.push((RuleFault::LabelTemplate { name, error }, Vec::new()));
            }
        }
        for (name, text) in &rule.annotations {
            if let Err(error) = parse_template(alert, text) {
                let name = name.clone();
                faults.push((RuleFault::AnnotationTemplate { name, error }, Vec::new()));
            }
        }
    }
    faults
}

/// A label name a rule or group may set: valid for the scheme, and not
/// `__name__` (the name of what a rule records is its `record`).
fn label_name_ok(name: &str, names: NameValidation) -> bool {
    names.label_name_ok(name) && name != "__name__"
}

fn metric_name_ok(name: &str, names: NameValidation) -> bool {
    match names {
        NameValidation::Utf8 => !name.is_empty(),
        NameValidation::Legacy => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        }
    }
}

impl NameValidation {
    fn label_name_ok(self, name: &str) -> bool {
        match self {
            NameValidation::Utf8 => !name.is_empty(),
            NameValidation::Legacy => {
                let mut chars = name.chars();
                chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
        }
    }
}

/// Parses an alerting rule's label or annotation as a template, with what
/// Prometheus defines ahead of it (`$labels`, `$value`, ...). Prometheus
/// names the template after the alert: so do its messages here.
fn parse_template(alert: &str, text: &str) -> Result<(), String> {
    let preamble = crate::template::PREAMBLE;
    crate::template::check(&format!("{preamble}{text}")).map_err(|e| {
        match e.strip_prefix("template: __alert:") {
            Some(rest) => format!("template: __alert_{alert}:{rest}"),
            None => e,
        }
    })
}
