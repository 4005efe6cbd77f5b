//! A chunk's bucket layout (schema, zero threshold, spans, custom bounds),
//! written once at its start.

use super::spans::span_total;
use super::types::{Span, CUSTOM_BUCKETS_SCHEMA};
use super::varbit::{put_varbit_int, put_varbit_uint, read_varbit_int, read_varbit_uint};
use crate::bits::{BitReader, BitWriter};
use crate::CodecError;

/// What every sample of a chunk shares.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub schema: i32,
    pub zero_threshold: f64,
    pub positive: Vec<Span>,
    pub negative: Vec<Span>,
    pub custom_values: Vec<f64>,
}

impl Layout {
    /// Number of positive and negative buckets.
    pub fn bucket_counts(&self) -> (usize, usize) {
        (span_total(&self.positive), span_total(&self.negative))
    }

    /// Whether `schema`, `zero_threshold` (bit for bit) and `custom_values`
    /// (bit for bit) are this layout's; spans are compared separately.
    pub fn same_frame(&self, schema: i32, zero_threshold: f64, custom_values: &[f64]) -> bool {
        self.schema == schema
            && self.zero_threshold.to_bits() == zero_threshold.to_bits()
            && self.custom_values.len() == custom_values.len()
            && self
                .custom_values
                .iter()
                .zip(custom_values)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }

    /// Appends the layout: zero threshold, schema, positive spans, negative
    /// spans, and the custom bounds if the schema is custom.
    pub fn write(&self, w: &mut BitWriter) {
        put_zero_threshold(w, self.zero_threshold);
        put_varbit_int(w, i64::from(self.schema));
        put_spans(w, &self.positive);
        put_spans(w, &self.negative);
        if self.schema == CUSTOM_BUCKETS_SCHEMA {
            put_custom_values(w, &self.custom_values);
        }
    }

    /// Reads a layout written by [`write`](Self::write). Every count is
    /// checked against the bits left before anything is allocated, and the
    /// buckets must leave room for at least one bit each after it (the first
    /// sample writes every bucket).
    pub fn read(r: &mut BitReader<'_>) -> Result<Self, CodecError> {
        let zero_threshold = read_zero_threshold(r);
        let schema = i32::try_from(read_varbit_int(r))
            .map_err(|_| CodecError::Corrupt("histogram schema out of range"))?;
        let positive = read_spans(r)?;
        let negative = read_spans(r)?;
        let custom_values = if schema == CUSTOM_BUCKETS_SCHEMA {
            read_custom_values(r)?
        } else {
            Vec::new()
        };
        if r.overrun() {
            return Err(CodecError::Truncated);
        }
        let layout = Self {
            schema,
            zero_threshold,
            positive,
            negative,
            custom_values,
        };
        let (p, n) = layout.bucket_counts();
        if (p as u64).saturating_add(n as u64) > r.remaining_bits() {
            return Err(CodecError::Truncated);
        }
        Ok(layout)
    }
}

/// Writes a zero threshold in one byte when it is 0 or a power of two
/// between 2^-243 and 2^10 (the usual choices), else in nine.
fn put_zero_threshold(w: &mut BitWriter, threshold: f64) {
    match zero_threshold_code(threshold) {
        Some(code) => w.write_byte(code),
        None => {
            w.write_byte(ZT_RAW);
            w.write_bits(threshold.to_bits(), 64);
        }
    }
}

fn read_zero_threshold(r: &mut BitReader<'_>) -> f64 {
    match r.read_byte() {
        ZT_RAW => f64::from_bits(r.read_bits(64)),
        code => zero_threshold_from_code(code),
    }
}

/// The code byte announcing a zero threshold written as its 64 bits.
pub(crate) const ZT_RAW: u8 = 0xFF;

/// Biased exponents of the powers of two with a one-byte code (the sign bit
/// is zero, so the top 12 bits are the biased exponent): 2^-243 ..= 2^10.
const ZT_MIN_EXP: u64 = 1023 - 243;
const ZT_MAX_EXP: u64 = 1023 + 10;
/// Code = biased exponent - this, so the range maps to 1..=254.
const ZT_EXP_BIAS: u64 = ZT_MIN_EXP - 1;

/// The one-byte code of a zero threshold: 0 for +0.0, 1..=254 for the powers
/// of two 2^-243 ..= 2^10 (Prometheus' default is 2^-128); `None` otherwise.
pub(crate) fn zero_threshold_code(threshold: f64) -> Option<u8> {
    let bits = threshold.to_bits();
    let biased_exp = bits >> 52;
    let mantissa = bits & ((1 << 52) - 1);
    if bits == 0 {
        Some(0)
    } else if mantissa == 0 && (ZT_MIN_EXP..=ZT_MAX_EXP).contains(&biased_exp) {
        Some((biased_exp - ZT_EXP_BIAS) as u8)
    } else {
        None
    }
}

