//! Every sequence of strictly increasing timestamps and every f64 bit
//! pattern survives a chunk round trip, through every read path.

#![allow(clippy::unwrap_used)]

mod support;

use proptest::prelude::*;
use strata_codec::{decode_into, decode_range_into, ChunkIter, XorChunk};

fn encode(samples: &[(i64, u64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, f64::from_bits(v));
    }
    c
}

fn bits(samples: impl Iterator<Item = (i64, f64)>) -> Vec<(i64, u64)> {
    samples.map(|(t, v)| (t, v.to_bits())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn iterator_and_bulk_decode_agree_with_input(samples in support::samples()) {
        let c = encode(&samples);
        prop_assert_eq!(c.len() as usize, samples.len());
        prop_assert_eq!(c.first_t(), samples.first().map(|s| s.0));
        prop_assert_eq!(c.last_t(), samples.last().map(|s| s.0));
        prop_assert_eq!(c.last_v().map(f64::to_bits), samples.last().map(|s| s.1));

        let mut it = ChunkIter::new(c.bytes()).unwrap();
        prop_assert_eq!(bits(it.by_ref()), samples.clone());
        prop_assert!(it.err().is_none());

        let (mut ts, mut vs) = (vec![], vec![]);
        decode_into(c.bytes(), &mut ts, &mut vs).unwrap();
        prop_assert_eq!(bits(ts.into_iter().zip(vs)), samples);
    }

    #[test]
    fn every_prefix_is_a_valid_chunk(samples in support::samples()) {
        // The open chunk must decode after each append.
        let mut c = XorChunk::new();
        for (i, &(t, v)) in samples.iter().enumerate() {
            c.append(t, f64::from_bits(v));
            if i % 17 == 0 || i + 1 == samples.len() {
                prop_assert_eq!(bits(c.iter()), samples[..=i].to_vec());
            }
        }
    }

    #[test]
    fn range_decode_and_seek_match_a_filter(
        samples in support::samples(),
        a in any::<i64>(),
        b in any::<i64>(),
    ) {
        let (mint, maxt) = (a.min(b), a.max(b));
        let c = encode(&samples);
        let want: Vec<(i64, u64)> =
            samples.iter().copied().filter(|s| s.0 >= mint && s.0 <= maxt).collect();
        let (mut ts, mut vs) = (vec![], vec![]);
        decode_range_into(c.bytes(), mint, maxt, &mut ts, &mut vs).unwrap();
        prop_assert_eq!(bits(ts.into_iter().zip(vs)), want);

        let first = samples.iter().copied().find(|s| s.0 >= mint);
        prop_assert_eq!(c.iter().seek(mint).map(|(t, v)| (t, v.to_bits())), first);
    }
}
