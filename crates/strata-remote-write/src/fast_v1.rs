//! A hand-written reader for the common shape of a 1.0 `WriteRequest`:
//! series of labels and float samples, as Prometheus and vmagent send them.
//!
//! prost builds a `Vec` of wire labels per series, clones each label's
//! `Bytes` twice on the way to [`RawLabel`] and dispatches every field
//! through generic merge code; at 2,000 series per request that was the
//! largest share of the server's ingest CPU. This reader builds the
//! [`RawSeries`] directly.
//!
//! It gives up (returns `None`) on anything out of the ordinary: malformed
//! framing, a wire type prost would refuse, groups, exemplars, histograms,
//! labels that are not UTF-8. The caller then decodes with prost, which
//! produces the exact error or rejection. So this reader needs to agree with
//! prost only on the requests it accepts; `tests` checks that it does.

use bytes::Bytes;

use strata_write::{check_labels, DecodedWrite, RawLabel, RawLabels, RawSeries};

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// A cursor over a protobuf message.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// A varint as prost reads it: at most 10 bytes, the last at most 1.
    #[inline]
    fn varint(&mut self) -> Option<u64> {
        // Keys and short lengths: one byte.
        let &b = self.buf.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A key: field number (non-zero, as prost requires) and wire type.
    /// prost refuses a key whose varint, field and wire type together, is
    /// over `u32::MAX`.
    fn key(&mut self) -> Option<(u32, u8)> {
        let k = u32::try_from(self.varint()?).ok()?;
        let field = k >> 3;
        (field != 0).then_some((field, (k & 7) as u8))
    }

    /// The range of a length-delimited field's bytes.
    fn len_delimited(&mut self) -> Option<(usize, usize)> {
        let len = usize::try_from(self.varint()?).ok()?;
        let start = self.pos;
        let end = start.checked_add(len)?;
        (end <= self.buf.len()).then(|| {
            self.pos = end;
            (start, end)
        })
    }

    fn fixed64(&mut self) -> Option<u64> {
        let bytes = self.buf.get(self.pos..self.pos + 8)?;
        self.pos += 8;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    /// Skips an unknown field as prost does; groups are left to prost.
    fn skip(&mut self, wire: u8) -> Option<()> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.fixed64().map(drop),
            LEN => self.len_delimited().map(drop),
            I32 => {
                let end = self.pos.checked_add(4)?;
                (end <= self.buf.len()).then(|| self.pos = end)
            }
            _ => None,
        }
    }
}

/// Decodes `raw` if it has the common shape; `None` leaves it to prost.
pub(crate) fn decode(raw: &Bytes) -> Option<DecodedWrite<RawSeries>> {
    let mut r = Reader::new(raw);
    let mut out = DecodedWrite::new(estimate_series(raw));
    let mut scratch = Vec::with_capacity(16);
    while !r.done() {
        let (field, wire) = r.key()?;
        // Metadata (field 3) is left to prost, which reads it.
        if field == 3 {
            return None;
        }
        if field != 1 {
            r.skip(wire)?;
            continue;
        }
        if wire != LEN {
            return None;
        }
        let (start, end) = r.len_delimited()?;
        let (mut labels, samples) = series(raw, start, end, &mut scratch)?;
        let checked = check_labels(&mut labels);
        out.push_series(labels, checked, samples, Vec::new(), std::iter::empty());
    }
    Some(out)
}

/// A guess at the number of series, for the output's capacity: Prometheus'
/// series of one sample and a handful of labels take about 100 bytes.
fn estimate_series(raw: &[u8]) -> usize {
    (raw.len() / 96).min(1 << 16)
}

/// One `TimeSeries` in `raw[start..end]`: its labels and samples. Labels
/// gather in `scratch` first, so that each series' list is allocated at its
/// exact size.
fn series(
    raw: &Bytes,
    start: usize,
    end: usize,
    scratch: &mut Vec<RawLabel>,
) -> Option<(RawLabels, Vec<(i64, f64)>)> {
    let body = raw.get(start..end)?;
    let mut r = Reader::new(body);
    scratch.clear();
    // Prometheus sends one sample per series and request.
    let mut samples = Vec::with_capacity(1);
    while !r.done() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, LEN) => {
                let (s, e) = r.len_delimited()?;
                scratch.push(label(raw, start + s, start + e)?);
            }
            (2, LEN) => {
                let (s, e) = r.len_delimited()?;
                samples.push(sample(body.get(s..e)?)?);
            }
            // Exemplars and histograms are rare; prost reads them.
            (1..=4, _) => return None,
            _ => r.skip(wire)?,
        }
    }
    let mut labels = Vec::with_capacity(scratch.len());
    labels.append(scratch);
    Some((RawLabels(labels), samples))
}

/// One `Label` in `raw[start..end]`; `None` if not UTF-8.
fn label(raw: &Bytes, start: usize, end: usize) -> Option<RawLabel> {
    let mut r = Reader::new(raw.get(start..end)?);
    let (mut name, mut value) = ((0, 0), (0, 0));
    while !r.done() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            // prost keeps the last occurrence of a non-repeated field.
            (1, LEN) => name = r.len_delimited()?,
            (2, LEN) => value = r.len_delimited()?,
            (1 | 2, _) => return None,
            _ => r.skip(wire)?,
        }
    }
    RawLabel::new(
        raw.slice(start + name.0..start + name.1),
        raw.slice(start + value.0..start + value.1),
    )
}

