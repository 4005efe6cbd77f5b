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
//!
//! By seam: the value code both sides share (this file), the appender
//! (`append`), the decoder and its range entries (`decode`).

mod append;
mod decode;
#[cfg(test)]
mod tests;

pub use append::TailChunk;
pub use decode::{decode_tail_range_into, decode_tail_range_to_slices};

use crate::chunk::fits_bucket;
use crate::sealed::decimal::{mantissa, min_exponent};

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
