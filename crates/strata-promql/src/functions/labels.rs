//! Functions that rewrite label sets: `label_replace`, `label_join`, and the
//! labels `absent` derives from a selector.

use promql_parser::label::MatchOp as ParserMatchOp;
use promql_parser::parser::VectorSelector;
use regex::Regex;
use strata_codec::Label;

use crate::error::QueryError;
use crate::value::{get_label, set_label, Labels};

/// A compiled `label_replace(v, dst, replacement, src, regex)`.
pub(crate) struct LabelReplace {
    dst: String,
    replacement: String,
    src: String,
    regex: Regex,
}

impl LabelReplace {
    pub fn new(dst: &str, replacement: &str, src: &str, regex: &str) -> Result<Self, QueryError> {
        let re = Regex::new(&format!("^(?s:{regex})$")).map_err(|_| {
            QueryError::exec(format!(
                "invalid regular expression in label_replace(): {regex}"
            ))
        })?;
        if dst.is_empty() {
            return Err(QueryError::exec(format!(
                "invalid destination label name in label_replace(): {dst}"
            )));
        }
        Ok(Self {
            dst: dst.into(),
            replacement: replacement.into(),
            src: src.into(),
            regex: re,
        })
    }

    /// The new labels, or `None` when the regex does not match.
    pub fn apply(&self, labels: &[Label]) -> Option<Labels> {
        let src = get_label(labels, &self.src);
        let caps = self.regex.captures(src)?;
        let mut out = String::new();
        caps.expand(&self.replacement, &mut out);
        Some(set_label(labels, &self.dst, &out))
    }
}

/// `label_join(v, dst, separator, src...)` for one label set.
pub(crate) fn label_join(labels: &[Label], dst: &str, sep: &str, srcs: &[String]) -> Labels {
    let joined: Vec<&str> = srcs.iter().map(|s| get_label(labels, s)).collect();
    set_label(labels, dst, &joined.join(sep))
}

/// The labels `absent(selector)` reports: the selector's equality matchers
/// (other than the metric name), a label named twice being dropped.
pub(crate) fn absent_labels(vs: &VectorSelector) -> Labels {
    let mut out: Vec<Label> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == "__name__" {
            continue;
        }
        if matches!(m.op, ParserMatchOp::Equal) && !seen.contains(&m.name) {
            out.retain(|l| l.name != m.name);
            out.push(Label::new(m.name.clone(), m.value.clone()));
            seen.push(m.name.clone());
        } else {
            out.retain(|l| l.name != m.name);
        }
    }
    out.retain(|l| !l.value.is_empty());
    out.sort();
    Labels::from(out)
}
