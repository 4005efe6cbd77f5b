//! Log-record decoding of arbitrary bytes. It must never panic, and what
//! decodes must re-encode to the very same bytes. A second pass fixes up the
//! version byte and checksum so the fuzzer reaches the parser behind them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_codec::LogRecord;

fn check(bytes: &[u8]) {
    if let Ok(rec) = LogRecord::decode(bytes) {
        let mut out = Vec::new();
        rec.encode(&mut out);
        let again = LogRecord::decode(&out).unwrap();
        assert_eq!(again.new_series, rec.new_series);
        assert_eq!(again.samples.len(), rec.samples.len());
        for (a, b) in again.samples.iter().zip(&rec.samples) {
            assert_eq!((a.series, a.t, a.v.to_bits()), (b.series, b.t, b.v.to_bits()));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= 5 {
        let mut fixed = data.to_vec();
        fixed[0] = 1;
        let n = fixed.len() - 4;
        let crc = crc32(&fixed[..n]);
        fixed[n..].copy_from_slice(&crc.to_be_bytes());
        check(&fixed);
    }
});

/// CRC-32 (IEEE), bitwise, as the record trailer uses.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
