//! Per-series label rules of the remote-write specification, and how a
//! rejected series is named in messages.

use std::fmt::Write as _;

use strata_codec::labels::METRIC_NAME;
use strata_codec::Label;

use crate::wire;

/// A rendered label set is cut at this many bytes, so that a hostile series
/// cannot blow up an error message.
const MAX_RENDERED_BYTES: usize = 1024;

/// Checks one series' labels: every name and value non-empty, names strictly
/// increasing (so sorted and unique, compared bytewise as Prometheus does),
/// and a `__name__` label present. Any UTF-8 name is accepted, as
/// Prometheus 3 accepts it; invalid UTF-8 is caught while converting.
pub(crate) fn check_labels(labels: &[Label]) -> Result<(), String> {
    let mut previous: Option<&str> = None;
    let mut has_metric_name = false;
    for label in labels {
        if label.name.is_empty() {
            return Err(format!(
                "a label has an empty name (its value is {:?})",
                label.value
            ));
        }
        if label.value.is_empty() {
            return Err(format!("label {:?} has an empty value", label.name));
        }
        if let Some(previous) = previous {
            match label.name.as_str().cmp(previous) {
                std::cmp::Ordering::Greater => {}
                std::cmp::Ordering::Equal => {
                    return Err(format!("duplicate label name {:?}", label.name))
                }
                std::cmp::Ordering::Less => {
                    return Err(format!(
                        "labels are not sorted by name: {:?} comes after {:?}",
                        label.name, previous
                    ))
                }
            }
        }
        has_metric_name |= label.name == METRIC_NAME;
        previous = Some(&label.name);
    }
    if has_metric_name {
        Ok(())
    } else {
        Err(format!("missing the {METRIC_NAME} label"))
    }
}

/// Converts 1.0 labels without copying their bytes. Invalid UTF-8 is kept
/// (lossily) for naming the series, and reported as the series' problem.
pub(crate) fn labels_from_raw(raw: Vec<wire::v1::Label>) -> (Vec<Label>, Option<String>) {
    let mut problem = None;
    let labels = raw
        .into_iter()
        .map(|l| {
            let name = utf8(l.name, &mut problem, || "a label name".to_owned());
            let value = utf8(l.value, &mut problem, || {
                format!("the value of label {name:?}")
            });
            Label { name, value }
        })
        .collect();
    (labels, problem)
}

fn utf8(bytes: Vec<u8>, problem: &mut Option<String>, what: impl FnOnce() -> String) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let s = String::from_utf8_lossy(e.as_bytes()).into_owned();
            if problem.is_none() {
                *problem = Some(format!("{} is not valid UTF-8: {s:?}", what()));
            }
            s
        }
    }
}

/// Renders labels as Prometheus prints a series, `{__name__="up", job="x"}`:
/// names bare when they are legacy identifiers and quoted otherwise, values
/// quoted. Cut at [`MAX_RENDERED_BYTES`].
pub(crate) fn render_labels(labels: &[Label]) -> String {
    let mut out = String::from("{");
    for (i, label) in labels.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if is_legacy_name(&label.name) {
            out.push_str(&label.name);
        } else {
            let _ = write!(out, "{:?}", label.name);
        }
        let _ = write!(out, "={:?}", label.value);
        if out.len() > MAX_RENDERED_BYTES {
            let mut cut = MAX_RENDERED_BYTES;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push_str("...");
            break;
        }
    }
    out.push('}');
    out
}

/// Whether a name matches Prometheus' legacy `[a-zA-Z_][a-zA-Z0-9_]*`.
fn is_legacy_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_prometheus() {
        let labels = vec![
            Label::new("__name__", "up"),
            Label::new("job", "a\"b"),
            Label::new("k8s.pod", "p"),
        ];
        assert_eq!(
            render_labels(&labels),
            r#"{__name__="up", job="a\"b", "k8s.pod"="p"}"#
        );
    }

    #[test]
    fn long_rendering_is_cut() {
        let labels = vec![Label::new("__name__", "é".repeat(2000))];
        let s = render_labels(&labels);
        assert!(s.len() < MAX_RENDERED_BYTES + 8);
        assert!(s.ends_with("...}"));
    }
}
