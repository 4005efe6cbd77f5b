//! One histogram sample in the compact byte form the write-ahead log
//! stores: the histogram only, since the log record already carries the
//! series and the timestamp of each sample.
//!
//! Layout (drawn in `docs/format.md`): a flags byte (counter-reset hint,
//! form, stale), then, unless stale, the schema, the zero threshold's code,
//! the counts, the sum's 8 bytes, each side's spans and buckets, and the
//! custom bounds. Varints are LEB128; signed ones are zig-zag mapped.

use super::layout::{as_milli, zero_threshold_code, zero_threshold_from_code, ZT_RAW};
use super::spans::span_total;
use super::types::{CounterResetHint, FloatHistogram, Histogram, Span, CUSTOM_BUCKETS_SCHEMA};
use crate::log_record::small_int;
use crate::varint::{put_uvarint, put_uvarint_flagged, unzigzag, zigzag, Decbuf};
use crate::CodecError;

/// Flags bit: the counts are `f64` ([`FloatHistogram`]).
const FLOAT: u8 = 1 << 2;
/// Flags bit: a stale marker, and nothing follows the flags.
const STALE: u8 = 1 << 3;
/// Flags bits that must be zero.
const RESERVED: u8 = 0xF0;

/// Appends `h` in its log form. A stale marker takes one byte.
pub fn encode_histogram_sample(h: &Histogram, out: &mut Vec<u8>) {
    if put_flags(out, h.counter_reset_hint, false, h.is_stale()) {
        return;
    }
    put_frame(out, h.schema, h.zero_threshold);
    put_uvarint(out, h.count);
    put_uvarint(out, h.zero_count);
    out.extend_from_slice(&h.sum.to_bits().to_be_bytes());
    for (spans, buckets) in [
        (&h.positive_spans, &h.positive_buckets),
        (&h.negative_spans, &h.negative_buckets),
    ] {
        put_spans(out, spans);
        for &b in buckets {
            put_uvarint(out, zigzag(b));
        }
    }
    put_custom_values(out, h.schema, &h.custom_values);
}

/// Appends `h` in its log form. Counts that are small integers take a
/// varint, others their 8 bytes.
pub fn encode_float_histogram_sample(h: &FloatHistogram, out: &mut Vec<u8>) {
    if put_flags(out, h.counter_reset_hint, true, h.is_stale()) {
        return;
    }
    put_frame(out, h.schema, h.zero_threshold);
    put_float(out, h.count);
    put_float(out, h.zero_count);
    out.extend_from_slice(&h.sum.to_bits().to_be_bytes());
    for (spans, buckets) in [
        (&h.positive_spans, &h.positive_buckets),
        (&h.negative_spans, &h.negative_buckets),
    ] {
        put_spans(out, spans);
        for &b in buckets {
            put_float(out, b);
        }
    }
    put_custom_values(out, h.schema, &h.custom_values);
}

/// Reads one integer histogram sample written by
/// [`encode_histogram_sample`] from `d`, leaving it after the sample. Bucket
/// and span counts are checked against the bytes left before anything is
/// allocated.
pub fn decode_histogram_sample(d: &mut Decbuf<'_>) -> Result<Histogram, CodecError> {
    let Some(hint) = read_flags(d, false)? else {
        return Ok(Histogram::stale_marker());
    };
    let (schema, zero_threshold) = read_frame(d);
    let count = d.uvarint();
    let zero_count = d.uvarint();
    let sum = f64::from_bits(d.be_u64());
    // A bucket takes at least one byte.
    let positive_spans = read_spans(d);
    let positive_buckets = read_buckets(d, &positive_spans, |d| unzigzag(d.uvarint()));
    let negative_spans = read_spans(d);
    let negative_buckets = read_buckets(d, &negative_spans, |d| unzigzag(d.uvarint()));
    let custom_values = read_custom_values(d, schema);
    d.check()?;
    Ok(Histogram {
        schema,
        zero_threshold,
        zero_count,
        count,
        sum,
        positive_spans,
        positive_buckets,
        negative_spans,
        negative_buckets,
        custom_values,
        counter_reset_hint: hint,
    })
}

/// Reads one float histogram sample written by
/// [`encode_float_histogram_sample`] from `d`, leaving it after the sample.
pub fn decode_float_histogram_sample(d: &mut Decbuf<'_>) -> Result<FloatHistogram, CodecError> {
    let Some(hint) = read_flags(d, true)? else {
        return Ok(FloatHistogram::stale_marker());
    };
    let (schema, zero_threshold) = read_frame(d);
    let count = read_float(d);
    let zero_count = read_float(d);
    let sum = f64::from_bits(d.be_u64());
    let positive_spans = read_spans(d);
    let positive_buckets = read_buckets(d, &positive_spans, read_float);
    let negative_spans = read_spans(d);
    let negative_buckets = read_buckets(d, &negative_spans, read_float);
    let custom_values = read_custom_values(d, schema);
    d.check()?;
    Ok(FloatHistogram {
        schema,
        zero_threshold,
        zero_count,
        count,
        sum,
        positive_spans,
        positive_buckets,
        negative_spans,
        negative_buckets,
        custom_values,
        counter_reset_hint: hint,
    })
}

