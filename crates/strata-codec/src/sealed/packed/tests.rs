use super::{decode, encode, Scratch};
use crate::varint::Decbuf;

fn round_trip(xs: &[i64]) -> usize {
    let mut out = Vec::new();
    encode(xs, &mut Scratch::default(), &mut out);
    let mut got = vec![0i64; xs.len()];
    let mut d = Decbuf::new(&out);
    decode(&mut d, xs.len(), |at, vals| {
        got.get_mut(at..at + vals.len())
            .unwrap()
            .copy_from_slice(vals);
        Ok(())
    })
    .unwrap();
    assert_eq!(d.remaining(), 0);
    assert_eq!(got, xs);
    out.len()
}

#[test]
fn shapes_round_trip() {
    round_trip(&[]);
    round_trip(&[5]);
    round_trip(&[i64::MIN, i64::MAX]);
    round_trip(&[i64::MAX, i64::MIN, 0, -1, 1, i64::MAX]);
    let regular: Vec<i64> = (0..1000).map(|i| 1_700_000_000_000 + i * 15_000).collect();
    assert!(round_trip(&regular) < 40);
    let pages: Vec<i64> = (0..300).map(|i| (1000 + (i * 7919) % 97) * 4096).collect();
    round_trip(&pages);
    let wide: Vec<i64> = (0..200)
        .map(|i: i64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
        .collect();
    round_trip(&wide);
    let sparse: Vec<i64> = (0..500).map(|i| if i % 17 == 0 { 3 } else { 0 }).collect();
    assert!(round_trip(&sparse) < 100);
}

proptest::proptest! {
    /// Long streams whose blocks change width, so that dense blocks of
    /// every width, sparse and zero blocks follow one another, far from
    /// the stream's end and near it.
    #[test]
    fn mixed_blocks_round_trip(
        runs in proptest::collection::vec((0u32..64, 1usize..200, 0u8..4), 1..30),
    ) {
        let mut xs = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for (bits, len, shape) in runs {
            for i in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let noise = if bits == 0 { 0 } else { (seed >> (64 - bits)) as i64 };
                xs.push(match shape {
                    0 => noise,
                    1 => i as i64 * 1000 + noise % 3,
                    2 => if i % 9 == 0 { noise } else { 0 },
                    _ => -noise,
                });
            }
        }
        round_trip(&xs);
    }
}
