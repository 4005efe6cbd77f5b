//! LEB128 varints, zig-zag mapping and a sticky-error byte decoder.

use crate::CodecError;

/// Maps a signed integer to an unsigned one so that small magnitudes of
/// either sign get short varints.
#[inline(always)]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline(always)]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends `v` as an unsigned LEB128 varint (1..=10 bytes).
#[inline]
pub fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a 65-bit value, `v` shifted left by one with `flag` as its lowest
/// bit, as an unsigned LEB128 varint (1..=10 bytes).
#[inline]
pub fn put_uvarint_flagged(out: &mut Vec<u8>, v: u64, flag: bool) {
    if v >> 63 == 0 {
        put_uvarint(out, (v << 1) | u64::from(flag));
    } else {
        let mut w = (u128::from(v) << 1) | u128::from(flag);
        while w >= 0x80 {
            out.push((w as u8) | 0x80);
            w >>= 7;
        }
        out.push(w as u8);
    }
}

/// A cursor over bytes that records the first error and keeps going, so a
/// decoder can read many fields and check once (after Prometheus' `Decbuf`).
/// After an error every read returns zero or empty.
#[derive(Debug)]
pub struct Decbuf<'a> {
    rest: &'a [u8],
    err: Option<CodecError>,
}

impl<'a> Decbuf<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            err: None,
        }
    }

    /// The first error met, if any.
    pub fn err(&self) -> Option<&CodecError> {
        self.err.as_ref()
    }

    /// Consumes the decoder: the first error met, or `Ok` if none.
    pub fn finish(self) -> Result<(), CodecError> {
        self.err.map_or(Ok(()), Err)
    }

    /// Records `e` unless an earlier error is already recorded.
    pub fn fail(&mut self, e: CodecError) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.rest = &[];
    }

    /// The first error met as a result, without consuming the decoder.
    #[inline]
    pub fn check(&self) -> Result<(), CodecError> {
        self.err.clone().map_or(Ok(()), Err)
    }

    /// The bytes not read yet.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Eight bytes, big-endian.
    #[inline]
    pub fn be_u64(&mut self) -> u64 {
        match self.rest.split_first_chunk::<8>() {
            Some((b, rest)) => {
                self.rest = rest;
                u64::from_be_bytes(*b)
            }
            None => {
                self.fail(CodecError::Truncated);
                0
            }
        }
    }

    /// One byte, or 0 (and a `Truncated` error) if none remains.
    #[inline]
    pub fn byte(&mut self) -> u8 {
        match self.rest.split_first() {
            Some((&b, rest)) => {
                self.rest = rest;
                b
            }
            None => {
                self.fail(CodecError::Truncated);
                0
            }
        }
    }

    /// `n` bytes, or an empty slice (and a `Truncated` error) if fewer remain.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        match self.rest.split_at_checked(n) {
            Some((b, rest)) => {
                self.rest = rest;
                b
            }
            None => {
                self.fail(CodecError::Truncated);
                &[]
            }
        }
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    #[inline]
    pub fn uvarint(&mut self) -> u64 {
        // The one-byte case dominates (deltas of 0 or 1).
        if let Some((&b, rest)) = self.rest.split_first() {
            if b < 0x80 {
                self.rest = rest;
                return u64::from(b);
            }
        }
        let w = self.uvarint_wide(64);
        w as u64
    }

    /// A varint written by [`put_uvarint_flagged`]: the 64-bit value and the
    /// flag.
    #[inline]
    pub fn uvarint_flagged(&mut self) -> (u64, bool) {
        if let Some((&b, rest)) = self.rest.split_first() {
            if b < 0x80 {
                self.rest = rest;
                return (u64::from(b >> 1), b & 1 == 1);
            }
        }
        let w = self.uvarint_wide(65);
        ((w >> 1) as u64, w & 1 == 1)
    }

    /// A varint of at most `bits` (<= 70) significant bits.
    #[cold]
    fn uvarint_wide(&mut self, bits: u32) -> u128 {
        let mut v: u128 = 0;
        let mut shift = 0u32;
        loop {
            let Some((&b, rest)) = self.rest.split_first() else {
                self.fail(CodecError::Truncated);
                return 0;
            };
            self.rest = rest;
            v |= u128::from(b & 0x7F) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
            if shift >= 70 {
                self.fail(CodecError::Corrupt("varint longer than 10 bytes"));
                return 0;
            }
        }
        if v >> bits != 0 {
            self.fail(CodecError::Corrupt("varint overflows"));
            return 0;
        }
        v
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> String {
        let n = self.length_prefix(1);
        match std::str::from_utf8(self.bytes(n)) {
            Ok(s) => s.to_owned(),
            Err(_) => {
                self.fail(CodecError::Corrupt("string is not UTF-8"));
                String::new()
            }
        }
    }

    /// A length prefix, refused when it announces more bytes than remain
    /// (each item taking at least `min_item_len` bytes), so a corrupt length
    /// can never cause a large allocation.
    #[inline]
    pub fn length_prefix(&mut self, min_item_len: usize) -> usize {
        let n = self.uvarint();
        let cap = self.remaining() / min_item_len.max(1);
        if n > cap as u64 {
            self.fail(CodecError::Truncated);
            return 0;
        }
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    #[test]
    fn varints_round_trip() {
        let vals = [0, 1, 127, 128, 300, u64::MAX >> 1, u64::MAX];
        let mut out = Vec::new();
        for &v in &vals {
            put_uvarint(&mut out, v);
            put_uvarint_flagged(&mut out, v, true);
            put_uvarint_flagged(&mut out, v, false);
        }
        let mut d = Decbuf::new(&out);
        for &v in &vals {
            assert_eq!(d.uvarint(), v);
            assert_eq!(d.uvarint_flagged(), (v, true));
            assert_eq!(d.uvarint_flagged(), (v, false));
        }
        assert_eq!(d.remaining(), 0);
        d.finish().unwrap();
    }

    #[test]
    fn overlong_varint_is_corrupt() {
        let mut d = Decbuf::new(&[0xFF; 11]);
        assert_eq!(d.uvarint(), 0);
        assert_eq!(
            d.err(),
            Some(&CodecError::Corrupt("varint longer than 10 bytes"))
        );
        let mut d = Decbuf::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]);
        d.uvarint();
        assert_eq!(d.err(), Some(&CodecError::Corrupt("varint overflows")));
    }

    #[test]
    fn truncated_varint() {
        let mut d = Decbuf::new(&[0x80]);
        d.uvarint();
        assert_eq!(d.finish(), Err(CodecError::Truncated));
    }
}
