//! Sealed-chunk decoding of arbitrary bytes (with the sealed magic in front,
//! so the fuzzer starts inside the format). It must never panic; what
//! decodes must be well formed; a range must decode to a filter of the whole;
//! and re-sealing what decoded must reproduce it bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_codec::sealed::{MAGIC, VERSION};
use strata_codec::{decode_chunk_range_into, encode_sealed};

fuzz_target!(|data: &[u8]| {
    let mut bytes = vec![MAGIC, VERSION];
    bytes.extend_from_slice(data);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let all = decode_chunk_range_into(&bytes, i64::MIN, i64::MAX, &mut ts, &mut vs);
    assert_eq!(ts.len(), vs.len());
    if all.is_err() {
        assert!(ts.is_empty());
        return;
    }
    assert!(ts.windows(2).all(|w| w[0] < w[1]));

    if let (Some(&lo), Some(&hi)) = (ts.get(ts.len() / 4), ts.get(ts.len() * 3 / 4)) {
        let (mut rts, mut rvs) = (Vec::new(), Vec::new());
        decode_chunk_range_into(&bytes, lo, hi, &mut rts, &mut rvs).unwrap();
        let from = ts.len() / 4;
        assert_eq!(rts, ts[from..=ts.len() * 3 / 4]);
        assert!(rvs
            .iter()
            .zip(&vs[from..])
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    let mut again = Vec::new();
    encode_sealed(&ts, &vs, &mut again);
    let (mut ts2, mut vs2) = (Vec::new(), Vec::new());
    decode_chunk_range_into(&again, i64::MIN, i64::MAX, &mut ts2, &mut vs2).unwrap();
    assert_eq!(ts2, ts);
    assert!(vs2.iter().zip(&vs).all(|(a, b)| a.to_bits() == b.to_bits()));
});
