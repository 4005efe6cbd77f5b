use super::*;
use crate::chunk::XorChunk;

fn encode(samples: &[(i64, f64)]) -> TailChunk {
    let mut c = TailChunk::new();
    for &(t, v) in samples {
        c.append(t, v);
    }
    c
}

fn decoded(bytes: &[u8], mint: i64, maxt: i64) -> Vec<(i64, u64)> {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    decode_tail_range_into(bytes, mint, maxt, &mut ts, &mut vs).unwrap();
    ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
}

fn bits(samples: &[(i64, f64)]) -> Vec<(i64, u64)> {
    samples.iter().map(|&(t, v)| (t, v.to_bits())).collect()
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn fits_a_chunk_entry() {
    assert_eq!(std::mem::size_of::<TailChunk>(), 64);
}

#[test]
fn every_kind_of_value_round_trips_bit_for_bit() {
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let values = [
        0.0,
        -0.0,
        1.0,
        12_345.67,
        12_350.12,
        12_350.12,
        stale,
        12_360.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        1.0 / 3.0,
        0.1 + 0.2,
        4_503_599_627_370_496.0,
        9_007_199_254_740_993.0,
        -7.25,
        1e-300,
        123_456_789.123_456,
        42.0,
    ];
    // Every ordered pair, so each value follows each other once.
    let mut samples = Vec::new();
    let mut t = -5_000_000_000_000i64;
    for a in values {
        for b in values {
            for v in [a, b] {
                samples.push((t, v));
                t += 15_000;
            }
        }
    }
    let c = encode(&samples);
    assert_eq!(c.len() as usize, samples.len());
    assert_eq!(decoded(c.bytes(), i64::MIN, i64::MAX), bits(&samples));
    assert_eq!(c.first_t(), Some(samples[0].0));
    assert_eq!(c.last_t(), samples.last().map(|s| s.0));
}

#[test]
fn random_series_round_trip_and_ranges_cut() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let n = 1 + (rng.next() % 400) as usize;
        let kind = round % 6;
        let mut t = (rng.next() as i64) >> 20;
        let mut counter = (rng.next() % 1_000_000) as f64 / 100.0;
        let mut samples = Vec::with_capacity(n);
        for i in 0..n {
            t += match rng.next() % 8 {
                0 => 1,
                1 => (rng.next() % 1_000_000) as i64 + 1,
                _ => 15_000 + (rng.next() % 7) as i64 - 3,
            };
            let v = match kind {
                0 => {
                    counter += (rng.next() % 500) as f64 / 100.0;
                    counter
                }
                1 => f64::from_bits(rng.next()),
                2 => (rng.next() % 10) as f64,
                3 => (rng.next() % 1_000_000_000_000) as f64 * 4096.0,
                4 if i % 17 == 0 => f64::from_bits(0x7ff0_0000_0000_0002),
                4 => (rng.next() % 100_000) as f64 / 1000.0,
                _ => ((rng.next() % 1000) as f64).sqrt(),
            };
            samples.push((t, v));
        }
        let c = encode(&samples);
        let want = bits(&samples);
        assert_eq!(
            decoded(c.bytes(), i64::MIN, i64::MAX),
            want,
            "round {round}"
        );
        let (lo, hi) = (samples[n / 3].0, samples[2 * n / 3].0);
        let cut: Vec<(i64, u64)> = want
            .iter()
            .copied()
            .filter(|&(t, _)| lo <= t && t <= hi)
            .collect();
        assert_eq!(decoded(c.bytes(), lo, hi), cut, "round {round}");
        let mut t_out = vec![0; n];
        let mut v_out = vec![0.0; n];
        let k = decode_tail_range_to_slices(c.bytes(), lo, hi, &mut t_out, &mut v_out).unwrap();
        assert_eq!(k, cut.len());
        // Appending still works after a read.
        let mut c = c;
        c.append(t + 1, 1.5);
        assert_eq!(c.len() as usize, n + 1);
    }
}

#[test]
fn decimal_counters_take_under_half_of_gorilla() {
    // node_cpu_seconds_total-like: hundredths, growing by up to 5 s a
    // scrape, scraped every 15 s exactly.
    let mut rng = Rng(7);
    let mut v = 123_456.78;
    let samples: Vec<(i64, f64)> = (0..120)
        .map(|i| {
            v = ((v * 100.0 + (rng.next() % 500) as f64).round()) / 100.0;
            (1_700_000_000_000 + i * 15_000, v)
        })
        .collect();
    let tail = encode(&samples);
    let mut xor = XorChunk::new();
    for &(t, v) in &samples {
        xor.append(t, v);
    }
    assert_eq!(decoded(tail.bytes(), i64::MIN, i64::MAX), bits(&samples));
    assert!(
        tail.bytes().len() * 2 < xor.bytes().len(),
        "{} against {}",
        tail.bytes().len(),
        xor.bytes().len()
    );
}

#[test]
fn values_without_decimals_cost_little_more_than_gorilla() {
    let mut rng = Rng(11);
    let samples: Vec<(i64, f64)> = (0..200)
        .map(|i| (i * 1000, f64::from_bits(rng.next() >> 2)))
        .collect();
    let tail = encode(&samples);
    let mut xor = XorChunk::new();
    for &(t, v) in &samples {
        xor.append(t, v);
    }
    assert_eq!(decoded(tail.bytes(), i64::MIN, i64::MAX), bits(&samples));
    // One bit more per changed value at most.
    assert!(tail.bytes().len() <= xor.bytes().len() + 200 / 8 + 1);
}

#[test]
fn damaged_chunks_fail_without_panicking() {
    let mut rng = Rng(3);
    let mut v = 10.5;
    let samples: Vec<(i64, f64)> = (0..300)
        .map(|i| {
            v += (rng.next() % 100) as f64 / 10.0;
            (i * 5000, if i % 50 == 7 { f64::NAN } else { v })
        })
        .collect();
    let c = encode(&samples);
    let good = c.bytes().to_vec();
    for cut in 0..good.len() {
        let (mut ts, mut vs) = (vec![7], vec![7.0]);
        if decode_tail_range_into(&good[..cut], i64::MIN, i64::MAX, &mut ts, &mut vs).is_err() {
            assert_eq!((ts.len(), vs.len()), (1, 1), "nothing appended on error");
        }
    }
    for _ in 0..2000 {
        let mut bad = good.clone();
        let at = (rng.next() as usize) % bad.len();
        bad[at] ^= 1 << (rng.next() % 8);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let _ = decode_tail_range_into(&bad, i64::MIN, i64::MAX, &mut ts, &mut vs);
        assert!(ts.len() <= samples.len() + 1 + bad.len() * 4);
    }
    // A huge count with few bits allocates by the bits, not the count.
    let mut bad = good.clone();
    bad[..4].copy_from_slice(&0xFE00_0000u32.to_be_bytes());
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let _ = decode_tail_range_into(&bad, i64::MIN, i64::MAX, &mut ts, &mut vs);
    assert!(ts.capacity() < good.len() * 8);
}
