//! Exemplars as the server takes them: read from either version's wire
//! form, checked one by one, the invalid ones dropped and counted.
//!
//! As in Prometheus' receiver, a bad exemplar never fails the request nor
//! its series: it is left out, and the first problem is kept for the log.
//! Labels stay in the order sent.

use strata_codec::{Exemplar, Label};

use crate::wire;

/// Invalid bytes are shown in a problem cut at this many characters.
const SHOWN_CHARS: usize = 64;

/// A 1.0 exemplar with owned labels, or why one of its labels is not UTF-8.
pub(crate) fn from_v1(e: wire::v1::Exemplar) -> Result<Exemplar, String> {
    let labels = e
        .labels
        .iter()
        .map(|l| {
            let name = std::str::from_utf8(&l.name).map_err(|_| {
                format!("exemplar label name {} is not valid UTF-8", shown(&l.name))
            })?;
            let value = std::str::from_utf8(&l.value).map_err(|_| {
                format!(
                    "the value of exemplar label {name:?} is not valid UTF-8: {}",
                    shown(&l.value)
                )
            })?;
            Ok(Label::new(name, value))
        })
        .collect::<Result<_, String>>()?;
    Ok(Exemplar {
        labels,
        t: e.timestamp,
        v: e.value,
    })
}

/// Bytes that are not UTF-8, quoted lossily and cut short: the problem goes
/// to a log line, and the bytes may be long.
fn shown(bytes: &[u8]) -> String {
    let lossy = String::from_utf8_lossy(bytes);
    let mut out: String = lossy.chars().take(SHOWN_CHARS).collect();
    if out.len() < lossy.len() {
        out.push('…');
    }
    format!("{out:?}")
}
