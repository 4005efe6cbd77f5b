//! Reading chunks: a sample iterator and the bulk decoders queries use.

use super::{bucket_value, decode_appending, RangeOut, HEADER_LEN};

/// Payload widths of the delta-of-delta encodings by number of leading one
/// bits (0..=4), a byte each: 0, 14, 17, 20, 64.
const DOD_WIDTHS: u64 = 0x40_14_11_0E_00;
use crate::bits::BitReader;
use crate::varint::unzigzag;
use crate::CodecError;

/// Reads a delta-of-delta in the codes of [`super::DOD_BUCKETS`].
/// Branch-free for the 0/14/17/20-bit cases: with jittered scrapes a zero
/// and a non-zero delta-of-delta alternate unpredictably.
#[inline(always)]
pub(super) fn read_dod(r: &mut BitReader<'_>) -> i64 {
    r.refill();
    let w = r.peek_word();
    let ones = (!w).leading_zeros().min(4);
    let prefix = (ones + 1).min(4);
    let width = ((DOD_WIDTHS >> (ones * 8)) & 0xFF) as u32;
    if width <= 20 {
        let payload = ((w << prefix) >> 1) >> (63 - width);
        r.skip(prefix + width);
        bucket_value(payload, width)
    } else {
        r.skip(prefix);
        r.read_bits(64) as i64
    }
}

/// Reads an unsigned LEB128 varint from the bit stream.
#[inline(always)]
pub(super) fn read_uvarint(r: &mut BitReader<'_>) -> Result<u64, CodecError> {
    let fail = |r: &BitReader<'_>, e: &'static str| {
        if r.overrun() {
            CodecError::Truncated
        } else {
            CodecError::Corrupt(e)
        }
    };
    let mut v = 0u64;
    for i in 0..10 {
        let b = r.read_byte();
        if i == 9 && b > 1 {
            return Err(fail(r, "varint overflows"));
        }
        v |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(fail(r, "varint longer than 10 bytes"))
}

/// The decoding state shared by [`ChunkIter`] and the bulk decoders.
///
/// Everything a bulk decoder calls on it is inlined, so the decoder never
/// has its address taken and its fields live in registers.
#[derive(Clone, Debug)]
struct Decoder<'a> {
    r: BitReader<'a>,
    total: u32,
    read: u32,
    t: i64,
    t_delta: u64,
    v_bits: u64,
    leading: u32,
    trailing: u32,
}

impl<'a> Decoder<'a> {
    #[inline(always)]
    fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let (header, body) = bytes
            .split_first_chunk::<HEADER_LEN>()
            .ok_or(CodecError::Truncated)?;
        Ok(Self::with_count(u32::from_be_bytes(*header), body))
    }

    #[inline(always)]
    fn with_count(total: u32, body: &'a [u8]) -> Self {
        Self {
            r: BitReader::new(body),
            total,
            read: 0,
            t: 0,
            t_delta: 0,
            v_bits: 0,
            // A reused window before any was set reads all 64 bits, as in
            // Prometheus.
            leading: 0,
            trailing: 0,
        }
    }

    /// How many samples the input can hold at most: the header's count,
    /// capped by the bits present (every sample after the second takes at
    /// least two), so a corrupt count cannot make a caller over-allocate.
    #[inline(always)]
    fn capacity_hint(&self) -> usize {
        let left = u64::from(self.total - self.read);
        let bound = 2 + self.r.remaining_bits() / 2;
        usize::try_from(left.min(bound)).unwrap_or(usize::MAX)
    }

    /// The next sample as (timestamp, value bits), `None` after the last.
    #[inline(always)]
    fn next(&mut self) -> Result<Option<(i64, u64)>, CodecError> {
        if self.read >= self.total {
            return Ok(None);
        }
        match self.read {
            0 => self.read_first()?,
            1 => self.read_second()?,
            _ => self.read_dod_sample()?,
        }
        self.read += 1;
        Ok(Some((self.t, self.v_bits)))
    }

    #[inline(always)]
    fn read_first(&mut self) -> Result<(), CodecError> {
        self.t = unzigzag(self.read_uvarint()?);
        self.v_bits = self.r.read_bits(64);
        self.check_overrun()
    }

    #[inline(always)]
    fn read_second(&mut self) -> Result<(), CodecError> {
        let delta = self.read_uvarint()?;
        self.advance(delta)?;
        self.read_value()?;
        self.check_overrun()
    }

    #[inline(always)]
    fn read_dod_sample(&mut self) -> Result<(), CodecError> {
        let dod = read_dod(&mut self.r);
        self.advance(self.t_delta.wrapping_add(dod as u64))?;
        self.read_value()?;
        self.check_overrun()
    }

    /// Moves to the next timestamp, `delta` after the current one.
    #[inline(always)]
    fn advance(&mut self, delta: u64) -> Result<(), CodecError> {
        let t = self.t.wrapping_add(delta as i64);
        if t <= self.t {
            return Err(self.overrun_or(CodecError::Corrupt("timestamps do not increase")));
        }
        self.t = t;
        self.t_delta = delta;
        Ok(())
    }

    /// Reads one XOR-encoded value. At least 13 bits must be buffered (or
    /// all that remain), which holds after a timestamp read.
    #[inline(always)]
    fn read_value(&mut self) -> Result<(), CodecError> {
        let r = &mut self.r;
        let w = r.peek_word();
        if w >> 63 == 0 {
            r.skip(1);
            return Ok(());
        }
        if (w >> 62) & 1 == 1 {
            // '11', 5 bits of leading zeros, 6 bits of significant bits.
            let c = r.take(13);
            let leading = ((c >> 6) & 31) as u32;
            let sig = match (c & 63) as u32 {
                0 => 64,
                n => n,
            };
            if leading + sig > 64 {
                return Err(self.overrun_or(CodecError::Corrupt("value window exceeds 64 bits")));
            }
            self.leading = leading;
            self.trailing = 64 - leading - sig;
        } else {
            r.skip(2);
        }
        let r = &mut self.r;
        let sig = 64 - self.leading - self.trailing;
        r.refill();
        let bits = if sig <= 56 {
            r.take(sig)
        } else {
            r.read_bits(sig)
        };
        // `trailing` <= 63: a window holds at least one bit.
        self.v_bits ^= bits << self.trailing;
        Ok(())
    }

    #[inline(always)]
    fn read_uvarint(&mut self) -> Result<u64, CodecError> {
        read_uvarint(&mut self.r)
    }

    #[inline(always)]
    fn check_overrun(&self) -> Result<(), CodecError> {
        if self.r.overrun() {
            Err(CodecError::Truncated)
        } else {
            Ok(())
        }
    }

    /// `Truncated` if the input ran out (the bits read are then padding),
    /// else `e`.
    #[inline(always)]
    fn overrun_or(&self, e: CodecError) -> CodecError {
        if self.r.overrun() {
            CodecError::Truncated
        } else {
            e
        }
    }
}