/// One `Sample`: value (double, 1) and timestamp (int64, 2), both 0 when
/// absent.
fn sample(body: &[u8]) -> Option<(i64, f64)> {
    let mut r = Reader::new(body);
    let (mut t, mut v) = (0i64, 0f64);
    while !r.done() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, I64) => v = f64::from_bits(r.fixed64()?),
            (2, VARINT) => t = r.varint()? as i64,
            (1 | 2, _) => return None,
            _ => r.skip(wire)?,
        }
    }
    Some((t, v))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::decode::decode_protobuf_prost;
    use crate::proto::v1;
    use crate::Version;
    use proptest::prelude::*;
    use prost::Message;

    fn label_strategy() -> impl Strategy<Value = (String, String)> {
        (
            prop_oneof![Just("__name__".to_owned()), "[a-z_]{0,4}", "\\PC{0,3}"],
            prop_oneof!["[a-z0-9]{0,6}", "\\PC{0,4}"],
        )
    }

    fn request_strategy() -> impl Strategy<Value = v1::WriteRequest> {
        let sample = (any::<i64>(), any::<f64>());
        let series = (
            proptest::collection::vec(label_strategy(), 0..6),
            proptest::collection::vec(sample, 0..4),
        );
        proptest::collection::vec(series, 0..12).prop_map(|all| v1::WriteRequest {
            timeseries: all
                .into_iter()
                .map(|(labels, samples)| v1::TimeSeries {
                    labels: labels
                        .into_iter()
                        .map(|(name, value)| v1::Label { name, value })
                        .collect(),
                    samples: samples
                        .into_iter()
                        .map(|(timestamp, value)| v1::Sample { value, timestamp })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            metadata: Vec::new(),
        })
    }

    /// Both readers' outputs, comparable (NaN payloads by bits).
    fn normal(d: &DecodedWrite<RawSeries>) -> String {
        let series: Vec<_> = d
            .series
            .iter()
            .map(|s| {
                let samples: Vec<_> = s.samples.iter().map(|&(t, v)| (t, v.to_bits())).collect();
                (s.labels.clone(), samples)
            })
            .collect();
        format!(
            "{:?} {:?} {} {}",
            series, d.rejected, d.histograms, d.exemplars
        )
    }

    proptest! {
        #[test]
        fn agrees_with_prost_on_valid_requests(req in request_strategy()) {
            let raw = Bytes::from(req.encode_to_vec());
            let fast = decode(&raw).expect("a plain request takes the fast path");
            let slow = decode_protobuf_prost(Version::V1, raw).unwrap();
            prop_assert_eq!(normal(&fast), normal(&slow));
        }

        #[test]
        fn agrees_with_prost_on_mangled_requests(
            req in request_strategy(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = req.encode_to_vec();
            if bytes.is_empty() {
                return Ok(());
            }
            for (at, b) in flips {
                let n = bytes.len();
                bytes[at % n] = b;
            }
            let raw = Bytes::from(bytes);
            if let Some(fast) = decode(&raw) {
                let slow = decode_protobuf_prost(Version::V1, raw);
                prop_assert!(slow.is_ok(), "prost refused what the fast path took: {:?}", slow.as_ref().err());
                prop_assert_eq!(normal(&fast), normal(&slow.unwrap()));
            }
        }
    }

    #[test]
    fn leaves_a_key_over_u32_to_prost() {
        // Field 1 (a series), length 0, then a varint field whose key is
        // 2^32 + 16 and whose value is 0: its field number fits in 32 bits,
        // the key does not.
        let mut bytes = vec![0x0a, 0x00];
        bytes.extend_from_slice(&[0x90, 0x80, 0x80, 0x80, 0x10, 0x00]);
        let raw = Bytes::from(bytes);
        assert!(decode(&raw).is_none());
        assert!(decode_protobuf_prost(Version::V1, raw).is_err());
    }

    #[test]
    fn leaves_exemplars_histograms_and_bad_utf8_to_prost() {
        let with = |f: &dyn Fn(&mut v1::TimeSeries)| {
            let mut ts = v1::TimeSeries {
                labels: vec![v1::Label {
                    name: "__name__".into(),
                    value: "up".into(),
                }],
                samples: vec![v1::Sample {
                    value: 1.0,
                    timestamp: 5,
                }],
                ..Default::default()
            };
            f(&mut ts);
            Bytes::from(
                v1::WriteRequest {
                    timeseries: vec![ts],
                    metadata: Vec::new(),
                }
                .encode_to_vec(),
            )
        };
        assert!(decode(&with(&|_| {})).is_some());
        assert!(decode(&with(&|ts| ts.exemplars.push(Default::default()))).is_none());
        assert!(decode(&with(&|ts| ts.histograms.push(Default::default()))).is_none());
        let mut bad = v1::WriteRequest::default();
        bad.timeseries.push(v1::TimeSeries::default());
        let mut raw = bad.encode_to_vec();
        // A series whose label value is the invalid UTF-8 byte 0xff.
        raw = [
            raw,
            vec![0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, 0xff],
        ]
        .concat();
        assert!(decode(&Bytes::from(raw)).is_none());
    }
}
