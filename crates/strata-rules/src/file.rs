//! Rule files in Prometheus' format, read and checked as Prometheus 3
//! (`model/rulefmt`) reads and checks them.
//!
//! ```yaml
//! groups:
//!   - name: node
//!     interval: 1m
//!     rules:
//!       - record: instance:node_cpu_utilisation:rate5m
//!         expr: 1 - avg without (cpu) (rate(node_cpu_seconds_total{mode="idle"}[5m]))
//!       - alert: NodeDown
//!         expr: up{job="node"} == 0
//!         for: 5m
//!         labels: { severity: critical }
//!         annotations: { summary: "{{ $labels.instance }} is down" }
//! ```
//!
//! [`parse`] decodes strictly (an unknown key is an error, as with Go's
//! strict decoding) and then makes every check of `rulefmt`, returning all
//! problems at once, each worded as Prometheus words it.

mod decode;
mod duration;
mod expr;
mod lint;
mod positions;
mod problem;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use duration::{format_duration, parse_duration};
pub use lint::{duplicate_rules, render_duplicates, DuplicateRule};
pub use problem::{Position, Problem, RuleFault, RuleProblem};

/// A rule file: groups of rules, each group evaluated on its own.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default, deserialize_with = "decode::list")]
    pub groups: Vec<RuleGroup>,
}

/// Rules evaluated one after the other at one interval.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleGroup {
    #[serde(default, deserialize_with = "decode::text")]
    pub name: String,
    /// How often the group runs; `None` (also for `0s`) for the global
    /// evaluation interval.
    #[serde(default, deserialize_with = "duration::nonzero")]
    pub interval: Option<Duration>,
    /// How far back the group evaluates; `None` for the global setting,
    /// `Some(0)` to override that with none.
    #[serde(default, deserialize_with = "duration::optional")]
    pub query_offset: Option<Duration>,
    /// Most series an evaluation of one rule may give (alerts, for an
    /// alerting rule); 0 for no limit.
    #[serde(default, deserialize_with = "decode::limit")]
    pub limit: usize,
    /// Labels added to every rule's output; a rule's own labels win.
    #[serde(default, deserialize_with = "decode::text_map")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "decode::list")]
    pub rules: Vec<Rule>,
    /// Where the group starts in its file, when known.
    #[serde(skip)]
    pub position: Option<Position>,
}

/// A recording rule (`record`) or an alerting rule (`alert`). A rule that
/// passed [`parse`] has exactly one of the two.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The metric name a recording rule writes; `None` when empty.
    #[serde(default, deserialize_with = "decode::optional_text")]
    pub record: Option<String>,
    /// An alerting rule's name; `None` when empty.
    #[serde(default, deserialize_with = "decode::optional_text")]
    pub alert: Option<String>,
    /// The PromQL expression, as written (`expr: 1` is `"1"`).
    #[serde(default, deserialize_with = "decode::text")]
    pub expr: String,
    /// How long an alert's condition holds before it fires; `None` also
    /// for `0s`.
    #[serde(default, deserialize_with = "duration::nonzero")]
    pub r#for: Option<Duration>,
    /// How long an alert keeps firing after its condition stops; `None`
    /// also for `0s`.
    #[serde(default, deserialize_with = "duration::nonzero")]
    pub keep_firing_for: Option<Duration>,
    #[serde(default, deserialize_with = "decode::text_map")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "decode::text_map")]
    pub annotations: BTreeMap<String, String>,
    /// Where the rule starts in its file, when known.
    #[serde(skip)]
    pub position: Option<Position>,
}

impl Rule {
    /// The rule's name: its `alert`, or else its `record`.
    pub fn name(&self) -> Option<&str> {
        self.alert.as_deref().or(self.record.as_deref())
    }
}

impl RuleFile {
    /// How many rules the file holds, over all its groups.
    pub fn rule_count(&self) -> usize {
        self.groups.iter().map(|g| g.rules.len()).sum()
    }
}

/// Which names labels, annotations and recording rules may have: Prometheus
/// 3's default takes any non-empty UTF-8 text, the legacy scheme only
/// `[a-zA-Z_][a-zA-Z0-9_]*` (and `:` in metric names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NameValidation {
    #[default]
    Utf8,
    Legacy,
}

/// Decodes and checks a rule file's text with Prometheus 3's default name
/// validation (UTF-8).
pub fn parse(text: &str) -> Result<RuleFile, Vec<Problem>> {
    parse_with(text, NameValidation::Utf8)
}

