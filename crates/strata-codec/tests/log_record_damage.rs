//! Damaged log records always decode to an error, never a panic.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use strata_codec::{CodecError, Label, LogRecord, LogRecordEncoder, LogSample, NewSeries};

fn record(n_series: u64, n_samples: u64, seed: u64) -> LogRecord {
    LogRecord {
        new_series: (0..n_series)
            .map(|i| NewSeries {
                id: seed.wrapping_add(i),
                labels: vec![Label::new("__name__", "m"), Label::new("i", i.to_string())],
            })
            .collect(),
        samples: (0..n_samples)
            .map(|i| LogSample {
                series: seed.wrapping_add(i % 7),
                t: seed as i64,
                v: f64::from_bits(seed.wrapping_mul(i + 1)),
            })
            .collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn truncation_at_every_offset_errors(n_series in 0u64..5, n_samples in 0u64..40, seed in any::<u64>()) {
        let mut out = vec![];
        record(n_series, n_samples, seed).encode(&mut out);
        for cut in 0..out.len() {
            prop_assert!(LogRecord::decode(&out[..cut]).is_err());
        }
        out.push(0);
        prop_assert!(LogRecord::decode(&out).is_err());
    }

    #[test]
    fn every_single_bit_flip_errors(n_series in 0u64..3, n_samples in 0u64..10, seed in any::<u64>()) {
        let mut out = vec![];
        record(n_series, n_samples, seed).encode(&mut out);
        for bit in 0..out.len() * 8 {
            let mut damaged = out.clone();
            damaged[bit / 8] ^= 0x80 >> (bit % 8);
            let err = LogRecord::decode(&damaged).unwrap_err();
            prop_assert!(matches!(err, CodecError::BadChecksum | CodecError::BadVersion(_)));
        }
    }

    /// Damage in the zstd frame's header can leave the frame meaning the same
    /// bytes (a flag zstd does not need to read them): such a record reads
    /// back as it was. Any other damage is an error, never another record
    /// (the record inside keeps its checksum).
    #[test]
    fn a_compressed_record_damaged_anywhere_errors_or_reads_as_it_was(n_series in 0u64..3, n_samples in 0u64..40, seed in any::<u64>()) {
        let rec = record(n_series, n_samples, seed);
        let mut out = vec![];
        LogRecordEncoder::new().unwrap().encode(&rec, &mut out);
        prop_assert!(LogRecord::decode(&out).is_ok());
        for cut in 0..out.len() {
            prop_assert!(LogRecord::decode(&out[..cut]).is_err());
        }
        let mut longer = out.clone();
        longer.push(0);
        prop_assert!(LogRecord::decode(&longer).is_err());
        for bit in 0..out.len() * 8 {
            let mut damaged = out.clone();
            damaged[bit / 8] ^= 0x80 >> (bit % 8);
            match LogRecord::decode(&damaged) {
                Err(_) => {}
                // Compared encoded, bit for bit (a NaN is not equal to itself).
                Ok(got) => prop_assert_eq!(plain(&got), plain(&rec), "bit {} of {}", bit, out.len() * 8),
            }
        }
    }

    #[test]
    fn arbitrary_compressed_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut framed = vec![strata_codec::log_record::COMPRESSED];
        framed.extend_from_slice(&bytes);
        let _ = LogRecord::decode(&framed);
        // A zstd frame's magic number after a length.
        let mut magic = vec![strata_codec::log_record::COMPRESSED, 0x80, 0x01, 0x28, 0xb5, 0x2f, 0xfd];
        magic.extend_from_slice(&bytes);
        let _ = LogRecord::decode(&magic);
    }

    #[test]
    fn arbitrary_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..400), fix_crc in any::<bool>()) {
        // With a valid checksum the parser itself is exercised.
        if fix_crc && bytes.len() >= 5 {
            bytes[0] = 1;
            let n = bytes.len() - 4;
            let crc = crc32(&bytes[..n]);
            bytes[n..].copy_from_slice(&crc.to_be_bytes());
        }
        let _ = LogRecord::decode(&bytes);
    }
}

fn plain(rec: &LogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    rec.encode(&mut out);
    out
}

/// CRC-32 (IEEE), bitwise: independent of the implementation under test.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