/// Iterates over the samples of a chunk, yielding `(timestamp, value)`.
///
/// It stops at the end of the chunk or at the first error; [`err`](Self::err)
/// tells which. Samples before an error are genuine.
#[derive(Clone, Debug)]
pub struct ChunkIter<'a> {
    d: Decoder<'a>,
    err: Option<CodecError>,
    cur: Option<(i64, f64)>,
}

impl<'a> ChunkIter<'a> {
    /// An iterator over the chunk in `bytes`; fails only if the header is
    /// missing. Errors in the body show up while iterating.
    pub fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        Ok(Self {
            d: Decoder::new(bytes)?,
            err: None,
            cur: None,
        })
    }

    /// For bytes known to hold a header; otherwise an iterator that has
    /// already failed.
    pub(crate) fn from_valid(bytes: &'a [u8]) -> Self {
        Self::new(bytes).unwrap_or_else(|e| Self {
            d: Decoder::with_count(0, &[]),
            err: Some(e),
            cur: None,
        })
    }

    /// The next sample, or `None` at the end of the chunk or on an error
    /// (then [`err`](Self::err) is set).
    #[inline]
    pub fn next_sample(&mut self) -> Option<(i64, f64)> {
        if self.err.is_some() {
            return None;
        }
        match self.d.next() {
            Ok(Some((t, v))) => {
                let s = (t, f64::from_bits(v));
                self.cur = Some(s);
                Some(s)
            }
            Ok(None) => None,
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }

    /// The error that stopped iteration, if any.
    pub fn err(&self) -> Option<&CodecError> {
        self.err.as_ref()
    }

    /// Advances to the first sample with timestamp `>= t` and returns it, or
    /// `None` if there is none (or on an error). As in Prometheus, if the
    /// sample returned last already qualifies, it is returned again and the
    /// iterator does not move.
    pub fn seek(&mut self, t: i64) -> Option<(i64, f64)> {
        if let Some(cur) = self.cur.filter(|c| c.0 >= t) {
            return Some(cur);
        }
        while let Some(s) = self.next_sample() {
            if s.0 >= t {
                return Some(s);
            }
        }
        None
    }
}

impl Iterator for ChunkIter<'_> {
    type Item = (i64, f64);

    fn next(&mut self) -> Option<(i64, f64)> {
        self.next_sample()
    }
}

/// How many samples the chunk in `bytes` holds by its header, capped by its
/// length; 0 without a header.
pub(crate) fn len_hint(bytes: &[u8]) -> usize {
    Decoder::new(bytes).map_or(0, |d| d.capacity_hint())
}

/// Appends every sample of the chunk in `bytes` to `ts` and `vs`: the fast
/// path for queries, reusing the caller's buffers. On error nothing is
/// appended.
pub fn decode_into(bytes: &[u8], ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<(), CodecError> {
    decode_range_into(bytes, i64::MIN, i64::MAX, ts, vs)
}

/// Appends the samples of the chunk in `bytes` whose timestamps lie in
/// `[mint, maxt]` to `ts` and `vs`. Decoding stops at the first sample past
/// `maxt`, so the rest of the chunk is not checked. On error nothing is
/// appended.
pub fn decode_range_into(
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

/// Writes the samples of the chunk in `bytes` whose timestamps lie in
/// `[mint, maxt]` to the front of `t_out` and `v_out`, returning how many:
/// for callers that decode several chunks into one buffer sized in advance,
/// each chunk into its own part of it (possibly from several threads).
/// Errors if the chunk is corrupt or holds more such samples than the
/// slices have room for.
pub fn decode_range_to_slices(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    t_out: &mut [i64],
    v_out: &mut [f64],
) -> Result<usize, CodecError> {
    decode_slices(Decoder::new(bytes)?, mint, maxt, t_out, v_out)
}

/// Decodes into `t_out`/`v_out`, which hold room for every sample the input
/// can encode; returns how many were written.
#[inline(always)]
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
        if let Some((t, v)) = d.next()? {
            if !out.push(t, v)? {
                return Ok(out.k);
            }
        }
    }
    while d.read < d.total {
        d.read_dod_sample()?;
        d.read += 1;
        if !out.push(d.t, d.v_bits)? {
            break;
        }
    }
    Ok(out.k)
}
