//! The bit-level codes of histogram chunks: variable-width integers and XOR
//! floats with a window per field.
//!
//! A varbit integer is a unary prefix of `k` one bits (0..=8), a zero bit
//! unless `k` is 8, then a payload of [`WIDTHS`]`[k]` bits. Signed payloads
//! use the XOR chunk's asymmetric two's complement ranges
//! (`-(2^(n-1) - 1) ..= 2^(n-1)`), so 0 takes one bit and the small
//! delta-of-deltas of bucket counts take five.

use crate::bits::{BitReader, BitWriter};
use crate::chunk::{bucket_value, fits_bucket};
use crate::CodecError;

/// Payload widths by the number of leading one bits of the prefix.
const WIDTHS: [u32; 9] = [0, 3, 6, 9, 13, 20, 32, 48, 64];

#[inline(always)]
fn width(k: u32) -> u32 {
    WIDTHS.get(k as usize).copied().unwrap_or(64)
}

#[inline(always)]
fn low_bits(v: u64, n: u32) -> u64 {
    v & (u64::MAX >> (64 - n))
}

/// Writes `k` one bits, a zero, and `payload` in `n` bits (`k < 8`, `n > 0`).
#[inline(always)]
fn put_prefixed(w: &mut BitWriter, k: u32, payload: u64, n: u32) {
    let prefix = ((1u64 << k) - 1) << 1;
    w.write_bits((prefix << n) | low_bits(payload, n), k + 1 + n);
}

/// Appends a signed varbit integer: 1 bit for 0, 5 bits for -3..=4.
#[inline]
pub(crate) fn put_varbit_int(w: &mut BitWriter, v: i64) {
    if v == 0 {
        w.write_bit(false);
        return;
    }
    for k in 1..8 {
        let n = width(k);
        if fits_bucket(v, n) {
            put_prefixed(w, k, v as u64, n);
            return;
        }
    }
    w.write_bits(0xFF, 8);
    w.write_bits(v as u64, 64);
}

/// Appends an unsigned varbit integer: 1 bit for 0, 5 bits for 1..=7.
#[inline]
pub(crate) fn put_varbit_uint(w: &mut BitWriter, v: u64) {
    if v == 0 {
        w.write_bit(false);
        return;
    }
    for k in 1..8 {
        let n = width(k);
        if v >> n == 0 {
            put_prefixed(w, k, v, n);
            return;
        }
    }
    w.write_bits(0xFF, 8);
    w.write_bits(v, 64);
}

/// Reads the prefix and returns `(k, payload)`. Past the end of the input
/// it yields zeros and sets the reader's overrun flag.
#[inline(always)]
fn read_prefixed(r: &mut BitReader<'_>) -> (u32, u64) {
    r.refill();
    let k = (!r.peek_word()).leading_zeros().min(8);
    if k == 8 {
        r.skip(8);
        return (8, r.read_bits(64));
    }
    let n = width(k);
    // k + 1 + n <= 56, so one buffered take reads prefix and payload.
    let bits = r.take(k + 1 + n);
    if n == 0 {
        (k, 0)
    } else {
        (k, low_bits(bits, n))
    }
}

/// Reads a signed varbit integer written by [`put_varbit_int`].
#[inline]
pub(crate) fn read_varbit_int(r: &mut BitReader<'_>) -> i64 {
    match read_prefixed(r) {
        (8, payload) => payload as i64,
        (k, payload) => bucket_value(payload, width(k)),
    }
}

/// Reads an unsigned varbit integer written by [`put_varbit_uint`].
#[inline]
pub(crate) fn read_varbit_uint(r: &mut BitReader<'_>) -> u64 {
    read_prefixed(r).1
}

/// The window of meaningful bits of one XOR-encoded field, as in the XOR
/// chunk: `10` reuses it, `11` sets a new one (5 bits of leading zeros, 6 of
/// width, 64 written as 0).
#[derive(Clone, Copy, Debug)]
pub(crate) struct XorWindow {
    leading: u8,
    trailing: u8,
}

/// `leading` before the first window is set.
const NO_WINDOW: u8 = 0xFF;

impl Default for XorWindow {
    fn default() -> Self {
        Self {
            leading: NO_WINDOW,
            trailing: 0,
        }
    }
}

