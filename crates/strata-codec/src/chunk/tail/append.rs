//! Appending to a tail chunk in place.

use super::{change_bucket, settle, MAX_SAMPLE_BYTES, NO_MANTISSA, NO_WINDOW};
use crate::bits::{push_bits, reserve_quarter};
use crate::chunk::{dod_code, XorChunk, HEADER_LEN};
use crate::sealed::decimal::mantissa;
use crate::varint::{unzigzag, zigzag, Decbuf};

/// An open chunk of the head that samples are appended to in place.
///
/// [`bytes`](Self::bytes) are a complete chunk after every append, read
/// by [`decode_tail_range_into`]. Appends take strictly increasing
/// timestamps; any `i64` timestamps and any `f64` values are stored
/// exactly. At most [`XorChunk::MAX_SAMPLES`](XorChunk::MAX_SAMPLES)
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
    /// holds [`XorChunk::MAX_SAMPLES`](XorChunk::MAX_SAMPLES)
    /// samples, further appends are ignored.
    pub fn append(&mut self, t: i64, v: f64) {
        let count = self.len();
        debug_assert!(count == 0 || t > self.t, "timestamps must increase");
        if count >= XorChunk::MAX_SAMPLES {
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
