//! The head's open chunk: Gorilla's timestamps, and values as the change of
//! their decimal mantissa where they have one.
//!
//! Most exported values are decimals: counters of seconds or bytes, gauges
//! with a few digits. Gorilla XORs a value's bits with the previous value's,
//! and for `12345.67` after `12340.12` that leaves some thirty meaningful
//! bits. Here such a value is its mantissa at a decimal exponent the chunk
//! keeps (`1234567` at 2), written as the change from the previous one's:
//! ten bits for a change within ±64, eighteen within ±8192. On node_exporter
//! pages scraped by vmagent that halves an open chunk's bytes (about 1 byte
//! a sample against 2.2). Values without a decimal form, and changes that
//! XOR writes shorter, are XOR-coded as in Gorilla.
//!
//! Never stored: the head freezes and seals its chunks in the sealed format
//! (`crate::sealed`), and a stored chunk that is not sealed is a Gorilla
//! chunk ([`super::XorChunk`]). `docs/format.md` draws the layout.
//!
//! Layout: the 4-byte big-endian sample count of a Gorilla chunk, then per
//! sample its timestamp exactly as Gorilla writes it (the first whole, the
//! second as a delta, then delta-of-deltas) and its value:
//!
//! ```text
//! first value   64 bits, whole
//! 0             the previous value, bit for bit
//! 10 <change>   the mantissa at the exponent moved by the change:
//!               0 + 7 bits, 10 + 14 bits, 110 + 28 bits, 111 + 64 bits
//! 11 0 <bits>   XOR with the previous value, in its window of meaningful bits
//! 11 1 <5> <6>  XOR with a new window: leading zeros, width, then the bits
//! ```
//!
//! The exponent starts at 0. After the first value and after each one
//! XOR-coded, both encoder and decoder settle it the same way from the
//! value (see `settle`): the value's mantissa at the exponent if it has
//! one; otherwise the smallest exponent it has one at; and a finite,
//! non-zero value with none at all leaves the rest of the chunk to XOR.

use super::read::{read_dod, read_uvarint};
use super::{bucket_value, decode_appending, dod_code, fits_bucket, RangeOut, HEADER_LEN};
use crate::bits::{push_bits, reserve_quarter, BitReader};
use crate::sealed::decimal::{mantissa, min_exponent, value, POW10};
use crate::varint::{unzigzag, zigzag, Decbuf};
use crate::CodecError;

/// Upper bound on the bytes one append adds: a 64-bit delta-of-delta with
/// its prefix, and an XOR-coded value with a new window (4 + 64 + 2 + 1 +
/// 11 + 64 bits); the first sample's 10-byte varint and 8 bytes are fewer.
const MAX_SAMPLE_BYTES: usize = 19;

/// `exp` once a value without any decimal form was seen: XOR from then on.
const NO_EXP: u8 = 0xFF;

/// `m` when the previous value has no mantissa at the exponent. Mantissas
/// are below 2^53 in magnitude, so it is never one.
const NO_MANTISSA: i64 = i64::MIN;

/// `leading` before the first XOR: no window to reuse yet.
const NO_WINDOW: u8 = 0xFF;

/// The change of a mantissa after the code `10`: (prefix, prefix length,
/// payload width), the last written whole.
const CHANGE_BUCKETS: [(u64, u32, u32); 4] =
    [(0b0, 1, 7), (0b10, 2, 14), (0b110, 3, 28), (0b111, 3, 64)];

/// An open chunk of the head that samples are appended to in place.
///
/// [`bytes`](Self::bytes) are a complete chunk after every append, read
/// by [`decode_tail_range_into`]. Appends take strictly increasing
/// timestamps; any `i64` timestamps and any `f64` values are stored
/// exactly. At most [`XorChunk::MAX_SAMPLES`](super::XorChunk::MAX_SAMPLES)
/// samples.
///
/// 64 bytes inline: the writer's buffer and its free bits are fields of
/// their own rather than a `BitWriter`, whose padding would take 8 more.
#[derive(Clone, Debug)]
pub struct TailChunk {
    bytes: Vec<u8>,
    t: i64,
    t_delta: u64,
    v_bits: u64,
    /// The last value's mantissa at `exp`, or [`NO_MANTISSA`].
    m: i64,
    /// Unused low bits of the last byte.
    free: u8,
    leading: u8,
    trailing: u8,
    /// The decimal exponent values are coded at, or [`NO_EXP`].
    exp: u8,
}

