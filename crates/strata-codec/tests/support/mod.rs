//! Strategies shared by the property tests.

#![allow(dead_code)]

use proptest::prelude::*;

/// The Prometheus stale marker.
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// Strictly increasing timestamps: sometimes arbitrary (huge gaps, negative,
/// the i64 extremes), sometimes regular scrapes with jitter and the odd
/// outage.
pub fn timestamps() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        prop::collection::btree_set(any::<i64>(), 0..150).prop_map(|s| s.into_iter().collect()),
        prop::collection::btree_set(
            prop_oneof![
                Just(i64::MIN),
                Just(i64::MAX),
                Just(-1i64),
                Just(0i64),
                any::<i64>()
            ],
            0..8
        )
        .prop_map(|s| s.into_iter().collect()),
        (
            any::<i64>(),
            prop::collection::vec(
                prop_oneof![
                    8 => 15_000i64..15_001,
                    4 => 14_990i64..15_010,
                    1 => 1i64..1 << 21,
                    1 => 1i64..i64::MAX,
                ],
                0..300
            )
        )
            .prop_map(|(start, gaps)| {
                let mut t = start;
                let mut out = vec![t];
                for g in gaps {
                    match t.checked_add(g) {
                        Some(next) => {
                            t = next;
                            out.push(t);
                        }
                        None => break,
                    }
                }
                out
            }),
    ]
}

/// Values as bit patterns: arbitrary, special (NaNs with payloads, the stale
/// marker, ±0, ±Inf, subnormals), and random walks that exercise the XOR
/// window reuse.
pub fn value_bits(len: usize) -> impl Strategy<Value = Vec<u64>> {
    let special = prop_oneof![
        Just(STALE_NAN),
        Just(f64::NAN.to_bits()),
        Just((-f64::NAN).to_bits()),
        Just(0x7ff8_0000_dead_beef),
        Just((-0.0f64).to_bits()),
        Just(0u64),
        Just(f64::INFINITY.to_bits()),
        Just(f64::NEG_INFINITY.to_bits()),
        Just(1u64),
        Just(0x000f_ffff_ffff_ffff),
        Just(f64::MAX.to_bits()),
    ];
    let step = prop_oneof![
        3 => Just(Step::Same),
        3 => (0u64..1 << 20).prop_map(Step::XorLow),
        2 => (-100.0f64..100.0).prop_map(Step::Add),
        1 => special.prop_map(Step::Set),
        1 => any::<u64>().prop_map(Step::Set),
    ];
    (any::<u64>(), prop::collection::vec(step, len)).prop_map(|(start, steps)| {
        let mut v = start;
        steps
            .into_iter()
            .map(|s| {
                v = match s {
                    Step::Same => v,
                    Step::XorLow(m) => v ^ m,
                    Step::Add(d) => (f64::from_bits(v) + d).to_bits(),
                    Step::Set(b) => b,
                };
                v
            })
            .collect()
    })
}

#[derive(Clone, Debug)]
pub enum Step {
    Same,
    XorLow(u64),
    Add(f64),
    Set(u64),
}

/// Samples as (timestamp, value bits), timestamps strictly increasing.
pub fn samples() -> impl Strategy<Value = Vec<(i64, u64)>> {
    timestamps().prop_flat_map(|ts| {
        let n = ts.len();
        value_bits(n).prop_map(move |vs| ts.iter().copied().zip(vs).collect())
    })
}
