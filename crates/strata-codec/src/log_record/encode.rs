//! A record's bytes written: versions 1 to 3, deltas and small integers as
//! varints, a CRC-32 trailer.

use super::{LogRecord, CRC_LEN, VERSION, VERSION_EXEMPLARS, VERSION_HISTOGRAMS};
use crate::histogram::encode_sample;
use crate::varint::{put_uvarint, put_uvarint_flagged, zigzag};

impl LogRecord {
    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let labels_len: usize = self
            .new_series
            .iter()
            .flat_map(|s| &s.labels)
            .map(|l| l.name.len() + l.value.len() + 4)
            .sum();
        out.reserve(
            1 + 20 + 12 * self.new_series.len() + labels_len + 14 * self.samples.len() + CRC_LEN,
        );

        let version = if !self.histograms.is_empty() {
            VERSION_HISTOGRAMS
        } else if !self.exemplars.is_empty() {
            VERSION_EXEMPLARS
        } else {
            VERSION
        };
        out.push(version);
        put_uvarint(out, self.new_series.len() as u64);
        let mut prev_id = 0u64;
        for s in &self.new_series {
            put_uvarint(out, zigzag(s.id.wrapping_sub(prev_id) as i64));
            prev_id = s.id;
            put_uvarint(out, s.labels.len() as u64);
            for l in &s.labels {
                put_str(out, &l.name);
                put_str(out, &l.value);
            }
        }

        put_uvarint(out, self.samples.len() as u64);
        let (mut prev_series, mut prev_t) = (0u64, 0i64);
        for s in &self.samples {
            put_uvarint(out, zigzag(s.series.wrapping_sub(prev_series) as i64));
            prev_series = s.series;
            let dt = zigzag(s.t.wrapping_sub(prev_t));
            prev_t = s.t;
            match small_int(s.v) {
                Some(i) => {
                    put_uvarint_flagged(out, dt, true);
                    put_uvarint(out, zigzag(i));
                }
                None => {
                    put_uvarint_flagged(out, dt, false);
                    out.extend_from_slice(&s.v.to_bits().to_be_bytes());
                }
            }
        }

        if version != VERSION {
            put_uvarint(out, self.exemplars.len() as u64);
            let (mut prev_series, mut prev_t) = (0u64, 0i64);
            for e in &self.exemplars {
                put_uvarint(out, zigzag(e.series.wrapping_sub(prev_series) as i64));
                prev_series = e.series;
                e.exemplar.encode(prev_t, out);
                prev_t = e.exemplar.t;
            }
        }
        if version == VERSION_HISTOGRAMS {
            put_uvarint(out, self.histograms.len() as u64);
            let (mut prev_series, mut prev_t) = (0u64, 0i64);
            for h in &self.histograms {
                put_uvarint(out, zigzag(h.series.wrapping_sub(prev_series) as i64));
                prev_series = h.series;
                put_uvarint(out, zigzag(h.t.wrapping_sub(prev_t)));
                prev_t = h.t;
                encode_sample(&h.h, out);
            }
        }

        let crc = crc32fast::hash(out.get(start..).unwrap_or_default());
        out.extend_from_slice(&crc.to_be_bytes());
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uvarint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// `v` as an integer when that integer converts back to exactly `v` and its
/// varint is shorter than 8 raw bytes; never for -0.0 or NaN.
#[inline(always)]
pub(crate) fn small_int(v: f64) -> Option<i64> {
    let i = v as i64;
    // `as` saturates and maps NaN to 0, so the comparison rejects those;
    // -0.0 compares equal to 0 and needs its own check.
    let exact = i as f64 == v && (i != 0 || v.to_bits() == 0);
    (exact && zigzag(i) < 1 << 49).then_some(i)
}
