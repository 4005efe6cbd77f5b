//! Labels and label matchers: the vocabulary every other crate speaks.

use regex::Regex;

/// The label that names a metric.
pub const METRIC_NAME: &str = "__name__";

/// One label pair of a series. A series' labels are kept sorted by name and
/// have unique names, as the remote-write specification requires.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    pub name: String,
    pub value: String,
}

impl Label {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A sorted label set seen as `(name, value)` pairs, owned or borrowed, so
/// that a series can be looked up without building owned labels first.
pub trait LabelPairs {
    /// The pairs, sorted by name.
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)>;
    /// The number of pairs.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Owned labels, built only when a series is new.
    fn to_labels(&self) -> Vec<Label> {
        self.pairs().map(|(n, v)| Label::new(n, v)).collect()
    }
}

impl LabelPairs for [Label] {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.to_vec()
    }
}

impl LabelPairs for Vec<Label> {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.clone()
    }
}

impl LabelPairs for std::sync::Arc<[Label]> {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.to_vec()
    }
}

/// Whether owned labels equal a label set given as pairs.
pub fn labels_eq(labels: &[Label], other: &(impl LabelPairs + ?Sized)) -> bool {
    labels.len() == other.len()
        && labels
            .iter()
            .zip(other.pairs())
            .all(|(l, (n, v))| l.name == n && l.value == v)
}

/// The value of label `name` in a sorted label set, or "" when absent (as
/// Prometheus treats a missing label).
pub fn get<'a>(labels: &'a [Label], name: &str) -> &'a str {
    labels
        .iter()
        .find(|l| l.name == name)
        .map_or("", |l| l.value.as_str())
}

/// The four Prometheus matcher operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchOp {
    Equal,
    NotEqual,
    RegexMatch,
    RegexNoMatch,
}

/// A label matcher, with its regular expression compiled once and anchored
/// at both ends as Prometheus anchors it.
#[derive(Clone, Debug)]
pub struct Matcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    regex: Option<Regex>,
}

/// A matcher whose regular expression does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid regular expression {value:?} for label {name:?}: {reason}")]
pub struct MatcherError {
    pub name: String,
    pub value: String,
    pub reason: String,
}

impl Matcher {
    pub fn new(
        op: MatchOp,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, MatcherError> {
        let name = name.into();
        let value = value.into();
        let regex = match op {
            MatchOp::RegexMatch | MatchOp::RegexNoMatch => Some(
                Regex::new(&format!("^(?s:{value})$")).map_err(|e| MatcherError {
                    name: name.clone(),
                    value: value.clone(),
                    reason: e.to_string(),
                })?,
            ),
            MatchOp::Equal | MatchOp::NotEqual => None,
        };
        Ok(Self {
            name,
            op,
            value,
            regex,
        })
    }

    /// Whether a label value (`""` for an absent label) satisfies the matcher.
    pub fn matches(&self, value: &str) -> bool {
        match (self.op, &self.regex) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::RegexMatch, Some(re)) => re.is_match(value),
            (MatchOp::RegexNoMatch, Some(re)) => !re.is_match(value),
            // `new` compiles a regex for both regex operators.
            (MatchOp::RegexMatch | MatchOp::RegexNoMatch, None) => false,
        }
    }

    /// Whether the matcher accepts the empty value, i.e. also selects series
    /// that lack the label entirely.
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }

    /// Whether a sorted label set satisfies the matcher.
    pub fn matches_labels(&self, labels: &[Label]) -> bool {
        self.matches(get(labels, &self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_is_anchored() {
        let m = Matcher::new(MatchOp::RegexMatch, "job", "no.e").unwrap();
        assert!(m.matches("node"));
        assert!(!m.matches("xnode"));
        assert!(!m.matches("nodex"));
        let m = Matcher::new(MatchOp::RegexNoMatch, "job", "a|b").unwrap();
        assert!(m.matches(""));
        assert!(!m.matches("a"));
    }

    #[test]
    fn absent_label_is_empty() {
        let labels = vec![Label::new("__name__", "up")];
        let m = Matcher::new(MatchOp::Equal, "job", "").unwrap();
        assert!(m.matches_labels(&labels));
    }

    #[test]
    fn bad_regex_names_label() {
        let err = Matcher::new(MatchOp::RegexMatch, "job", "(").unwrap_err();
        assert!(err.to_string().contains("job"));
    }
}
