//! Bit-level I/O, most significant bit first, as the Gorilla chunk format
//! needs it.
//!
//! [`BitWriter`] appends to a byte vector that is complete after every call,
//! so an open chunk can be read while it is still being appended to.
//! [`BitReader`] reads through a 64-bit buffer refilled a whole word at a
//! time; it never panics and never allocates, and reading past the end sets a
//! sticky flag ([`BitReader::overrun`]) instead of failing each call, so a
//! decoder can read a whole sample and check once.

/// Appends bits, most significant first, to a byte vector.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    bytes: Vec<u8>,
    /// Unused low bits of the last byte (0..=7).
    free: u8,
}

/// Appends the low `n` bits of `v` (`n` in 0..=64), most significant first,
/// to `bytes`, whose last byte has `free` unused low bits (0..=7): a
/// [`BitWriter`] for types that keep the two among fields of their own.
#[inline]
pub fn push_bits(bytes: &mut Vec<u8>, free: &mut u8, v: u64, n: u32) {
    debug_assert!(n <= 64);
    if n == 0 {
        return;
    }
    // Left-align the payload so the next bit to write is always bit 63.
    let mut v = v << (64 - n);
    let mut n = n;
    let f = u32::from(*free);
    if f > 0 {
        let take = f.min(n);
        if let Some(last) = bytes.last_mut() {
            *last |= (v >> (64 - f)) as u8;
        }
        *free -= take as u8;
        n -= take;
        v = v.checked_shl(take).unwrap_or(0);
    }
    while n >= 8 {
        bytes.push((v >> 56) as u8);
        v <<= 8;
        n -= 8;
    }
    if n > 0 {
        bytes.push((v >> 56) as u8);
        *free = (8 - n) as u8;
    }
}

/// Makes room in `bytes` for at least `additional` more, growing by a
/// quarter rather than doubling so that many small open chunks stay tight.
#[inline]
pub fn reserve_quarter(bytes: &mut Vec<u8>, additional: usize) {
    let spare = bytes.capacity() - bytes.len();
    if spare < additional {
        let grow = additional.max(bytes.len() / 4).max(16);
        bytes.reserve_exact(grow);
    }
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer that continues after `bytes`, which are taken as whole bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self { bytes, free: 0 }
    }

    /// Appends the low `n` bits of `v` (`n` in 0..=64), most significant
    /// first. Bits of `v` above `n` are ignored.
    #[inline]
    pub fn write_bits(&mut self, v: u64, n: u32) {
        push_bits(&mut self.bytes, &mut self.free, v, n);
    }

    /// Appends one bit.
    #[inline]
    pub fn write_bit(&mut self, bit: bool) {
        self.write_bits(u64::from(bit), 1);
    }

    /// Appends eight bits.
    #[inline]
    pub fn write_byte(&mut self, b: u8) {
        self.write_bits(u64::from(b), 8);
    }

    /// The bytes written so far; unwritten low bits of the last byte are 0.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes written so far, for patching a fixed-size header in place.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Number of bits written, counting whole bytes given to `from_bytes`.
    pub fn bit_len(&self) -> u64 {
        (self.bytes.len() as u64) * 8 - u64::from(self.free)
    }

    /// Makes room for at least `additional` more bytes, growing by a quarter
    /// rather than doubling so that many small open chunks stay tight.
    pub fn reserve(&mut self, additional: usize) {
        reserve_quarter(&mut self.bytes, additional);
    }

    /// Heap bytes held.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The written bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads bits, most significant first, from a byte slice.
///
/// Invariant: the top `valid` bits of `buf` are the next unread bits, and they
/// end exactly at the byte boundary before `data[pos]`. Bits of `buf` below
/// them are either zero or copies of `data[pos..]`, so OR-ing a fresh word in
/// is always correct.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u64,
    valid: u32,
    overrun: bool,
}

