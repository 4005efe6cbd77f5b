//! Gorilla chunk decoding of arbitrary bytes, through every read path. It
//! must never panic; the paths must agree; what decodes must be well formed;
//! and re-encoding what decoded must reproduce it bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_codec::{decode_into, decode_range_into, ChunkIter, XorChunk};

fuzz_target!(|data: &[u8]| {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let bulk = decode_into(data, &mut ts, &mut vs);
    assert_eq!(ts.len(), vs.len());
    if bulk.is_err() {
        assert!(ts.is_empty());
    }
    assert!(ts.windows(2).all(|w| w[0] < w[1]));

    if let Ok(mut it) = ChunkIter::new(data) {
        let mut n = 0;
        while let Some((t, v)) = it.next_sample() {
            if bulk.is_ok() {
                assert_eq!(Some(&t), ts.get(n));
                assert_eq!(Some(v.to_bits()), vs.get(n).map(|v| v.to_bits()));
            }
            n += 1;
        }
        assert_eq!(it.err().is_some(), bulk.is_err());
    }

    // A window in the middle of what decoded.
    if let (Some(&lo), Some(&hi)) = (ts.get(ts.len() / 4), ts.get(ts.len() * 3 / 4)) {
        let (mut rts, mut rvs) = (Vec::new(), Vec::new());
        decode_range_into(data, lo, hi, &mut rts, &mut rvs).unwrap();
        assert_eq!(rts.first(), Some(&lo));
        assert_eq!(rts.last(), Some(&hi));
        assert_eq!(rts.len(), rvs.len());
        assert!(ChunkIter::new(data).unwrap().seek(lo).map(|s| s.0) == Some(lo));
    }

    if bulk.is_ok() {
        let mut c = XorChunk::new();
        for (&t, &v) in ts.iter().zip(&vs) {
            c.append(t, v);
        }
        let (mut ts2, mut vs2) = (Vec::new(), Vec::new());
        decode_into(c.bytes(), &mut ts2, &mut vs2).unwrap();
        assert_eq!(ts2, ts);
        assert!(vs2.iter().zip(&vs).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
});
