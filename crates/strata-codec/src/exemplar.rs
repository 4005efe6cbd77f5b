//! Exemplars: a sample's pointer to what explains it (a trace id, a user),
//! as remote write carries them and `/api/v1/query_exemplars` returns them.
//!
//! One exemplar's encoding, shared by the log record and the sealed `E`
//! keys: the timestamp as a zig-zag varint (a delta from the one before in a
//! list), the value as 8 raw bytes, the label count, then each name and
//! value length-prefixed.

use std::fmt;

use crate::labels::Label;
use crate::varint::{put_uvarint, unzigzag, zigzag, Decbuf};
use crate::CodecError;

/// OpenMetrics' limit on an exemplar's labels: the characters of every
/// name and value together (Prometheus' `ExemplarMaxLabelSetLength`).
pub const EXEMPLAR_MAX_LABEL_CHARS: usize = 128;

/// One exemplar. Its value round-trips bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Exemplar {
    /// In the order the sender gave them.
    pub labels: Vec<Label>,
    pub t: i64,
    pub v: f64,
}

/// One series' exemplars, as storage reads them and the query API returns
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesExemplars {
    /// Sorted by name.
    pub labels: Vec<Label>,
    /// In time order.
    pub exemplars: Vec<Exemplar>,
}

/// Why an exemplar is not stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExemplarProblem {
    DuplicateLabel(String),
    EmptyLabelName,
    LabelsTooLong(usize),
}

impl fmt::Display for ExemplarProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateLabel(name) => {
                write!(f, "exemplar label name {name:?} is not unique")
            }
            Self::EmptyLabelName => f.write_str("exemplar has a label with an empty name"),
            Self::LabelsTooLong(n) => write!(
                f,
                "exemplar labels are {n} characters long, over the maximum of {EXEMPLAR_MAX_LABEL_CHARS}"
            ),
        }
    }
}

impl Exemplar {
    /// Prometheus' checks: unique, non-empty label names, and at most
    /// [`EXEMPLAR_MAX_LABEL_CHARS`] characters of names and values.
    pub fn validate(&self) -> Result<(), ExemplarProblem> {
        let mut chars = 0;
        for (i, l) in self.labels.iter().enumerate() {
            if l.name.is_empty() {
                return Err(ExemplarProblem::EmptyLabelName);
            }
            if self
                .labels
                .get(..i)
                .is_some_and(|before| before.iter().any(|b| b.name == l.name))
            {
                return Err(ExemplarProblem::DuplicateLabel(l.name.clone()));
            }
            chars += l.name.chars().count() + l.value.chars().count();
        }
        if chars > EXEMPLAR_MAX_LABEL_CHARS {
            return Err(ExemplarProblem::LabelsTooLong(chars));
        }
        Ok(())
    }

    /// Whether `other` is the same exemplar: labels, time and value's bits.
    pub fn same_as(&self, other: &Exemplar) -> bool {
        self.t == other.t && self.v.to_bits() == other.v.to_bits() && self.labels == other.labels
    }

    /// Appends the encoding, its timestamp as a delta from `prev_t`.
    pub fn encode(&self, prev_t: i64, out: &mut Vec<u8>) {
        put_uvarint(out, zigzag(self.t.wrapping_sub(prev_t)));
        out.extend_from_slice(&self.v.to_bits().to_be_bytes());
        put_uvarint(out, self.labels.len() as u64);
        for l in &self.labels {
            put_uvarint(out, l.name.len() as u64);
            out.extend_from_slice(l.name.as_bytes());
            put_uvarint(out, l.value.len() as u64);
            out.extend_from_slice(l.value.as_bytes());
        }
    }