/// Appends a sample of either form in its log form (its flags byte says
/// which).
pub fn encode_sample(s: &super::HistogramSample, out: &mut Vec<u8>) {
    match s {
        super::HistogramSample::Int(h) => encode_histogram_sample(h, out),
        super::HistogramSample::Float(h) => encode_float_histogram_sample(h, out),
    }
}

/// Reads a sample written by [`encode_sample`], in the form it was written.
pub fn decode_sample(d: &mut Decbuf<'_>) -> Result<super::HistogramSample, CodecError> {
    let float = d.rest().first().is_some_and(|&flags| flags & FLOAT != 0);
    if float {
        decode_float_histogram_sample(d).map(super::HistogramSample::Float)
    } else {
        decode_histogram_sample(d).map(super::HistogramSample::Int)
    }
}

/// Writes the flags byte; true if the sample is stale and thus complete.
fn put_flags(out: &mut Vec<u8>, hint: CounterResetHint, float: bool, stale: bool) -> bool {
    let hint_bits = match hint {
        CounterResetHint::Unknown => 0,
        CounterResetHint::NotReset => 1,
        CounterResetHint::Reset => 2,
        CounterResetHint::Gauge => 3,
    };
    let mut flags = hint_bits;
    if float {
        flags |= FLOAT;
    }
    if stale {
        flags = STALE | (flags & FLOAT);
    }
    out.push(flags);
    stale
}

/// The hint, or `None` for a stale marker.
fn read_flags(d: &mut Decbuf<'_>, float: bool) -> Result<Option<CounterResetHint>, CodecError> {
    let flags = d.byte();
    d.check()?;
    if flags & RESERVED != 0 {
        return Err(CodecError::Corrupt("histogram sample flags"));
    }
    if (flags & FLOAT != 0) != float {
        return Err(CodecError::Corrupt("histogram sample of the other form"));
    }
    if flags & STALE != 0 {
        return Ok(None);
    }
    Ok(Some(match flags & 0b11 {
        1 => CounterResetHint::NotReset,
        2 => CounterResetHint::Reset,
        3 => CounterResetHint::Gauge,
        _ => CounterResetHint::Unknown,
    }))
}

fn put_frame(out: &mut Vec<u8>, schema: i32, zero_threshold: f64) {
    put_uvarint(out, zigzag(i64::from(schema)));
    match zero_threshold_code(zero_threshold) {
        Some(code) => out.push(code),
        None => {
            out.push(ZT_RAW);
            out.extend_from_slice(&zero_threshold.to_bits().to_be_bytes());
        }
    }
}

fn read_frame(d: &mut Decbuf<'_>) -> (i32, f64) {
    let schema = i32::try_from(unzigzag(d.uvarint())).unwrap_or_else(|_| {
        d.fail(CodecError::Corrupt("histogram schema out of range"));
        0
    });
    let zero_threshold = match d.byte() {
        ZT_RAW => f64::from_bits(d.be_u64()),
        code => zero_threshold_from_code(code),
    };
    (schema, zero_threshold)
}

fn put_spans(out: &mut Vec<u8>, spans: &[Span]) {
    put_uvarint(out, spans.len() as u64);
    for s in spans {
        put_uvarint(out, zigzag(i64::from(s.offset)));
        put_uvarint(out, u64::from(s.length));
    }
}

fn read_spans(d: &mut Decbuf<'_>) -> Vec<Span> {
    // A span takes at least two bytes.
    let n = d.length_prefix(2);
    let mut spans = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = i32::try_from(unzigzag(d.uvarint()));
        let length = u32::try_from(d.uvarint());
        match (offset, length) {
            (Ok(offset), Ok(length)) => spans.push(Span { offset, length }),
            _ => {
                d.fail(CodecError::Corrupt("span out of range"));
                break;
            }
        }
    }
    spans
}

