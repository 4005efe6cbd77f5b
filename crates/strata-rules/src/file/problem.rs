//! What can be wrong with a rule file, worded as Prometheus words it.

use std::fmt;

/// Where a node starts in a rule file: line and column, both from 1, as
/// Go's YAML decoder counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One thing wrong with a rule file. It displays as Prometheus' `rulefmt`
/// words it, without the file name that promtool puts in front.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The file could not be read.
    #[error("{0}")]
    Read(String),
    /// The text is not YAML, or not the shape of a rule file: an unknown
    /// or repeated key, a value of the wrong type, a bad duration.
    #[error("{0}")]
    Decode(String),
    /// A rule file pattern (`rule_files`) that Prometheus refuses: a `*`
    /// anywhere but in the last part of the path, or more than one.
    #[error("invalid rule file path {0:?}")]
    Pattern(String),
    /// A group without a name.
    #[error("{}Groupname must not be empty", prefix(.at))]
    EmptyGroupName { at: Option<Position> },
    /// A second group of the same name in one file.
    #[error("{}groupname: \"{name}\" is repeated in the same file", prefix(.at))]
    RepeatedGroup { name: String, at: Option<Position> },
    /// A label name in a group's `labels` that is not allowed: empty, or
    /// `__name__`, or not of the legacy scheme's characters where that
    /// scheme is asked for. Prometheus names neither group nor position.
    #[error("invalid label name: {name}")]
    GroupLabelName { group: String, name: String },
    /// Something wrong with one rule.
    #[error("{0}")]
    Rule(Box<RuleProblem>),
}

/// Something wrong with one rule of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleProblem {
    pub group: String,
    /// The rule's place in its group, from 1.
    pub rule: usize,
    /// The rule's `alert`, or else its `record`, or empty.
    pub name: String,
    /// Where the fields the fault is about start, when known: `record`
    /// and `alert` both for a rule with both; the rule itself where the
    /// field is missing; none for labels and annotations (as Prometheus).
    pub at: Vec<Position>,
    pub fault: RuleFault,
}

impl fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for at in &self.at {
            write!(f, "{at}: ")?;
        }
        write!(
            f,
            "group {:?}, rule {}, {:?}: {}",
            self.group, self.rule, self.name, self.fault
        )
    }
}

/// The ways a single rule can be wrong, as `rulefmt` checks them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleFault {
    #[error("only one of 'record' and 'alert' must be set")]
    RecordAndAlert,
    #[error("one of 'record' or 'alert' must be set")]
    NoRecordOrAlert,
    #[error("field 'expr' must be set in rule")]
    NoExpr,
    #[error("could not parse expression: {0}")]
    Expr(String),
    #[error("invalid field 'annotations' in recording rule")]
    AnnotationsInRecordingRule,
    #[error("invalid field 'for' in recording rule")]
    ForInRecordingRule,
    #[error("invalid field 'keep_firing_for' in recording rule")]
    KeepFiringForInRecordingRule,
    #[error("invalid recording rule name: {0}")]
    RecordName(String),
    #[error("braces present in the recording rule name; should it be in expr?: {0}")]
    BracesInRecordName(String),
    /// Empty, `__name__`, or outside the legacy scheme where it applies.
    #[error("invalid label name: {0}")]
    LabelName(String),
    #[error("invalid annotation name: {0}")]
    AnnotationName(String),
    /// An alerting rule's label value that does not parse as a template.
    #[error("label {name:?}: {error}")]
    LabelTemplate { name: String, error: String },
    /// An alerting rule's annotation that does not parse as a template.
    #[error("annotation {name:?}: {error}")]
    AnnotationTemplate { name: String, error: String },
}

fn prefix(at: &Option<Position>) -> String {
    at.map(|at| format!("{at}: ")).unwrap_or_default()
}