impl XorWindow {
    /// Appends `cur` as its XOR with `prev`.
    #[inline]
    pub(crate) fn write(&mut self, w: &mut BitWriter, prev: u64, cur: u64) {
        let xor = prev ^ cur;
        if xor == 0 {
            w.write_bit(false);
            return;
        }
        let leading = (xor.leading_zeros() as u8).min(31);
        let trailing = xor.trailing_zeros() as u8;
        if self.leading != NO_WINDOW && leading >= self.leading && trailing >= self.trailing {
            let sig = 64 - u32::from(self.leading) - u32::from(self.trailing);
            w.write_bits(0b10, 2);
            w.write_bits(xor >> self.trailing, sig);
            return;
        }
        self.leading = leading;
        self.trailing = trailing;
        let sig = 64 - u32::from(leading) - u32::from(trailing);
        w.write_bits(
            (0b11 << 11) | (u64::from(leading) << 6) | u64::from(sig & 63),
            13,
        );
        w.write_bits(xor >> trailing, sig);
    }

    /// Reads a value written by [`write`](Self::write) after `prev`. Errors
    /// on a window wider than 64 bits or a reuse before any window; running
    /// out of input only sets the reader's overrun flag.
    #[inline]
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>, prev: u64) -> Result<u64, CodecError> {
        r.refill();
        let w = r.peek_word();
        if w >> 63 == 0 {
            r.skip(1);
            return Ok(prev);
        }
        if (w >> 62) & 1 == 1 {
            let c = r.take(13);
            let leading = ((c >> 6) & 31) as u32;
            let sig = match (c & 63) as u32 {
                0 => 64,
                n => n,
            };
            if leading + sig > 64 {
                return Err(CodecError::Corrupt("value window exceeds 64 bits"));
            }
            self.leading = leading as u8;
            self.trailing = (64 - leading - sig) as u8;
        } else {
            r.skip(2);
            if self.leading == NO_WINDOW {
                return Err(CodecError::Corrupt("value window reused before it is set"));
            }
        }
        let trailing = u32::from(self.trailing);
        let sig = 64 - u32::from(self.leading) - trailing;
        let bits = r.read_bits(sig);
        Ok(prev ^ (bits << trailing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varbits_round_trip_at_every_width_edge() {
        let mut ints = vec![0i64, 1, -1, i64::MIN, i64::MAX, i64::MIN + 1];
        let mut uints = vec![0u64, 1, u64::MAX, u64::MAX - 1];
        for &n in &WIDTHS[1..8] {
            let half = 1i64 << (n - 1);
            ints.extend([half, half + 1, -(half - 1), -half, -half - 1]);
            uints.extend([(1u64 << n) - 1, 1u64 << n]);
        }
        let mut w = BitWriter::new();
        for &v in &ints {
            put_varbit_int(&mut w, v);
        }
        for &v in &uints {
            put_varbit_uint(&mut w, v);
        }
        let mut r = BitReader::new(w.bytes());
        for &v in &ints {
            assert_eq!(read_varbit_int(&mut r), v);
        }
        for &v in &uints {
            assert_eq!(read_varbit_uint(&mut r), v);
        }
        assert!(!r.overrun());
    }

    #[test]
    fn small_values_are_short() {
        let mut w = BitWriter::new();
        put_varbit_int(&mut w, 0);
        assert_eq!(w.bit_len(), 1);
        put_varbit_int(&mut w, -3);
        put_varbit_int(&mut w, 4);
        assert_eq!(w.bit_len(), 11);
    }

    #[test]
    fn xor_round_trips_special_values() {
        let values = [1.0f64, 1.0, 2.5, f64::NAN, -0.0, f64::INFINITY, 1e-300, 3.0];
        let bits: Vec<u64> = values
            .iter()
            .map(|v| v.to_bits())
            .chain([super::super::STALE_NAN_BITS, 0])
            .collect();
        let mut w = BitWriter::new();
        let (mut win, mut prev) = (XorWindow::default(), 0u64);
        for &b in &bits {
            win.write(&mut w, prev, b);
            prev = b;
        }
        let mut r = BitReader::new(w.bytes());
        let (mut win, mut prev) = (XorWindow::default(), 0u64);
        for &b in &bits {
            prev = win.read(&mut r, prev).unwrap();
            assert_eq!(prev, b);
        }
        assert!(!r.overrun());
    }
}
