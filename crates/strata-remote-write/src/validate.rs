//! Per-series label rules of the remote-write specification, and how a
//! rejected series is named in messages.

use std::fmt::Write as _;

use strata_codec::labels::METRIC_NAME;
use strata_codec::LabelPairs;

use crate::decode::{RawLabel, RawLabels};
use crate::wire;

/// A rendered label set is cut at this many bytes, so that a hostile series
/// cannot blow up an error message.
const MAX_RENDERED_BYTES: usize = 1024;

/// Checks one series' labels, sorting them by name first if the sender did
/// not (vmagent sends them in scrape order; Prometheus sorts on receipt):
/// every name and value non-empty, names unique (compared bytewise, as
/// Prometheus does), and a `__name__` label present. Any UTF-8 name is
/// accepted, as Prometheus 3 accepts it; invalid UTF-8 is caught while
/// converting.
pub(crate) fn check_labels(labels: &mut RawLabels) -> Result<(), String> {
    match check_sorted(labels) {
        Err(Problem::Unsorted) => {
            // Stable, so that duplicates are named in the order sent.
            labels.0.sort_by(|a, b| a.name().cmp(b.name()));
            check_sorted(labels).map_err(Problem::into_message)
        }
        other => other.map_err(Problem::into_message),
    }
}

enum Problem {
    /// Not sorted by name: the caller sorts and checks again.
    Unsorted,
    Invalid(String),
}

impl Problem {
    fn into_message(self) -> String {
        match self {
            Self::Unsorted => "labels are not sorted by name".to_owned(),
            Self::Invalid(m) => m,
        }
    }
}

/// The checks of [`check_labels`] on labels taken as sorted.
fn check_sorted(labels: &(impl LabelPairs + ?Sized)) -> Result<(), Problem> {
    let mut previous: Option<&str> = None;
    let mut has_metric_name = false;
    for (name, value) in labels.pairs() {
        if name.is_empty() {
            return Err(Problem::Invalid(format!(
                "a label has an empty name (its value is {value:?})"
            )));
        }
        if value.is_empty() {
            return Err(Problem::Invalid(format!(
                "label {name:?} has an empty value"
            )));
        }
        if let Some(previous) = previous {
            match name.cmp(previous) {
                std::cmp::Ordering::Greater => {}
                std::cmp::Ordering::Equal => {
                    return Err(Problem::Invalid(format!("duplicate label name {name:?}")))
                }
                std::cmp::Ordering::Less => return Err(Problem::Unsorted),
            }
        }
        has_metric_name |= name == METRIC_NAME;
        previous = Some(name);
    }
    if has_metric_name {
        Ok(())
    } else {
        Err(Problem::Invalid(format!("missing the {METRIC_NAME} label")))
    }
}

/// Takes 1.0 labels without copying their bytes. On invalid UTF-8 returns
/// the series rendered lossily (to name it) and the problem.
pub(crate) fn labels_from_raw(raw: Vec<wire::v1::Label>) -> Result<RawLabels, (String, String)> {
    let mut labels = Vec::with_capacity(raw.len());
    for l in &raw {
        match RawLabel::new(l.name.clone(), l.value.clone()) {
            Some(label) => labels.push(label),
            None => {
                let (what, shown) = match std::str::from_utf8(&l.name) {
                    Err(_) => ("a label name".to_owned(), String::from_utf8_lossy(&l.name)),
                    Ok(name) => (
                        format!("the value of label {name:?}"),
                        String::from_utf8_lossy(&l.value),
                    ),
                };
                let lossy: Vec<strata_codec::Label> = raw
                    .iter()
                    .map(|l| {
                        strata_codec::Label::new(
                            String::from_utf8_lossy(&l.name),
                            String::from_utf8_lossy(&l.value),
                        )
                    })
                    .collect();
                return Err((
                    render_labels(&lossy),
                    format!("{what} is not valid UTF-8: {shown:?}"),
                ));
            }
        }
    }
    Ok(RawLabels(labels))
}

/// Renders labels as Prometheus prints a series, `{__name__="up", job="x"}`:
/// names bare when they are legacy identifiers and quoted otherwise, values
/// quoted. Cut at [`MAX_RENDERED_BYTES`].
pub(crate) fn render_labels(labels: &(impl LabelPairs + ?Sized)) -> String {
    let mut out = String::from("{");
    for (i, (name, value)) in labels.pairs().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if is_legacy_name(name) {
            out.push_str(name);
        } else {
            let _ = write!(out, "{name:?}");
        }
        let _ = write!(out, "={value:?}");
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
    use strata_codec::Label;

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
