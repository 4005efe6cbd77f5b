//! 1.0 labels taken from the wire.

use strata_codec::render::render_labels;
use strata_write::{RawLabel, RawLabels};

use crate::wire;

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
