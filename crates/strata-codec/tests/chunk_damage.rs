//! Damaged chunks never panic: truncation is always an error, and a flipped
//! bit either errors or decodes to well-formed samples.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use proptest::prelude::*;
use strata_codec::{decode_into, decode_range_into, ChunkIter, XorChunk};

fn encode(samples: &[(i64, u64)]) -> Vec<u8> {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, f64::from_bits(v));
    }
    c.bytes().to_vec()
}

/// Decodes through every path; asserts the paths agree and the output is
/// well formed. Returns whether decoding succeeded.
fn decode_all_ways(bytes: &[u8]) -> bool {
    let (mut ts, mut vs) = (vec![], vec![]);
    let bulk = decode_into(bytes, &mut ts, &mut vs);
    assert_eq!(bulk.is_err(), ts.is_empty() && bulk.is_err());
    assert_eq!(ts.len(), vs.len());
    assert!(
        ts.windows(2).all(|w| w[0] < w[1]),
        "timestamps must increase"
    );

    let (mut rts, mut rvs) = (vec![], vec![]);
    let _ = decode_range_into(bytes, i64::MIN + 1, i64::MAX - 1, &mut rts, &mut rvs);

    match ChunkIter::new(bytes) {
        Ok(mut it) => {
            let got: Vec<(i64, u64)> = it.by_ref().map(|(t, v)| (t, v.to_bits())).collect();
            assert_eq!(it.err().is_some(), bulk.is_err());
            if bulk.is_ok() {
                let want: Vec<(i64, u64)> =
                    ts.iter().zip(&vs).map(|(&t, v)| (t, v.to_bits())).collect();
                assert_eq!(got, want);
            }
        }
        Err(_) => assert!(bulk.is_err()),
    }
    bulk.is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn truncation_at_every_offset_errors(samples in support::samples()) {
        let bytes = encode(&samples);
        for cut in 0..bytes.len() {
            prop_assert!(!decode_all_ways(&bytes[..cut]), "cut at {}", cut);
        }
        prop_assert!(decode_all_ways(&bytes));
    }

    #[test]
    fn bit_flips_never_panic(samples in support::samples(), flips in prop::collection::vec(any::<prop::sample::Index>(), 1..4)) {
        let mut bytes = encode(&samples);
        let nbits = bytes.len() * 8;
        for f in flips {
            let bit = f.index(nbits);
            bytes[bit / 8] ^= 0x80 >> (bit % 8);
        }
        decode_all_ways(&bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        decode_all_ways(&bytes);
    }
}
