//! Appending samples to an open chunk.

use super::HEADER_LEN;
use crate::bits::BitWriter;
use crate::varint::{unzigzag, zigzag, Decbuf};

/// Upper bound on the bytes one append adds: a 64-bit delta-of-delta with its
/// prefix, plus a value with a new window (2 + 5 + 6 + 64 bits); the first
/// sample's 10-byte varint plus 8 bytes is smaller.
const MAX_SAMPLE_BYTES: usize = 20;

/// `leading` before the first XOR: no window to reuse yet.
const NO_WINDOW: u8 = 0xFF;

/// An open Gorilla XOR chunk that samples are appended to in place.
///
/// [`bytes`](Self::bytes) is a complete chunk after every append, so the head
/// can serve queries from it and seal it without re-encoding. Appends take
/// strictly increasing timestamps; any `i64` timestamps and any `f64` values
/// are stored exactly. A chunk holds at most
/// [`MAX_SAMPLES`](Self::MAX_SAMPLES) samples.
///
/// The sample count and the first timestamp are read back from the bytes
/// (the header, and the varint after it) rather than kept beside them: a
/// head holds a chunk a series, and the 12 bytes put its entry in the
/// allocator's 80-byte class instead of 96.
#[derive(Clone, Debug)]
pub struct XorChunk {
    w: BitWriter,
    t: i64,
    t_delta: u64,
    v_bits: u64,
    leading: u8,
    trailing: u8,
}

impl Default for XorChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl XorChunk {
    /// An empty chunk: its bytes are the header with a count of 0.
    pub fn new() -> Self {
        Self {
            w: BitWriter::from_bytes(vec![0; HEADER_LEN]),
            t: 0,
            t_delta: 0,
            v_bits: 0,
            leading: NO_WINDOW,
            trailing: 0,
        }
    }

    /// Most samples a chunk holds. The count header's first byte thus stays
    /// below `0xFF`, the first byte of every sealed chunk
    /// ([`crate::sealed::MAGIC`]), so the two formats never collide.
    pub const MAX_SAMPLES: u32 = 0xFEFF_FFFF;

    /// Appends a sample. The caller guarantees `t` is greater than the last
    /// appended timestamp (checked only in debug builds). Once the chunk
    /// holds [`MAX_SAMPLES`](Self::MAX_SAMPLES) samples, further appends are
    /// ignored.
    pub fn append(&mut self, t: i64, v: f64) {
        let count = self.len();
        debug_assert!(count == 0 || t > self.t, "timestamps must increase");
        if count >= Self::MAX_SAMPLES {
            debug_assert!(false, "chunk is full");
            return;
        }
        self.w.reserve(MAX_SAMPLE_BYTES);
        let v_bits = v.to_bits();
        match count {
            0 => {
                write_uvarint(&mut self.w, zigzag(t));
                self.w.write_bits(v_bits, 64);
            }
            1 => {
                // Timestamps increase, so the wrapping difference is the true
                // (unsigned) distance even across the whole i64 range.
                let delta = t.wrapping_sub(self.t) as u64;
                write_uvarint(&mut self.w, delta);
                self.write_value(v_bits);
                self.t_delta = delta;
            }
            _ => {
                let delta = t.wrapping_sub(self.t) as u64;
                // Wrapping keeps the arithmetic exact modulo 2^64; a
                // delta-of-delta that does not fit a bucket is written whole.
                let dod = delta.wrapping_sub(self.t_delta) as i64;
                self.write_dod(dod);
                self.write_value(v_bits);
                self.t_delta = delta;
            }
        }
        self.t = t;
        self.v_bits = v_bits;
        if let Some(header) = self.w.bytes_mut().first_chunk_mut::<HEADER_LEN>() {
            *header = (count + 1).to_be_bytes();
        }
    }

    fn write_dod(&mut self, dod: i64) {
        let [(a, a_len), (b, b_len)] = super::dod_code(dod);
        self.w.write_bits(a, a_len);
        self.w.write_bits(b, b_len);
    }

    fn write_value(&mut self, v_bits: u64) {
        let xor = v_bits ^ self.v_bits;
        if xor == 0 {
            self.w.write_bit(false);
            return;
        }
        // The leading count has 5 bits; clamping only widens the window.
        let leading = (xor.leading_zeros() as u8).min(31);
        let trailing = xor.trailing_zeros() as u8;
        if self.leading != NO_WINDOW && leading >= self.leading && trailing >= self.trailing {
            self.w.write_bits(0b10, 2);
            let sig = 64 - u32::from(self.leading) - u32::from(self.trailing);
            self.w.write_bits(xor >> self.trailing, sig);
            return;
        }
        self.leading = leading;
        self.trailing = trailing;
        // `sig` is 1..=64 because xor != 0; 64 does not fit 6 bits and is
        // written as 0, which cannot otherwise occur.
        let sig = 64 - u32::from(leading) - u32::from(trailing);
        self.w.write_bits(0b11, 2);
        self.w.write_bits(u64::from(leading), 5);
        self.w.write_bits(u64::from(sig), 6);
        self.w.write_bits(xor >> trailing, sig);
    }

    /// Number of samples appended.
    pub fn len(&self) -> u32 {
        self.w
            .bytes()
            .first_chunk::<HEADER_LEN>()
            .map_or(0, |h| u32::from_be_bytes(*h))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The complete chunk: header and bit stream, unused bits zero.
    pub fn bytes(&self) -> &[u8] {
        self.w.bytes()
    }

    /// Timestamp of the first sample.
    pub fn first_t(&self) -> Option<i64> {
        let first = self.w.bytes().get(HEADER_LEN..)?;
        (!self.is_empty()).then(|| unzigzag(Decbuf::new(first).uvarint()))
    }

    /// Timestamp of the last sample, the bound for the next append.
    pub fn last_t(&self) -> Option<i64> {
        (!self.is_empty()).then_some(self.t)
    }

    /// Value of the last sample, bit for bit.
    pub fn last_v(&self) -> Option<f64> {
        (!self.is_empty()).then_some(f64::from_bits(self.v_bits))
    }

    /// Iterates over the samples appended so far.
    pub fn iter(&self) -> super::ChunkIter<'_> {
        super::ChunkIter::from_valid(self.bytes())
    }

    /// Heap bytes held by the chunk (its buffer's capacity), for head-memory
    /// accounting; add `size_of::<XorChunk>()` for the inline part.
    pub fn heap_bytes(&self) -> usize {
        self.w.capacity()
    }
}

/// Writes an unsigned LEB128 varint into the bit stream, as Prometheus does
/// for the first timestamp and the first delta.
fn write_uvarint(w: &mut BitWriter, mut v: u64) {
    while v >= 0x80 {
        w.write_byte((v as u8) | 0x80);
        v >>= 7;
    }
    w.write_byte(v as u8);
}