/// Reads as many buckets as the spans announce, each taking at least one
/// byte, refusing the count if fewer bytes are left.
fn read_buckets<T>(
    d: &mut Decbuf<'_>,
    spans: &[Span],
    mut read: impl FnMut(&mut Decbuf<'_>) -> T,
) -> Vec<T> {
    let n = span_total(spans);
    if n > d.remaining() {
        d.fail(CodecError::Truncated);
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(read(d));
    }
    out
}

/// Custom bounds as the chunk layout writes them (see `layout.rs`): a bound
/// with few decimals as the change of its thousandths since the previous
/// such bound, in a flagged varint; any other as a zero varint flag and its
/// 8 bytes.
fn put_custom_values(out: &mut Vec<u8>, schema: i32, values: &[f64]) {
    if schema != CUSTOM_BUCKETS_SCHEMA {
        return;
    }
    put_uvarint(out, values.len() as u64);
    let mut prev_milli = 0i64;
    for &v in values {
        match as_milli(v) {
            Some(m) => {
                put_uvarint_flagged(out, zigzag(m.wrapping_sub(prev_milli)), true);
                prev_milli = m;
            }
            None => {
                out.push(0);
                out.extend_from_slice(&v.to_bits().to_be_bytes());
            }
        }
    }
}

fn read_custom_values(d: &mut Decbuf<'_>, schema: i32) -> Vec<f64> {
    if schema != CUSTOM_BUCKETS_SCHEMA {
        return Vec::new();
    }
    // A bound takes at least one byte.
    let n = d.length_prefix(1);
    let mut values = Vec::with_capacity(n);
    let mut prev_milli = 0i64;
    for _ in 0..n {
        let v = match d.uvarint_flagged() {
            (m, true) => {
                prev_milli = prev_milli.wrapping_add(unzigzag(m));
                prev_milli as f64 / 1000.0
            }
            (0, false) => f64::from_bits(d.be_u64()),
            _ => {
                d.fail(CodecError::Corrupt("custom bound in histogram sample"));
                break;
            }
        };
        values.push(v);
    }
    values
}

/// A float as a flagged varint: a small integer as its zig-zag value, any
/// other value as a zero varint flag and its 8 bytes.
fn put_float(out: &mut Vec<u8>, v: f64) {
    match small_int(v) {
        Some(i) => put_uvarint_flagged(out, zigzag(i), true),
        None => {
            out.push(0);
            out.extend_from_slice(&v.to_bits().to_be_bytes());
        }
    }
}

fn read_float(d: &mut Decbuf<'_>) -> f64 {
    match d.uvarint_flagged() {
        (i, true) => unzigzag(i) as f64,
        (0, false) => f64::from_bits(d.be_u64()),
        _ => {
            d.fail(CodecError::Corrupt("float in histogram sample"));
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{hist, nhcb_durations, request_durations};
    use super::super::*;
    use crate::varint::Decbuf;

    #[test]
    fn log_samples_round_trip() {
        let mut samples: Vec<Histogram> = request_durations()
            .into_iter()
            .map(|(_, h)| h)
            .take(3)
            .collect();
        samples.extend(nhcb_durations().into_iter().map(|(_, h)| h).take(2));
        let mut odd = hist(-4, &[(-1000, 1)], &[(7, 2)], 9, f64::NAN);
        odd.zero_threshold = 0.3;
        odd.counter_reset_hint = CounterResetHint::Gauge;
        samples.push(odd);
        samples.push(Histogram::stale_marker());
        let mut out = Vec::new();
        for h in &samples {
            encode_histogram_sample(h, &mut out);
        }
        assert_eq!(out.last(), Some(&(1 << 3)));
        let mut d = Decbuf::new(&out);
        for h in &samples {
            let got = decode_histogram_sample(&mut d).unwrap();
            assert!(got.bit_eq(h), "{got:?} != {h:?}");
        }
        assert_eq!(d.remaining(), 0);

        let floats: Vec<FloatHistogram> = samples
            .iter()
            .map(|h| {
                let mut f = h.to_float();
                f.sum = h.sum;
                if let Some(b) = f.positive_buckets.first_mut() {
                    *b += 0.25;
                }
                f
            })
            .collect();
        let mut out = Vec::new();
        for h in &floats {
            encode_float_histogram_sample(h, &mut out);
        }
        let mut d = Decbuf::new(&out);
        for h in &floats {
            assert!(decode_float_histogram_sample(&mut d).unwrap().bit_eq(h));
        }
        assert!(decode_histogram_sample(&mut Decbuf::new(&out)).is_err());
    }

    #[test]
    fn truncated_log_samples_are_errors() {
        let h = &request_durations()[7].1;
        let mut out = Vec::new();
        encode_histogram_sample(h, &mut out);
        assert!(out.len() < 60, "{} bytes", out.len());
        for cut in 0..out.len() {
            assert!(
                decode_histogram_sample(&mut Decbuf::new(&out[..cut])).is_err(),
                "cut at {cut}"
            );
        }
    }
}
