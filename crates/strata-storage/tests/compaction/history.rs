//! Random histories replayed from a seed: in-order samples with gaps and
//! churn, late samples into sealed hours, regular hourly series, and the
//! samples each adds to what the tests expect to read.

use strata_codec::Label;
use strata_storage::IngestSeries;

use crate::samples::Expected;
use crate::setup::HOUR;

/// xorshift64*: a history replays from its seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub(crate) fn labels(i: u64) -> Vec<Label> {
    vec![
        Label::new("__name__", "m"),
        Label::new("host", format!("h{}", i % 5)),
        Label::new("i", i.to_string()),
    ]
}

pub(crate) fn add(want: &mut Expected, req: &[IngestSeries]) {
    for s in req {
        let e = want.entry(s.labels.clone()).or_default();
        for &(t, v) in &s.samples {
            match e.binary_search_by_key(&t, |&(t, _)| t) {
                Ok(_) => {}
                Err(at) => e.insert(at, (t, v.to_bits())),
            }
        }
    }
}

/// Random samples of `series` series over hours `[from, to)`, ascending
/// per series, some hours skipped; one series in four goes away for good
/// at a random hour (churn).
pub(crate) fn history(
    rng: &mut Rng,
    first: i64,
    from: i64,
    to: i64,
    series: u64,
) -> Vec<IngestSeries> {
    (0..series)
        .filter_map(|i| {
            let mut samples = Vec::new();
            let gone = if i % 4 == 1 {
                from + rng.below((to - from) as u64 + 1) as i64
            } else {
                to
            };
            for h in from..gone {
                if rng.below(6) == 0 {
                    continue;
                }
                let per_hour = 1 + rng.below(14) as i64;
                for k in 0..per_hour {
                    let t = first + h * HOUR + k * (HOUR / per_hour) + rng.below(1000) as i64;
                    let v = match rng.below(4) {
                        0 => (rng.below(1000) as f64) * 0.5,
                        1 => f64::from_bits(rng.next() >> 2),
                        _ => (t / 1000) as f64,
                    };
                    samples.push((t, v));
                }
            }
            (!samples.is_empty()).then(|| IngestSeries {
                labels: labels(i),
                samples,
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
        })
        .collect()
}

/// Late samples: new timestamps of known series in sealed hours, a few new
/// series, and some samples already stored (duplicates).
pub(crate) fn late(
    rng: &mut Rng,
    want: &Expected,
    first: i64,
    hours: i64,
    series: u64,
) -> Vec<IngestSeries> {
    let mut out = Vec::new();
    for i in 0..series + 3 {
        if rng.below(3) != 0 {
            continue;
        }
        let mut samples: Vec<(i64, f64)> = (0..1 + rng.below(6))
            .map(|_| {
                let t = first + rng.below((hours * HOUR) as u64) as i64;
                (t, rng.below(100) as f64)
            })
            .collect();
        // A sample already stored, sent again with its value.
        if let Some(held) = want.get(&labels(i)) {
            let (t, v) = held[rng.below(held.len() as u64) as usize];
            samples.push((t, f64::from_bits(v)));
        }
        // Another value at a stored timestamp is refused; keep to new ones.
        let held = want.get(&labels(i));
        samples.retain(|&(t, v)| {
            held.is_none_or(|h| match h.binary_search_by_key(&t, |&(t, _)| t) {
                Ok(at) => h[at].1 == v.to_bits(),
                Err(_) => true,
            })
        });
        samples.sort_by_key(|&(t, _)| t);
        samples.dedup_by_key(|&mut (t, _)| t);
        if !samples.is_empty() {
            out.push(IngestSeries {
                labels: labels(i),
                samples,
                exemplars: Vec::new(),
                histograms: Vec::new(),
            });
        }
    }
    out
}

/// Series `ids`, each with `per_hour` samples ten minutes apart in each of
/// `hours` (counted from `first`).
pub(crate) fn hourly(
    first: i64,
    ids: std::ops::Range<u64>,
    hours: std::ops::Range<i64>,
    per_hour: i64,
) -> Vec<IngestSeries> {
    ids.map(|i| IngestSeries {
        labels: labels(i),
        samples: hours
            .clone()
            .flat_map(|h| {
                (0..per_hour).map(move |k| {
                    let t = first + h * HOUR + 1_000 + k * 600_000;
                    (t, (i as i64 * 1_000 + h * per_hour + k) as f64)
                })
            })
            .collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    })
    .collect()
}