    /// Reads one exemplar [`Self::encode`] wrote after `prev_t`; on damage,
    /// `d` holds the error and the result is meaningless.
    pub fn decode(d: &mut Decbuf<'_>, prev_t: i64) -> Exemplar {
        let t = prev_t.wrapping_add(unzigzag(d.uvarint()));
        let v = f64::from_bits(d.be_u64());
        // Each label takes at least 2 bytes (two lengths).
        let n = d.length_prefix(2);
        let mut labels = Vec::with_capacity(n);
        for _ in 0..n {
            let name = d.string();
            let value = d.string();
            if d.err().is_some() {
                break;
            }
            labels.push(Label { name, value });
        }
        Exemplar { labels, t, v }
    }
}

/// Encodes a list of exemplars (one series' in a bucket): a count, then
/// each, timestamps as deltas.
pub fn encode_exemplars(list: &[Exemplar], out: &mut Vec<u8>) {
    put_uvarint(out, list.len() as u64);
    let mut prev_t = 0;
    for e in list {
        e.encode(prev_t, out);
        prev_t = e.t;
    }
}

/// Decodes what [`encode_exemplars`] wrote; any damage, trailing bytes
/// included, is an error.
pub fn decode_exemplars(bytes: &[u8]) -> Result<Vec<Exemplar>, CodecError> {
    let mut d = Decbuf::new(bytes);
    // Each exemplar takes at least 10 bytes (time, value, label count).
    let n = d.length_prefix(10);
    let mut out = Vec::with_capacity(n);
    let mut prev_t = 0;
    for _ in 0..n {
        let e = Exemplar::decode(&mut d, prev_t);
        if d.err().is_some() {
            break;
        }
        prev_t = e.t;
        out.push(e);
    }
    if d.remaining() != 0 {
        d.fail(CodecError::Corrupt("trailing bytes after exemplars"));
    }
    d.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(t: i64, v: f64, labels: &[(&str, &str)]) -> Exemplar {
        Exemplar {
            labels: labels.iter().map(|(n, v)| Label::new(*n, *v)).collect(),
            t,
            v,
        }
    }

    #[test]
    fn lists_round_trip_bit_for_bit() {
        let list = vec![
            ex(
                1_700_000_000_000,
                0.125,
                &[("trace_id", "abc"), ("span_id", "1")],
            ),
            ex(
                1_699_999_000_000,
                f64::from_bits(0x7ff8_0000_0000_0001),
                &[],
            ),
            ex(i64::MIN, f64::NEG_INFINITY, &[("user", "测试")]),
            ex(i64::MAX, -0.0, &[("a", "")]),
        ];
        let mut out = Vec::new();
        encode_exemplars(&list, &mut out);
        let got = decode_exemplars(&out).unwrap();
        assert_eq!(got.len(), list.len());
        for (a, b) in list.iter().zip(&got) {
            assert!(a.same_as(b), "{a:?} != {b:?}");
        }
        for cut in 0..out.len() {
            assert!(decode_exemplars(out.get(..cut).unwrap()).is_err(), "{cut}");
        }
        out.push(0);
        assert!(decode_exemplars(&out).is_err());
    }

    #[test]
    fn validation_follows_prometheus() {
        assert_eq!(ex(0, 1.0, &[]).validate(), Ok(()));
        assert_eq!(ex(0, 1.0, &[("trace_id", "x")]).validate(), Ok(()));
        assert_eq!(
            ex(0, 1.0, &[("a", "1"), ("b", "2"), ("a", "3")]).validate(),
            Err(ExemplarProblem::DuplicateLabel("a".into()))
        );
        assert_eq!(
            ex(0, 1.0, &[("", "1")]).validate(),
            Err(ExemplarProblem::EmptyLabelName)
        );
        // 128 characters pass, 129 do not; characters, not bytes.
        let v = "é".repeat(120);
        assert_eq!(ex(0, 1.0, &[("trace_id", &v)]).validate(), Ok(()));
        let v = "é".repeat(121);
        assert_eq!(
            ex(0, 1.0, &[("trace_id", &v)]).validate(),
            Err(ExemplarProblem::LabelsTooLong(129))
        );
    }
}