impl Default for TailChunk {
    fn default() -> Self {
        Self::new()
    }
}

/// After the first value, or one XOR-coded: the mantissa of `v` at `exp`;
/// if it has none there, `exp` moves to the smallest exponent it has one
/// at, or to [`NO_EXP`] for a finite non-zero value with no decimal form.
/// Stale markers and other NaNs, infinities and `-0.0` only clear the
/// mantissa: the values after them still have the exponent.
#[inline]
fn settle(exp: &mut u8, m: &mut i64, v: f64) {
    if *exp == NO_EXP {
        return;
    }
    if let Some(k) = mantissa(v, *exp) {
        *m = k;
        return;
    }
    *m = NO_MANTISSA;
    if !v.is_finite() || v == 0.0 {
        return;
    }
    match min_exponent(v) {
        Some(e) => {
            *exp = e;
            *m = mantissa(v, e).unwrap_or(NO_MANTISSA);
        }
        None => *exp = NO_EXP,
    }
}

/// The bucket a mantissa's change goes in: (prefix, prefix length, width).
#[inline]
fn change_bucket(d: i64) -> (u64, u32, u32) {
    for b in CHANGE_BUCKETS {
        if b.2 == 64 || fits_bucket(d, b.2) {
            return b;
        }
    }
    (0b111, 3, 64)
}

impl TailChunk {
    /// An empty chunk: its bytes are the header with a count of 0.
    pub fn new() -> Self {
        Self {
            bytes: vec![0; HEADER_LEN],
            t: 0,
            t_delta: 0,
            v_bits: 0,
            m: NO_MANTISSA,
            free: 0,
            leading: NO_WINDOW,
            trailing: 0,
            exp: 0,
        }
    }

    #[inline]
    fn put(&mut self, v: u64, n: u32) {
        push_bits(&mut self.bytes, &mut self.free, v, n);
    }

    /// Appends a sample. The caller guarantees `t` is greater than the last
    /// appended timestamp (checked only in debug builds). Once the chunk
    /// holds [`XorChunk::MAX_SAMPLES`](super::XorChunk::MAX_SAMPLES)
    /// samples, further appends are ignored.
    pub fn append(&mut self, t: i64, v: f64) {
        let count = self.len();
        debug_assert!(count == 0 || t > self.t, "timestamps must increase");
        if count >= super::XorChunk::MAX_SAMPLES {
            debug_assert!(false, "chunk is full");
            return;
        }
        reserve_quarter(&mut self.bytes, MAX_SAMPLE_BYTES);
        let v_bits = v.to_bits();
        match count {
            0 => {
                self.put_uvarint(zigzag(t));
                self.put(v_bits, 64);
                self.v_bits = v_bits;
                settle(&mut self.exp, &mut self.m, v);
            }
            1 => {
                // Timestamps increase, so the wrapping difference is the true
                // (unsigned) distance even across the whole i64 range.
                let delta = t.wrapping_sub(self.t) as u64;
                self.put_uvarint(delta);
                self.write_value(v_bits);
                self.t_delta = delta;
            }
            _ => {
                let delta = t.wrapping_sub(self.t) as u64;
                let [(a, a_len), (b, b_len)] = dod_code(delta.wrapping_sub(self.t_delta) as i64);
                self.put(a, a_len);
                self.put(b, b_len);
                self.write_value(v_bits);
                self.t_delta = delta;
            }
        }
        self.t = t;
        if let Some(header) = self.bytes.first_chunk_mut::<HEADER_LEN>() {
            *header = (count + 1).to_be_bytes();
        }
    }

