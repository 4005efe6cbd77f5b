//! Gorilla XOR chunks: the samples of one series, compressed as Prometheus'
//! `tsdb/chunkenc` XOR chunk compresses them.
//!
//! A chunk is a 4-byte big-endian sample count followed by a bit stream that
//! is identical to the one of a Prometheus XOR chunk (whose header is a 2-byte
//! count instead): timestamps as delta-of-delta in Prometheus' millisecond
//! buckets, values as the XOR with the previous value, reusing the previous
//! window of meaningful bits when the new one fits inside it. Every `f64`
//! round-trips bit for bit, NaN payloads included. `docs/format.md` draws the
//! layout.
//!
//! [`XorChunk`] appends in place and is decodable after every append;
//! [`ChunkIter`], [`decode_into`] and [`decode_range_into`] read a chunk from
//! bytes, returning errors rather than panicking on any input.

mod append;
mod range;
pub(crate) mod read;
pub mod tail;

pub use append::XorChunk;
pub(crate) use range::{decode_appending, keep_appended, RangeOut};
pub use read::{decode_into, decode_range_into, decode_range_to_slices, ChunkIter};
pub use tail::TailChunk;

/// Bytes of the sample-count header.
pub const HEADER_LEN: usize = 4;

/// The delta-of-delta buckets after the single `0` bit of an unchanged delta:
/// (prefix, prefix length, payload width). A delta-of-delta that fits none
/// of them is written whole after the prefix `1111`.
const DOD_BUCKETS: [(u64, u32, u32); 3] = [(0b10, 2, 14), (0b110, 3, 17), (0b1110, 4, 20)];

/// The code of a delta-of-delta, as two (bits, width) pieces to write in
/// turn: `0` for none, a bucket's prefix and payload, or the prefix `1111`
/// and then all 64 bits (the second piece is empty otherwise).
#[inline]
pub(crate) fn dod_code(dod: i64) -> [(u64, u32); 2] {
    if dod == 0 {
        return [(0, 1), (0, 0)];
    }
    for (prefix, prefix_len, nbits) in DOD_BUCKETS {
        if fits_bucket(dod, nbits) {
            let payload = (dod as u64) & ((1u64 << nbits) - 1);
            return [((prefix << nbits) | payload, prefix_len + nbits), (0, 0)];
        }
    }
    [(0b1111, 4), (dod as u64, 64)]
}

/// Whether `dod` fits a bucket of `nbits`. Prometheus' range is asymmetric,
/// `-(2^(n-1) - 1) ..= 2^(n-1)`, and so is ours, to keep the bit stream
/// identical.
#[inline(always)]
pub(crate) fn fits_bucket(dod: i64, nbits: u32) -> bool {
    let half = 1i64 << (nbits - 1);
    -(half - 1) <= dod && dod <= half
}

/// Inverse of writing `dod` in `nbits` (0..=63) bits under [`fits_bucket`]'s
/// range: payloads above `2^(n-1)` are negative. Branch-free, and 0 for
/// `nbits == 0`.
#[inline(always)]
pub(crate) fn bucket_value(payload: u64, nbits: u32) -> i64 {
    let half = (1u64 << nbits) >> 1;
    (payload as i64).wrapping_sub(i64::from(payload > half) << nbits)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod bucket_tests {
    use super::*;

    #[test]
    fn bucket_payloads_round_trip_at_edges() {
        for (_, _, nbits) in DOD_BUCKETS {
            let half = 1i64 << (nbits - 1);
            for dod in [-(half - 1), -1, 1, half - 1, half] {
                assert!(fits_bucket(dod, nbits));
                let payload = (dod as u64) & ((1u64 << nbits) - 1);
                assert_eq!(bucket_value(payload, nbits), dod, "{dod} in {nbits}");
            }
            assert!(!fits_bucket(-half, nbits));
            assert!(!fits_bucket(half + 1, nbits));
        }
    }
}