/// Decodes and checks a rule file's text: every problem, or the file.
pub fn parse_with(text: &str, names: NameValidation) -> Result<RuleFile, Vec<Problem>> {
    let mut file = decode::rule_file(text).map_err(|p| vec![p])?;
    let positions = positions::read(text);
    for (group, at) in file.groups.iter_mut().zip(&positions.groups) {
        group.position = at.at;
        for (rule, at) in group.rules.iter_mut().zip(&at.rules) {
            rule.position = at.at;
        }
    }
    let problems = validate::check(&file, &positions, names);
    if problems.is_empty() {
        Ok(file)
    } else {
        Err(problems)
    }
}

/// Decodes and checks one group's text (a group as a rule file lists it,
/// the body the ruler configuration API takes) as a file of that one
/// group is checked.
pub fn parse_group(text: &str) -> Result<RuleGroup, Vec<Problem>> {
    let value: serde_yaml::Value = serde_yaml::from_str(text)
        .map_err(|e| vec![Problem::Decode(format!("not a rule group: {e}"))])?;
    if !value.is_mapping() {
        return Err(vec![Problem::Read(
            "not a rule group: the body must be one group, a YAML mapping with name and rules"
                .into(),
        )]);
    }
    let mut file = serde_yaml::Mapping::new();
    file.insert("groups".into(), serde_yaml::Value::Sequence(vec![value]));
    let wrapped = serde_yaml::to_string(&file)
        .map_err(|e| vec![Problem::Decode(format!("not a rule group: {e}"))])?;
    let mut parsed = parse(&wrapped)?;
    match parsed.groups.pop() {
        Some(g) if parsed.groups.is_empty() => Ok(g),
        _ => Err(vec![Problem::Read("not a rule group".into())]),
    }
}

/// Reads, decodes and checks one rule file.
pub fn load(path: &Path) -> Result<RuleFile, Vec<Problem>> {
    load_with(path, NameValidation::Utf8)
}

/// [`load`] with a name validation scheme.
pub fn load_with(path: &Path, names: NameValidation) -> Result<RuleFile, Vec<Problem>> {
    let text = std::fs::read(path).map_err(|e| vec![Problem::Read(e.to_string())])?;
    let text = String::from_utf8(text)
        .map_err(|e| vec![Problem::Decode(format!("the file is not UTF-8: {e}"))])?;
    parse_with(&text, names)
}

/// Rule files with the paths they were read from.
pub type LoadedFiles = Vec<(PathBuf, RuleFile)>;

/// Problems, each with the file (or pattern) it is about.
pub type FileProblems = Vec<(PathBuf, Problem)>;

/// Loads the files that the `rule_files` patterns name, as Prometheus does:
/// each pattern a glob (`*`, `?`, `[...]`) whose `*` may appear once and
/// only in the last part of the path; a pattern that matches nothing is no
/// error, a file that cannot be read or does not check is. Files come in
/// the patterns' order, each pattern's matches sorted, each file once.
pub fn load_globs(patterns: &[String]) -> Result<LoadedFiles, FileProblems> {
    load_globs_with(patterns, NameValidation::Utf8)
}

/// [`load_globs`] with a name validation scheme.
pub fn load_globs_with(
    patterns: &[String],
    names: NameValidation,
) -> Result<LoadedFiles, FileProblems> {
    let mut problems = Vec::new();
    let mut paths: Vec<PathBuf> = Vec::new();
    for pattern in patterns {
        match glob_paths(pattern) {
            Ok(found) => {
                for path in found {
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            }
            Err(problem) => problems.push((PathBuf::from(pattern), problem)),
        }
    }
    let mut files = Vec::new();
    for path in paths {
        match load_with(&path, names) {
            Ok(file) => files.push((path, file)),
            Err(found) => problems.extend(found.into_iter().map(|p| (path.clone(), p))),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems)
    }
}

fn glob_paths(pattern: &str) -> Result<Vec<PathBuf>, Problem> {
    // Prometheus' config check: at most one `*`, with no `/` after it.
    let star_ok = match pattern.split_once('*') {
        None => true,
        Some((_, after)) => !after.contains(['*', '/']),
    };
    if !star_ok {
        return Err(Problem::Pattern(pattern.to_string()));
    }
    let options = glob::MatchOptions {
        case_sensitive: true,
        // `*` stays within one path part, and matches dot files: Go's
        // filepath.Glob.
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let found = glob::glob_with(pattern, options)
        .map_err(|e| Problem::Read(format!("failed retrieving rule files for {pattern:?}: {e}")))?;
    // Like Go's Glob, a folder that cannot be listed only matches nothing.
    Ok(found.filter_map(Result::ok).collect())
}

#[cfg(test)]
mod tests;