    fn put_uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put(v & 0x7F | 0x80, 8);
            v >>= 7;
        }
        self.put(v, 8);
    }

    fn write_value(&mut self, v_bits: u64) {
        let xor = v_bits ^ self.v_bits;
        self.v_bits = v_bits;
        if xor == 0 {
            self.put(0, 1);
            return;
        }
        let leading = (xor.leading_zeros() as u8).min(31);
        let trailing = xor.trailing_zeros() as u8;
        let reuse =
            self.leading != NO_WINDOW && leading >= self.leading && trailing >= self.trailing;
        let xor_len = if reuse {
            1 + 64 - u32::from(self.leading) - u32::from(self.trailing)
        } else {
            1 + 11 + 64 - u32::from(leading) - u32::from(trailing)
        };
        if self.m != NO_MANTISSA {
            if let Some(k) = mantissa(f64::from_bits(v_bits), self.exp) {
                // Both below 2^53 in magnitude: no overflow.
                let d = k.wrapping_sub(self.m);
                let (prefix, prefix_len, width) = change_bucket(d);
                if prefix_len + width <= xor_len {
                    self.put(0b10, 2);
                    self.put(prefix, prefix_len);
                    self.put(d as u64, width);
                    self.m = k;
                    return;
                }
            }
        }
        self.put(0b11, 2);
        if reuse {
            self.put(0, 1);
            let sig = 64 - u32::from(self.leading) - u32::from(self.trailing);
            self.put(xor >> self.trailing, sig);
        } else {
            self.leading = leading;
            self.trailing = trailing;
            // `sig` is 1..=64 because xor != 0; 64 does not fit 6 bits and
            // is written as 0, which cannot otherwise occur.
            let sig = 64 - u32::from(leading) - u32::from(trailing);
            self.put(1, 1);
            self.put(u64::from(leading), 5);
            self.put(u64::from(sig), 6);
            self.put(xor >> trailing, sig);
        }
        settle(&mut self.exp, &mut self.m, f64::from_bits(v_bits));
    }

    /// Number of samples appended.
    pub fn len(&self) -> u32 {
        self.bytes
            .first_chunk::<HEADER_LEN>()
            .map_or(0, |h| u32::from_be_bytes(*h))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The complete chunk: header and bit stream, unused bits zero.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Timestamp of the first sample.
    pub fn first_t(&self) -> Option<i64> {
        let first = self.bytes.get(HEADER_LEN..)?;
        (!self.is_empty()).then(|| unzigzag(Decbuf::new(first).uvarint()))
    }

    /// Timestamp of the last sample, the bound for the next append.
    pub fn last_t(&self) -> Option<i64> {
        (!self.is_empty()).then_some(self.t)
    }

    /// Heap bytes held (the buffer's capacity), for head-memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// The decoding state of a tail chunk.
struct Decoder<'a> {
    r: BitReader<'a>,
    total: u32,
    read: u32,
    t: i64,
    t_delta: u64,
    v_bits: u64,
    m: i64,
    leading: u32,
    trailing: u32,
    exp: u8,
}

