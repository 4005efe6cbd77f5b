//! Damaged sealed chunks never panic: truncation is always an error, a
//! flipped bit either errors or decodes to well-formed samples, and a huge
//! sample count is refused before anything is allocated.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use proptest::prelude::*;
use strata_codec::sealed::{decode_sealed_range_into, MAGIC, VERSION};
use strata_codec::{decode_chunk_range_into, encode_sealed, CodecError};

fn seal(samples: &[(i64, u64)]) -> Vec<u8> {
    let ts: Vec<i64> = samples.iter().map(|s| s.0).collect();
    let vs: Vec<f64> = samples.iter().map(|s| f64::from_bits(s.1)).collect();
    let mut out = Vec::new();
    encode_sealed(&ts, &vs, &mut out);
    out
}

/// Decodes; asserts the output is well formed. Returns whether it succeeded.
fn decode_checked(bytes: &[u8]) -> bool {
    let (mut ts, mut vs) = (vec![], vec![]);
    let r = decode_chunk_range_into(bytes, i64::MIN, i64::MAX, &mut ts, &mut vs);
    assert_eq!(ts.len(), vs.len());
    if r.is_err() {
        assert!(ts.is_empty());
    }
    assert!(
        ts.windows(2).all(|w| w[0] < w[1]),
        "timestamps must increase"
    );
    r.is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_truncation_is_an_error(samples in support::samples()) {
        let bytes = seal(&samples);
        for len in 0..bytes.len() {
            let (mut ts, mut vs) = (vec![], vec![]);
            prop_assert!(
                decode_sealed_range_into(&bytes[..len], i64::MIN, i64::MAX, &mut ts, &mut vs)
                    .is_err(),
                "prefix of {} of {} bytes decoded", len, bytes.len()
            );
            prop_assert!(ts.is_empty() && vs.is_empty());
        }
    }

    #[test]
    fn flipped_bits_never_panic(samples in support::samples(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut bytes = seal(&samples);
        let i = at.index(bytes.len());
        bytes[i] ^= 1 << bit;
        decode_checked(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_the_magic_never_panic(body in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = vec![MAGIC, VERSION];
        bytes.extend_from_slice(&body);
        decode_checked(&bytes);
    }
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    // 2^63 samples announced by a 14-byte chunk.
    let mut bytes = vec![MAGIC, VERSION];
    bytes.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]);
    bytes.extend_from_slice(&[0, 0, 0]);
    let (mut ts, mut vs) = (vec![], vec![]);
    assert_eq!(
        decode_sealed_range_into(&bytes, i64::MIN, i64::MAX, &mut ts, &mut vs),
        Err(CodecError::Corrupt("more samples than bytes"))
    );
    assert_eq!(ts.capacity(), 0);
}

#[test]
fn unknown_version_and_trailing_bytes() {
    let mut bytes = seal(&[(1, 0), (2, 0)]);
    bytes.push(0);
    assert_eq!(
        decode_sealed_range_into(&bytes, i64::MIN, i64::MAX, &mut vec![], &mut vec![]),
        Err(CodecError::Corrupt("trailing bytes"))
    );
    bytes[1] = 9;
    assert_eq!(
        decode_sealed_range_into(&bytes, i64::MIN, i64::MAX, &mut vec![], &mut vec![]),
        Err(CodecError::BadVersion(9))
    );
}