/// Inverse of [`zero_threshold_code`] for codes other than [`ZT_RAW`].
pub(crate) fn zero_threshold_from_code(code: u8) -> f64 {
    match code {
        0 => 0.0,
        c => f64::from_bits((u64::from(c) + ZT_EXP_BIAS) << 52),
    }
}

fn put_spans(w: &mut BitWriter, spans: &[Span]) {
    put_varbit_uint(w, spans.len() as u64);
    for s in spans {
        put_varbit_uint(w, u64::from(s.length));
        put_varbit_int(w, i64::from(s.offset));
    }
}

fn read_spans(r: &mut BitReader<'_>) -> Result<Vec<Span>, CodecError> {
    let n = read_varbit_uint(r);
    // A span takes at least two bits.
    if n > r.remaining_bits() / 2 {
        return Err(CodecError::Truncated);
    }
    let mut spans = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let length = u32::try_from(read_varbit_uint(r))
            .map_err(|_| CodecError::Corrupt("span length out of range"))?;
        let offset = i32::try_from(read_varbit_int(r))
            .map_err(|_| CodecError::Corrupt("span offset out of range"))?;
        spans.push(Span { offset, length });
    }
    Ok(spans)
}

/// Custom bounds are mostly decimal fractions with few digits (0.005, 0.25,
/// 10): such a bound is written as the difference of its thousandths from
/// the previous one's, any other as its 64 bits.
fn put_custom_values(w: &mut BitWriter, values: &[f64]) {
    put_varbit_uint(w, values.len() as u64);
    let mut prev_milli = 0i64;
    for &v in values {
        match as_milli(v) {
            Some(m) => {
                w.write_bit(true);
                put_varbit_int(w, m.wrapping_sub(prev_milli));
                prev_milli = m;
            }
            None => {
                w.write_bit(false);
                w.write_bits(v.to_bits(), 64);
            }
        }
    }
}

fn read_custom_values(r: &mut BitReader<'_>) -> Result<Vec<f64>, CodecError> {
    let n = read_varbit_uint(r);
    // A bound takes at least two bits.
    if n > r.remaining_bits() / 2 {
        return Err(CodecError::Truncated);
    }
    let mut values = Vec::with_capacity(n as usize);
    let mut prev_milli = 0i64;
    for _ in 0..n {
        if r.read_bit() {
            prev_milli = prev_milli.wrapping_add(read_varbit_int(r));
            values.push(prev_milli as f64 / 1000.0);
        } else {
            values.push(f64::from_bits(r.read_bits(64)));
        }
    }
    Ok(values)
}

/// `v` in thousandths, when dividing that integer by 1000 gives back exactly
/// `v`'s bits.
pub(crate) fn as_milli(v: f64) -> Option<i64> {
    let m = v * 1000.0;
    // Integers up to 2^53 are exact in an f64; beyond, the raw form is as short.
    let exact = m.abs() < (1u64 << 53) as f64 && m.fract() == 0.0;
    if !exact {
        return None;
    }
    let m = m as i64;
    ((m as f64 / 1000.0).to_bits() == v.to_bits()).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(s: &[(i32, u32)]) -> Vec<Span> {
        s.iter().map(|&(o, l)| Span::new(o, l)).collect()
    }

    #[test]
    fn layout_round_trips() {
        for zt in [
            0.0,
            2f64.powi(-128),
            2f64.powi(10),
            2f64.powi(-243),
            0.001,
            -0.0,
            2f64.powi(11),
        ] {
            let l = Layout {
                schema: CUSTOM_BUCKETS_SCHEMA,
                zero_threshold: zt,
                positive: spans(&[(0, 3), (2, 1)]),
                negative: spans(&[(-5, 1)]),
                custom_values: vec![-1.5, 0.005, 0.01, 0.25, 1.0, 1e300, 0.1 + 0.2],
            };
            let mut w = BitWriter::new();
            l.write(&mut w);
            w.write_bits(0, 8);
            let got = Layout::read(&mut BitReader::new(w.bytes())).unwrap();
            assert_eq!(got.zero_threshold.to_bits(), zt.to_bits());
            assert_eq!(got.schema, l.schema);
            assert_eq!(got.positive, l.positive);
            assert_eq!(got.negative, l.negative);
            assert!(l.same_frame(got.schema, got.zero_threshold, &got.custom_values));
        }
    }
}