impl<'a> Decoder<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let (header, body) = bytes
            .split_first_chunk::<HEADER_LEN>()
            .ok_or(CodecError::Truncated)?;
        Ok(Self {
            r: BitReader::new(body),
            total: u32::from_be_bytes(*header),
            read: 0,
            t: 0,
            t_delta: 0,
            v_bits: 0,
            m: NO_MANTISSA,
            leading: 0,
            trailing: 0,
            exp: 0,
        })
    }

    /// At most as many samples as the bits present allow (every sample
    /// after the first takes at least two).
    fn capacity_hint(&self) -> usize {
        let left = u64::from(self.total - self.read);
        let bound = 1 + self.r.remaining_bits() / 2;
        usize::try_from(left.min(bound)).unwrap_or(usize::MAX)
    }

    fn fail(&self, e: &'static str) -> CodecError {
        if self.r.overrun() {
            CodecError::Truncated
        } else {
            CodecError::Corrupt(e)
        }
    }

    /// Reads the next sample into `t` and `v_bits`; the caller checks
    /// `read < total`.
    #[inline(always)]
    fn next(&mut self) -> Result<(), CodecError> {
        match self.read {
            0 => {
                self.t = unzigzag(read_uvarint(&mut self.r)?);
                self.v_bits = self.r.read_bits(64);
                settle(&mut self.exp, &mut self.m, f64::from_bits(self.v_bits));
            }
            1 => {
                let delta = read_uvarint(&mut self.r)?;
                self.advance(delta)?;
                self.read_value()?;
            }
            _ => self.read_dod_sample()?,
        }
        self.read += 1;
        if self.r.overrun() {
            return Err(CodecError::Truncated);
        }
        Ok(())
    }

    /// A sample after the second: its delta-of-delta and value.
    #[inline(always)]
    fn read_dod_sample(&mut self) -> Result<(), CodecError> {
        let dod = read_dod(&mut self.r);
        self.advance(self.t_delta.wrapping_add(dod as u64))?;
        self.read_value()
    }

    #[inline(always)]
    fn advance(&mut self, delta: u64) -> Result<(), CodecError> {
        let t = self.t.wrapping_add(delta as i64);
        if t <= self.t {
            return Err(self.fail("timestamps do not increase"));
        }
        self.t = t;
        self.t_delta = delta;
        Ok(())
    }

    #[inline(always)]
    fn read_value(&mut self) -> Result<(), CodecError> {
        let r = &mut self.r;
        r.refill();
        let w = r.peek_word();
        if w >> 63 == 0 {
            r.skip(1);
            return Ok(());
        }
        if (w >> 62) & 1 == 0 {
            // `10`: the mantissa's change. At most 5 of the 56 buffered
            // bits are the codes, so a payload up to 28 bits is there too.
            let ones = (!(w << 2)).leading_zeros().min(3);
            let (prefix_len, width) = match ones {
                0 => (1, 7),
                1 => (2, 14),
                2 => (3, 28),
                _ => (3, 64),
            };
            r.skip(2 + prefix_len);
            let d = if width == 64 {
                r.read_bits(64) as i64
            } else {
                bucket_value(r.take(width), width)
            };
            let scale = POW10.get(usize::from(self.exp)).copied();
            let (Some(scale), false) = (scale, self.m == NO_MANTISSA) else {
                return Err(self.fail("a mantissa's change without a mantissa"));
            };
            self.m = self.m.wrapping_add(d);
            self.v_bits = value(self.m, scale).to_bits();
            return Ok(());
        }
        // `11`: XOR, in the previous window or a new one.
        if (w >> 61) & 1 == 1 {
            let c = (w >> 50) & 0x7FF;
            r.skip(3 + 11);
            let leading = ((c >> 6) & 31) as u32;
            let sig = match (c & 63) as u32 {
                0 => 64,
                n => n,
            };
            if leading + sig > 64 {
                return Err(self.fail("value window exceeds 64 bits"));
            }
            self.leading = leading;
            self.trailing = 64 - leading - sig;
        } else {
            r.skip(3);
        }
        let r = &mut self.r;
        let sig = 64 - self.leading - self.trailing;
        let bits = r.read_bits(sig);
        // `trailing` <= 63: a window holds at least one bit.
        self.v_bits ^= bits << self.trailing;
        settle(&mut self.exp, &mut self.m, f64::from_bits(self.v_bits));
        Ok(())
    }
}