impl<'a> BitReader<'a> {
    /// A reader positioned at the first bit of `data`.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        let mut r = Self {
            data,
            pos: 0,
            buf: 0,
            valid: 0,
            overrun: false,
        };
        r.refill();
        r
    }

    /// Tops the buffer up so that at least 56 bits are ready, or every
    /// remaining bit when fewer than that are left.
    #[inline(always)]
    pub fn refill(&mut self) {
        if let Some(word) = self.data.get(self.pos..).and_then(<[u8]>::first_chunk::<8>) {
            // Branch-free refill: load 8 bytes, keep the whole bytes that fit.
            self.buf |= u64::from_be_bytes(*word) >> self.valid;
            self.pos += ((63 - self.valid) >> 3) as usize;
            self.valid |= 56;
        } else {
            (self.pos, self.buf, self.valid) =
                refill_tail(self.data, self.pos, self.buf, self.valid);
        }
    }

    /// Number of bits ready in the buffer without a refill.
    #[inline(always)]
    pub fn buffered(&self) -> u32 {
        self.valid
    }

    /// The next 64 buffered bits without consuming them; bits past the
    /// buffered ones are unspecified.
    #[inline(always)]
    pub fn peek_word(&self) -> u64 {
        self.buf
    }

    /// Consumes `n` (1..=56) buffered bits and returns them. The caller must
    /// have refilled; reading past the end yields zeros and sets `overrun`.
    #[inline(always)]
    pub fn take(&mut self, n: u32) -> u64 {
        debug_assert!((1..=56).contains(&n));
        let v = self.buf >> (64 - n);
        self.skip(n);
        v
    }

    /// Like [`take`](Self::take) but also accepts `n == 0` (returning 0),
    /// for callers that select a width without branching.
    #[inline(always)]
    pub fn take_upto56(&mut self, n: u32) -> u64 {
        debug_assert!(n <= 56);
        let v = (self.buf >> 1) >> (63 - n);
        self.skip(n);
        v
    }

    /// Consumes `n` (0..=56) buffered bits. Same contract as [`take`](Self::take).
    #[inline(always)]
    pub fn skip(&mut self, n: u32) {
        debug_assert!(n <= 56);
        self.overrun |= n > self.valid;
        self.buf <<= n;
        self.valid = self.valid.saturating_sub(n);
    }

    /// Reads `n` (1..=64) bits, refilling as needed.
    #[inline(always)]
    pub fn read_bits(&mut self, n: u32) -> u64 {
        debug_assert!((1..=64).contains(&n));
        self.refill();
        if n <= 56 {
            self.take(n)
        } else {
            let hi = self.take(n - 32);
            self.refill();
            (hi << 32) | self.take(32)
        }
    }

    /// Reads one bit.
    #[inline]
    pub fn read_bit(&mut self) -> bool {
        if self.valid == 0 {
            self.refill();
        }
        self.take(1) == 1
    }

    /// Reads eight bits.
    #[inline]
    pub fn read_byte(&mut self) -> u8 {
        self.read_bits(8) as u8
    }

    /// Whether a read went past the end of the input. Sticky: once set, it
    /// stays set and later reads return zeros.
    #[inline(always)]
    pub fn overrun(&self) -> bool {
        self.overrun
    }

    /// Number of unread bits left in the input.
    #[inline]
    pub fn remaining_bits(&self) -> u64 {
        let unloaded = self.data.len().saturating_sub(self.pos) as u64;
        unloaded * 8 + u64::from(self.valid)
    }
}

/// Refill for the last few bytes, one byte at a time. Takes and returns the
/// reader's state by value so that the reader never has its address taken
/// and its fields can stay in registers in the hot loops.
#[cold]
#[inline(never)]
fn refill_tail(data: &[u8], mut pos: usize, mut buf: u64, mut valid: u32) -> (usize, u64, u32) {
    // Drop the speculative copies below `valid`: only real bytes follow.
    buf &= !(u64::MAX.checked_shr(valid).unwrap_or(0));
    while valid <= 56 {
        let Some(&b) = data.get(pos) else {
            break;
        };
        buf |= u64::from(b) << (56 - valid);
        valid += 8;
        pos += 1;
    }
    (pos, buf, valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_mixed_widths() {
        let widths: Vec<u32> = (1..=64)
            .chain((1..=64).rev())
            .chain([3, 64, 1, 57])
            .collect();
        let mut w = BitWriter::new();
        let values: Vec<u64> = widths
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xDEAD_BEEF;
                if n == 64 {
                    x
                } else {
                    x & ((1 << n) - 1)
                }
            })
            .collect();
        for (&v, &n) in values.iter().zip(&widths) {
            w.write_bits(v, n);
        }
        let total: u64 = widths.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(w.bit_len(), total);
        let mut r = BitReader::new(w.bytes());
        for (&v, &n) in values.iter().zip(&widths) {
            assert_eq!(r.read_bits(n), v, "width {n}");
        }
        assert!(!r.overrun());
        assert!(r.remaining_bits() < 8);
    }

    #[test]
    fn overrun_is_sticky() {
        let mut r = BitReader::new(&[0xFF, 0x01]);
        assert_eq!(r.read_bits(12), 0xFF0);
        assert_eq!(r.read_bits(4), 0x1);
        assert!(!r.overrun());
        assert_eq!(r.read_bits(3), 0);
        assert!(r.overrun());
        assert_eq!(r.read_bits(64), 0);
        assert!(r.overrun());
    }

    #[test]
    fn empty_input_overruns() {
        let mut r = BitReader::new(&[]);
        assert!(!r.read_bit());
        assert!(r.overrun());
    }

    #[test]
    fn bits_continue_after_prefix() {
        let mut w = BitWriter::from_bytes(vec![0xAB]);
        w.write_bit(true);
        w.write_byte(0x55);
        assert_eq!(w.bytes(), &[0xAB, 0xAA, 0x80]);
        assert_eq!(w.bit_len(), 17);
    }
}
