//! How a series is named in messages: as Prometheus prints it, cut so
//! that a hostile series cannot blow up an error body.

use std::fmt::Write as _;

use crate::LabelPairs;

/// A rendered label set is cut at this many bytes.
pub const MAX_RENDERED_BYTES: usize = 1024;

/// Renders labels as Prometheus prints a series, `{__name__="up", job="x"}`:
/// names bare when they are legacy identifiers and quoted otherwise, values
/// quoted. Cut at [`MAX_RENDERED_BYTES`].
pub fn render_labels(labels: &(impl LabelPairs + ?Sized)) -> String {
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
    use crate::Label;

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