/// Appends the samples of the tail chunk in `bytes` whose timestamps lie in
/// `[mint, maxt]` to `ts` and `vs`. On error nothing is appended.
pub fn decode_tail_range_into(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<(), CodecError> {
    let d = Decoder::new(bytes)?;
    decode_appending(d.capacity_hint(), ts, vs, |t_out, v_out| {
        decode_slices(d, mint, maxt, t_out, v_out)
    })
}

/// Writes the samples of the tail chunk in `bytes` whose timestamps lie in
/// `[mint, maxt]` to the front of `t_out` and `v_out`, returning how many.
/// Errors if the chunk is corrupt or holds more such samples than the
/// slices have room for.
pub fn decode_tail_range_to_slices(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    t_out: &mut [i64],
    v_out: &mut [f64],
) -> Result<usize, CodecError> {
    decode_slices(Decoder::new(bytes)?, mint, maxt, t_out, v_out)
}

fn decode_slices(
    mut d: Decoder<'_>,
    mint: i64,
    maxt: i64,
    t_out: &mut [i64],
    v_out: &mut [f64],
) -> Result<usize, CodecError> {
    let mut out = RangeOut {
        mint,
        maxt,
        t_out,
        v_out,
        k: 0,
    };
    // The first two samples have their own encodings; the loop below only
    // sees delta-of-delta samples.
    while d.read < d.total.min(2) {
        d.next()?;
        if !out.push(d.t, d.v_bits)? {
            return Ok(out.k);
        }
    }
    while d.read < d.total {
        d.read_dod_sample()?;
        d.read += 1;
        if d.r.overrun() {
            return Err(CodecError::Truncated);
        }
        if !out.push(d.t, d.v_bits)? {
            break;
        }
    }
    Ok(out.k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::XorChunk;

    fn encode(samples: &[(i64, f64)]) -> TailChunk {
        let mut c = TailChunk::new();
        for &(t, v) in samples {
            c.append(t, v);
        }
        c
    }

    fn decoded(bytes: &[u8], mint: i64, maxt: i64) -> Vec<(i64, u64)> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        decode_tail_range_into(bytes, mint, maxt, &mut ts, &mut vs).unwrap();
        ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
    }

    fn bits(samples: &[(i64, f64)]) -> Vec<(i64, u64)> {
        samples.iter().map(|&(t, v)| (t, v.to_bits())).collect()
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn fits_a_chunk_entry() {
        assert_eq!(std::mem::size_of::<TailChunk>(), 64);
    }

    #[test]
    fn every_kind_of_value_round_trips_bit_for_bit() {
        let stale = f64::from_bits(0x7ff0_0000_0000_0002);
        let values = [
            0.0,
            -0.0,
            1.0,
            12_345.67,
            12_350.12,
            12_350.12,
            stale,
            12_360.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            -f64::MAX,
            1.0 / 3.0,
            0.1 + 0.2,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            -7.25,
            1e-300,
            123_456_789.123_456,
            42.0,
        ];
        // Every ordered pair, so each value follows each other once.
        let mut samples = Vec::new();
        let mut t = -5_000_000_000_000i64;
        for a in values {
            for b in values {
                for v in [a, b] {
                    samples.push((t, v));
                    t += 15_000;
                }
            }
        }
        let c = encode(&samples);
        assert_eq!(c.len() as usize, samples.len());
        assert_eq!(decoded(c.bytes(), i64::MIN, i64::MAX), bits(&samples));
        assert_eq!(c.first_t(), Some(samples[0].0));
        assert_eq!(c.last_t(), samples.last().map(|s| s.0));
    }

    #[test]
    fn random_series_round_trip_and_ranges_cut() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            let n = 1 + (rng.next() % 400) as usize;
            let kind = round % 6;
            let mut t = (rng.next() as i64) >> 20;
            let mut counter = (rng.next() % 1_000_000) as f64 / 100.0;
            let mut samples = Vec::with_capacity(n);
            for i in 0..n {
                t += match rng.next() % 8 {
                    0 => 1,
                    1 => (rng.next() % 1_000_000) as i64 + 1,
                    _ => 15_000 + (rng.next() % 7) as i64 - 3,
                };
                let v = match kind {
                    0 => {
                        counter += (rng.next() % 500) as f64 / 100.0;
                        counter
                    }
                    1 => f64::from_bits(rng.next()),
                    2 => (rng.next() % 10) as f64,
                    3 => (rng.next() % 1_000_000_000_000) as f64 * 4096.0,
                    4 if i % 17 == 0 => f64::from_bits(0x7ff0_0000_0000_0002),
                    4 => (rng.next() % 100_000) as f64 / 1000.0,
                    _ => ((rng.next() % 1000) as f64).sqrt(),
                };
                samples.push((t, v));
            }
            let c = encode(&samples);
            let want = bits(&samples);
            assert_eq!(
                decoded(c.bytes(), i64::MIN, i64::MAX),
                want,
                "round {round}"
            );
            let (lo, hi) = (samples[n / 3].0, samples[2 * n / 3].0);
            let cut: Vec<(i64, u64)> = want
                .iter()
                .copied()
                .filter(|&(t, _)| lo <= t && t <= hi)
                .collect();
            assert_eq!(decoded(c.bytes(), lo, hi), cut, "round {round}");
            let mut t_out = vec![0; n];
            let mut v_out = vec![0.0; n];
            let k = decode_tail_range_to_slices(c.bytes(), lo, hi, &mut t_out, &mut v_out).unwrap();
            assert_eq!(k, cut.len());
            // Appending still works after a read.
            let mut c = c;
            c.append(t + 1, 1.5);
            assert_eq!(c.len() as usize, n + 1);
        }
    }

    #[test]
    fn decimal_counters_take_under_half_of_gorilla() {
        // node_cpu_seconds_total-like: hundredths, growing by up to 5 s a
        // scrape, scraped every 15 s exactly.
        let mut rng = Rng(7);
        let mut v = 123_456.78;
        let samples: Vec<(i64, f64)> = (0..120)
            .map(|i| {
                v = ((v * 100.0 + (rng.next() % 500) as f64).round()) / 100.0;
                (1_700_000_000_000 + i * 15_000, v)
            })
            .collect();
        let tail = encode(&samples);
        let mut xor = XorChunk::new();
        for &(t, v) in &samples {
            xor.append(t, v);
        }
        assert_eq!(decoded(tail.bytes(), i64::MIN, i64::MAX), bits(&samples));
        assert!(
            tail.bytes().len() * 2 < xor.bytes().len(),
            "{} against {}",
            tail.bytes().len(),
            xor.bytes().len()
        );
    }

    #[test]
    fn values_without_decimals_cost_little_more_than_gorilla() {
        let mut rng = Rng(11);
        let samples: Vec<(i64, f64)> = (0..200)
            .map(|i| (i * 1000, f64::from_bits(rng.next() >> 2)))
            .collect();
        let tail = encode(&samples);
        let mut xor = XorChunk::new();
        for &(t, v) in &samples {
            xor.append(t, v);
        }
        assert_eq!(decoded(tail.bytes(), i64::MIN, i64::MAX), bits(&samples));
        // One bit more per changed value at most.
        assert!(tail.bytes().len() <= xor.bytes().len() + 200 / 8 + 1);
    }

    #[test]
    fn damaged_chunks_fail_without_panicking() {
        let mut rng = Rng(3);
        let mut v = 10.5;
        let samples: Vec<(i64, f64)> = (0..300)
            .map(|i| {
                v += (rng.next() % 100) as f64 / 10.0;
                (i * 5000, if i % 50 == 7 { f64::NAN } else { v })
            })
            .collect();
        let c = encode(&samples);
        let good = c.bytes().to_vec();
        for cut in 0..good.len() {
            let (mut ts, mut vs) = (vec![7], vec![7.0]);
            if decode_tail_range_into(&good[..cut], i64::MIN, i64::MAX, &mut ts, &mut vs).is_err() {
                assert_eq!((ts.len(), vs.len()), (1, 1), "nothing appended on error");
            }
        }
        for _ in 0..2000 {
            let mut bad = good.clone();
            let at = (rng.next() as usize) % bad.len();
            bad[at] ^= 1 << (rng.next() % 8);
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            let _ = decode_tail_range_into(&bad, i64::MIN, i64::MAX, &mut ts, &mut vs);
            assert!(ts.len() <= samples.len() + 1 + bad.len() * 4);
        }
        // A huge count with few bits allocates by the bits, not the count.
        let mut bad = good.clone();
        bad[..4].copy_from_slice(&0xFE00_0000u32.to_be_bytes());
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let _ = decode_tail_range_into(&bad, i64::MIN, i64::MAX, &mut ts, &mut vs);
        assert!(ts.capacity() < good.len() * 8);
    }
}
