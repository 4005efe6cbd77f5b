use super::*;
use crate::CodecError;

const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

fn chunk_of(samples: &[(i64, f64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, v);
    }
    c
}

fn assert_round_trip(samples: &[(i64, f64)]) {
    let c = chunk_of(samples);
    assert_eq!(c.len() as usize, samples.len());
    let want: Vec<(i64, u64)> = samples.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    let via_iter: Vec<(i64, u64)> = c.iter().map(|(t, v)| (t, v.to_bits())).collect();
    assert_eq!(via_iter, want);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    decode_into(c.bytes(), &mut ts, &mut vs).unwrap();
    let bulk: Vec<(i64, u64)> = ts.iter().zip(&vs).map(|(&t, v)| (t, v.to_bits())).collect();
    assert_eq!(bulk, want);
}

#[test]
fn empty_chunk_is_a_header() {
    let c = XorChunk::new();
    assert_eq!(c.bytes(), &[0, 0, 0, 0]);
    assert!(c.is_empty());
    assert_eq!((c.first_t(), c.last_t(), c.last_v()), (None, None, None));
    assert_eq!(c.iter().count(), 0);
    assert_eq!(
        ChunkIter::new(&[0, 0, 0]).err(),
        Some(CodecError::Truncated)
    );
}

#[test]
fn special_values_round_trip_bit_exact() {
    let values = [
        f64::from_bits(STALE_NAN),
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_dead_beef_0001),
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE / 4.0,
        f64::from_bits(1),
        f64::MAX,
        f64::MIN,
        1.0,
        1.0,
        0.1,
    ];
    let samples: Vec<(i64, f64)> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (i as i64 * 15_000, v))
        .collect();
    assert_round_trip(&samples);
}

#[test]
fn extreme_timestamps_round_trip() {
    assert_round_trip(&[(i64::MIN, 1.0), (i64::MAX, 2.0)]);
    assert_round_trip(&[(i64::MIN, 1.0), (-1, 2.0), (0, 3.0), (i64::MAX, 4.0)]);
    assert_round_trip(&[
        (i64::MIN, 0.0),
        (i64::MIN + 1, 0.0),
        (i64::MAX - 1, 0.0),
        (i64::MAX, 0.0),
    ]);
    assert_round_trip(&[(-1_000_000, 0.0), (-999_999, 1.0), (-10, 2.0), (-9, 3.0)]);
    // Every bucket edge, on both sides.
    let mut t = 0i64;
    let mut delta = 15_000i64;
    let mut samples = vec![(t, 0.0)];
    for dod in [
        0,
        1,
        -1,
        8191,
        8192,
        8193,
        -8191,
        -8192,
        -8193,
        65536,
        65537,
        -65535,
        -65536,
        524_288,
        524_289,
        -524_287,
        -524_288,
        1 << 40,
        -(1 << 40),
    ] {
        delta += dod;
        t += delta;
        samples.push((t, dod as f64));
    }
    assert_round_trip(&samples);
}

#[test]
fn accessors_track_appends() {
    let c = chunk_of(&[(10, 1.5), (20, f64::from_bits(STALE_NAN))]);
    assert_eq!(c.first_t(), Some(10));
    assert_eq!(c.last_t(), Some(20));
    assert_eq!(c.last_v().map(f64::to_bits), Some(STALE_NAN));
    assert!(c.heap_bytes() >= c.bytes().len());
    assert_eq!(c.bytes().first_chunk::<4>(), Some(&[0, 0, 0, 2]));
}

#[test]
fn regular_scrapes_compress_to_about_a_bit_and_a_half() {
    let samples: Vec<(i64, f64)> = (0..120)
        .map(|i| (1_700_000_000_000 + i * 15_000, 1.0))
        .collect();
    let c = chunk_of(&samples);
    // 4-byte header, 16 bytes for the first two samples, 2 bits per sample after.
    assert!(c.bytes().len() <= 4 + 16 + 30 + 1, "{}", c.bytes().len());
}

