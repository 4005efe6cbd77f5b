//! Sample builders shared by the unit and property tests.

use super::*;

/// Spans covering exactly the given increasing bucket indices.
pub(super) fn spans_of(indices: &[i64]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut next = 0i64;
    for &i in indices {
        match spans.last_mut() {
            Some(last) if i == next => last.length += 1,
            _ => spans.push(Span::new((i - next) as i32, 1)),
        }
        next = i + 1;
    }
    spans
}

/// Deltas between neighbours from absolute counts.
pub(super) fn deltas(abs: &[u64]) -> Vec<i64> {
    let mut prev = 0i64;
    abs.iter()
        .map(|&a| {
            let d = a as i64 - prev;
            prev = a as i64;
            d
        })
        .collect()
}

/// A histogram from (index, count) pairs per side.
pub(super) fn hist(
    schema: i32,
    pos: &[(i64, u64)],
    neg: &[(i64, u64)],
    zero: u64,
    sum: f64,
) -> Histogram {
    let (pi, pc): (Vec<i64>, Vec<u64>) = pos.iter().copied().unzip();
    let (ni, nc): (Vec<i64>, Vec<u64>) = neg.iter().copied().unzip();
    Histogram {
        schema,
        zero_threshold: if schema == CUSTOM_BUCKETS_SCHEMA {
            0.0
        } else {
            2f64.powi(-128)
        },
        zero_count: zero,
        count: pc.iter().sum::<u64>() + nc.iter().sum::<u64>() + zero,
        sum,
        positive_spans: spans_of(&pi),
        positive_buckets: deltas(&pc),
        negative_spans: spans_of(&ni),
        negative_buckets: deltas(&nc),
        custom_values: Vec::new(),
        counter_reset_hint: CounterResetHint::Unknown,
    }
}

/// Request durations in seconds observed into schema 3 buckets, 120 scrapes
/// 15 s apart, a few hundred requests a scrape spread over ~20 buckets.
pub(super) fn request_durations() -> Vec<(i64, Histogram)> {
    let mut counts = [0u64; 22];
    let mut zero = 0;
    let mut sum = 0.0;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..120)
        .map(|i| {
            for (b, c) in counts.iter_mut().enumerate() {
                // Most requests land in the middle buckets.
                let centre = 11i64 - b as i64;
                let weight = 40 / (1 + centre.unsigned_abs());
                let add = next() % (weight + 1);
                *c += add;
                sum += add as f64 * 2f64.powf((b as f64 - 40.0) / 8.0);
            }
            zero += next() % 2;
            // Buckets -40 ..= -19 at schema 3: about 31 ms to 190 ms.
            let pos: Vec<(i64, u64)> = counts
                .iter()
                .enumerate()
                .map(|(b, &c)| (b as i64 - 40, c))
                .collect();
            let t = 1_700_000_000_000 + i * 15_000 + (next() % 5) as i64;
            (t, hist(3, &pos, &[], zero, sum))
        })
        .collect()
}

/// The same growth with 10 custom bounds (schema -53).
pub(super) fn nhcb_durations() -> Vec<(i64, Histogram)> {
    let bounds = vec![0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
    let mut counts = [0u64; 11];
    let mut sum = 0.0;
    (0..120)
        .map(|i| {
            for (b, c) in counts.iter_mut().enumerate() {
                // A steady rate per bucket, with a little noise.
                let add = (11 - b as u64) * 3 + (i as u64 * 7 + b as u64 * 13) % 5;
                *c += add;
                sum += add as f64 * bounds.get(b).copied().unwrap_or(10.0) * 0.7;
            }
            let pos: Vec<(i64, u64)> = counts
                .iter()
                .enumerate()
                .map(|(b, &c)| (b as i64, c))
                .collect();
            let mut h = hist(CUSTOM_BUCKETS_SCHEMA, &pos, &[], 0, sum);
            h.custom_values = bounds.clone();
            (1_700_000_000_000 + i * 15_000, h)
        })
        .collect()
}
