//! Reading a tail chunk: its decoder, and the entries that decode a range
//! of its samples.

use super::{settle, NO_MANTISSA};
use crate::bits::BitReader;
use crate::chunk::read::{read_dod, read_uvarint};
use crate::chunk::{bucket_value, decode_appending, RangeOut, HEADER_LEN};
use crate::sealed::decimal::{value, POW10};
use crate::varint::unzigzag;
use crate::CodecError;

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