#[test]
fn seek_finds_first_at_or_after() {
    let c = chunk_of(&[(10, 1.0), (20, 2.0), (30, 3.0)]);
    let mut it = c.iter();
    assert_eq!(it.seek(15), Some((20, 2.0)));
    // The current sample still qualifies: no move.
    assert_eq!(it.seek(12), Some((20, 2.0)));
    assert_eq!(it.next_sample(), Some((30, 3.0)));
    assert_eq!(it.seek(31), None);
    assert!(it.err().is_none());
    assert_eq!(c.iter().seek(i64::MIN), Some((10, 1.0)));
}

#[test]
fn range_decode_keeps_bounds_inclusive() {
    let samples: Vec<(i64, f64)> = (0..50).map(|i| (i * 10, i as f64)).collect();
    let c = chunk_of(&samples);
    let (mut ts, mut vs) = (vec![-1], vec![-1.0]);
    decode_range_into(c.bytes(), 100, 200, &mut ts, &mut vs).unwrap();
    assert_eq!(
        ts,
        [-1, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200]
    );
    assert_eq!(vs.len(), ts.len());
    ts.clear();
    vs.clear();
    decode_range_into(c.bytes(), 1000, 2000, &mut ts, &mut vs).unwrap();
    assert!(ts.is_empty());
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let samples: Vec<(i64, f64)> = (0..40)
        .map(|i| (i * 15_001 + (i % 3), (i as f64).sqrt()))
        .collect();
    let c = chunk_of(&samples);
    let bytes = c.bytes();
    for cut in 0..bytes.len() {
        let part = bytes.get(..cut).unwrap();
        let (mut ts, mut vs) = (vec![], vec![]);
        assert!(decode_into(part, &mut ts, &mut vs).is_err(), "cut at {cut}");
        assert!(ts.is_empty() && vs.is_empty());
        if let Ok(mut it) = ChunkIter::new(part) {
            while it.next_sample().is_some() {}
            assert!(it.err().is_some(), "cut at {cut}");
        }
    }
}

#[test]
fn corrupt_count_does_not_over_allocate() {
    let mut bytes = chunk_of(&[(1, 1.0), (2, 2.0)]).bytes().to_vec();
    if let Some(h) = bytes.first_chunk_mut::<4>() {
        *h = u32::MAX.to_be_bytes();
    }
    let (mut ts, mut vs) = (vec![], vec![]);
    assert!(decode_into(&bytes, &mut ts, &mut vs).is_err());
    assert!(ts.capacity() < 1000);
}

#[test]
fn bitstream_matches_prometheus() {
    // Samples (1000, 1.0), (2000, 2.0), (3000, 2.0), (5000, 3.0): the bit
    // stream after the count is what Prometheus' XOR chunk writes after its own.
    let c = chunk_of(&[(1000, 1.0), (2000, 2.0), (3000, 2.0), (5000, 3.0)]);
    let mut want = vec![0, 0, 0, 4];
    want.extend_from_slice(&[0xD0, 0x0F]); // varint zigzag(1000) = 2000
    want.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    want.extend_from_slice(&[0xE8, 0x07]); // uvarint 1000
                                           // 2.0 ^ 1.0 = 0x7FF0...: '1','1', leading 1 (5 bits), sig 11 (6 bits), 11 ones;
                                           // then dod 0 '0' and value unchanged '0';
                                           // then dod 1000 '10' + 14 bits, 3.0 ^ 2.0 = 0x0008...: 12 leading and
                                           // 51 trailing zeros do not fit the window (52 trailing), so a new one:
                                           // '1','1', leading 12, sig 1, the bit 1.
    let bits = "11".to_owned()
        + "00001"
        + "001011"
        + "11111111111"
        + "0"
        + "0"
        + "10"
        + "00001111101000"
        + "11"
        + "01100"
        + "000001"
        + "1";
    let mut byte = 0u8;
    let mut n = 0;
    for ch in bits.chars() {
        byte = (byte << 1) | u8::from(ch == '1');
        n += 1;
        if n == 8 {
            want.push(byte);
            byte = 0;
            n = 0;
        }
    }
    if n > 0 {
        want.push(byte << (8 - n));
    }
    assert_eq!(c.bytes(), want.as_slice());
}
