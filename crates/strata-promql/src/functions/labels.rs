//! Functions that rewrite or order by label sets: `label_replace`,
//! `label_join`, `sort_by_label`, and the labels `absent` derives from a
//! selector.

use std::cmp::Ordering;

use promql_parser::label::MatchOp as ParserMatchOp;
use promql_parser::parser::VectorSelector;
use regex::Regex;
use strata_codec::Label;

use crate::error::QueryError;
use crate::value::{get_label, is_metadata_label, set_label, Labels, Sample, Vector};

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
/// (other than the metric name, type and unit), a label named twice being
/// dropped.
pub(crate) fn absent_labels(vs: &VectorSelector) -> Labels {
    let mut out: Vec<Label> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for m in &vs.matchers.matchers {
        if is_metadata_label(&m.name) {
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

/// `sort_by_label(v, names...)` (or `sort_by_label_desc`): by the values of
/// `names` in natural order, then by the whole label set, as Prometheus'
/// `funcSortByLabel`.
pub(crate) fn sort_by_label(mut v: Vector, names: &[String], descending: bool) -> Vector {
    v.sort_by(|a: &Sample, b: &Sample| {
        let by_names = names
            .iter()
            .map(|n| natural_cmp(get_label(&a.labels, n), get_label(&b.labels, n)))
            .find(|o| o.is_ne());
        let o = by_names.unwrap_or_else(|| a.labels.cmp(&b.labels));
        if descending {
            o.reverse()
        } else {
            o
        }
    });
    v
}

/// Natural order, as the `natsort` package Prometheus sorts label values
/// with: runs of ASCII digits compare as numbers, other runs as bytes.
///
/// `natsort` is not a total order for values that differ only in leading
/// zeros, or one of which is empty; this one is (Rust's sort requires it):
/// numbers that are equal compare by their text after all other runs, and
/// the empty value comes first.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut ra, mut rb) = (runs(a), runs(b));
    loop {
        match (ra.next(), rb.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let o = if is_digits(x) && is_digits(y) {
                    let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                    x.len().cmp(&y.len()).then_with(|| x.cmp(y))
                } else {
                    x.cmp(y)
                };
                if o.is_ne() {
                    return o;
                }
            }
        }
    }
}

fn is_digits(run: &str) -> bool {
    run.bytes().next().is_some_and(|c| c.is_ascii_digit())
}

/// The maximal runs of ASCII digits and of other characters in `s`.
fn runs(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let first = rest.bytes().next()?;
        let digits = first.is_ascii_digit();
        let end = rest
            .bytes()
            .position(|c| c.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

#[cfg(test)]
mod tests {
    use super::natural_cmp;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn natural_order() {
        assert_eq!(natural_cmp("4m5", "4m600"), Less);
        assert_eq!(natural_cmp("1.2.3", "1.11.3"), Less);
        assert_eq!(natural_cmp("cpu10", "cpu9"), Greater);
        assert_eq!(natural_cmp("a", "a1"), Less);
        assert_eq!(natural_cmp("", "0"), Less);
        assert_eq!(natural_cmp("01", "1"), Less);
        assert_eq!(natural_cmp("1", "01"), Greater);
        assert_eq!(natural_cmp("x1y", "x1y"), Equal);
        // Numbers beyond 64 bits still compare as numbers.
        assert_eq!(
            natural_cmp("99999999999999999999", "100000000000000000000"),
            Less
        );
    }
}
