//! promtool's `duplicate-rules` lint: two rules of one file that would
//! write the same series.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::RuleFile;

/// A rule name (`alert` or `record`) with the labels it adds (its group's
/// and its own, its own winning), found more than once in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DuplicateRule {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// The rules of `file`, over all its groups, that share their name and
/// labels with another; each such pair or more once, sorted.
pub fn duplicate_rules(file: &RuleFile) -> Vec<DuplicateRule> {
    let mut rules: Vec<DuplicateRule> = file
        .groups
        .iter()
        .flat_map(|group| {
            group.rules.iter().map(|rule| {
                let mut labels = group.labels.clone();
                labels.extend(rule.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
                DuplicateRule {
                    name: rule.name().unwrap_or_default().to_string(),
                    labels,
                }
            })
        })
        .collect();
    rules.sort();
    let mut duplicates: Vec<DuplicateRule> = Vec::new();
    for pair in rules.windows(2) {
        if let [a, b] = pair {
            if a == b && duplicates.last() != Some(b) {
                duplicates.push(b.clone());
            }
        }
    }
    duplicates
}

/// The lint's report as promtool prints it, without its `lint error`
/// prefix: a count, each rule with its labels, and a closing line.
pub fn render_duplicates(duplicates: &[DuplicateRule]) -> String {
    let mut out = format!("{} duplicate rule(s) found.\n", duplicates.len());
    for d in duplicates {
        let _ = writeln!(out, "Metric: {}\nLabel(s):", d.name);
        for (name, value) in &d.labels {
            let _ = writeln!(out, "\t{name}: {value}");
        }
    }
    out.push_str("Might cause inconsistency while recording expressions");
    out
}
