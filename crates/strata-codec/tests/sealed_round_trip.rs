//! Sealed chunks round-trip every sample bit for bit, whatever the
//! timestamps and values, and range decoding matches a filter.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use proptest::prelude::*;
use strata_codec::sealed::decode_sealed_range_into;
use strata_codec::{decode_chunk_range_into, encode_sealed, XorChunk};

fn seal(samples: &[(i64, u64)]) -> Vec<u8> {
    let ts: Vec<i64> = samples.iter().map(|s| s.0).collect();
    let vs: Vec<f64> = samples.iter().map(|s| f64::from_bits(s.1)).collect();
    let mut out = Vec::new();
    encode_sealed(&ts, &vs, &mut out);
    out
}

fn decode(bytes: &[u8], mint: i64, maxt: i64) -> Vec<(i64, u64)> {
    let (mut ts, mut vs) = (vec![7], vec![7.0]);
    decode_chunk_range_into(bytes, mint, maxt, &mut ts, &mut vs).unwrap();
    assert_eq!((ts[0], vs[0]), (7, 7.0), "existing contents are kept");
    ts.into_iter()
        .zip(vs)
        .skip(1)
        .map(|(t, v)| (t, v.to_bits()))
        .collect()
}

/// Decimal-friendly values: counters, gauges and fixed-point decimals with
/// the odd stale marker, -0.0 or full-precision float among them.
fn decimal_values(len: usize) -> impl Strategy<Value = Vec<u64>> {
    let step = prop_oneof![
        6 => (-1000i64..1000).prop_map(Some),
        1 => (-(1i64 << 52)..1 << 52).prop_map(Some),
        1 => Just(None),
    ];
    (
        0u32..=15,
        -(1i64 << 40)..1 << 40,
        prop::collection::vec(step, len),
        prop::collection::vec(any::<u64>(), 4),
    )
        .prop_map(|(e, start, steps, odd)| {
            let scale = 10f64.powi(e as i32);
            let mut m = start;
            steps
                .into_iter()
                .enumerate()
                .map(|(i, s)| match s {
                    Some(d) => {
                        m = m.wrapping_add(d) % (1 << 53);
                        (m as f64 / scale).to_bits()
                    }
                    None => [
                        support::STALE_NAN,
                        (-0.0f64).to_bits(),
                        odd[i % 4],
                        f64::INFINITY.to_bits(),
                    ][i % 4],
                })
                .collect()
        })
}

fn decimal_samples() -> impl Strategy<Value = Vec<(i64, u64)>> {
    support::timestamps().prop_flat_map(|ts| {
        let n = ts.len();
        decimal_values(n).prop_map(move |vs| ts.iter().copied().zip(vs).collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_samples_round_trip(samples in support::samples()) {
        let bytes = seal(&samples);
        prop_assert_eq!(decode(&bytes, i64::MIN, i64::MAX), samples);
    }

    #[test]
    fn decimal_samples_round_trip(samples in decimal_samples()) {
        let bytes = seal(&samples);
        prop_assert_eq!(decode(&bytes, i64::MIN, i64::MAX), samples);
    }

    #[test]
    fn range_decode_matches_a_filter(
        samples in decimal_samples(),
        a in any::<i64>(),
        b in any::<i64>(),
        pick in any::<prop::sample::Index>(),
    ) {
        let bytes = seal(&samples);
        // Bounds on sample timestamps as often as anywhere.
        let (mint, maxt) = match samples.len() {
            0 => (a.min(b), a.max(b)),
            n => {
                let t = samples[pick.index(n)].0;
                (t.min(a), t)
            }
        };
        let want: Vec<(i64, u64)> =
            samples.iter().copied().filter(|s| s.0 >= mint && s.0 <= maxt).collect();
        prop_assert_eq!(decode(&bytes, mint, maxt), want);
    }

    #[test]
    fn gorilla_bytes_decode_through_the_same_call(samples in support::samples()) {
        let mut c = XorChunk::new();
        for &(t, v) in &samples {
            c.append(t, f64::from_bits(v));
        }
        prop_assert_eq!(decode(c.bytes(), i64::MIN, i64::MAX), samples);
    }
}

#[test]
fn empty_and_single_sample_chunks() {
    for samples in [vec![], vec![(i64::MIN, support::STALE_NAN)], vec![(0, 0)]] {
        let bytes = seal(&samples);
        assert_eq!(decode(&bytes, i64::MIN, i64::MAX), samples);
    }
}

#[test]
fn sealed_rejects_gorilla_bytes_and_vice_versa() {
    let (mut ts, mut vs) = (vec![], vec![]);
    let c = XorChunk::new();
    assert!(decode_sealed_range_into(c.bytes(), 0, 0, &mut ts, &mut vs).is_err());
    assert_eq!(XorChunk::MAX_SAMPLES.to_be_bytes()[0], 0xFE);
}

#[test]
fn regular_decimal_series_are_small() {
    let ts: Vec<i64> = (0..240).map(|i| 1_700_000_000_000 + i * 15_000).collect();
    let vs: Vec<f64> = (0..240)
        .map(|i| (1_000_000 + i * 37 % 11) as f64 / 100.0)
        .collect();
    let mut out = Vec::new();
    encode_sealed(&ts, &vs, &mut out);
    assert!(out.len() < 240 / 2, "{} bytes", out.len());
}
