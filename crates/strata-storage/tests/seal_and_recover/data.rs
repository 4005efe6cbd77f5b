//! The series the tests write, with awkward values (NaNs of several
//! payloads, signed zero, infinities, subnormals), and the samples they
//! expect to read back, as bits.

use strata_codec::Label;
use strata_storage::IngestSeries;

pub(crate) fn series(job: &str, instance: u32, samples: Vec<(i64, f64)>) -> IngestSeries {
    IngestSeries {
        labels: vec![
            Label::new("__name__", "node_cpu_seconds_total"),
            Label::new("instance", format!("host-{instance}")),
            Label::new("job", job),
        ],
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

/// 3 series × 2.5 hours of 15 s samples with awkward values.
pub(crate) fn dataset(t0: i64) -> Vec<IngestSeries> {
    let special = [
        f64::NAN,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
        f64::from_bits(0x7ff0000000000002),
    ];
    (0..3)
        .map(|i| {
            let samples = (0..600)
                .map(|k| {
                    let t = t0 + k * 15_000 + i64::from(i);
                    let v = if k % 50 == 7 {
                        special[(k as usize / 50) % special.len()]
                    } else {
                        k as f64 * 0.1 + f64::from(i)
                    };
                    (t, v)
                })
                .collect();
            series(if i == 2 { "api" } else { "node" }, i, samples)
        })
        .collect()
}

/// `n` series × 2.5 hours of 15 s samples, three buckets.
pub(crate) fn many_series(t0: i64, n: u32) -> Vec<IngestSeries> {
    (0..n)
        .map(|i| {
            let samples = (0..600)
                .map(|k| {
                    let v = if k % 97 == 5 {
                        f64::from_bits(0x7ff0000000000002)
                    } else {
                        (k as f64 * 0.37 + f64::from(i)).sin() * 1e3
                    };
                    (t0 + k * 15_000 + i64::from(i), v)
                })
                .collect();
            series(if i == 0 { "api" } else { "node" }, i, samples)
        })
        .collect()
}

pub(crate) fn expected(data: &[IngestSeries]) -> Vec<(Vec<Label>, Vec<i64>, Vec<u64>)> {
    let mut e: Vec<_> = data
        .iter()
        .map(|s| {
            (
                s.labels.clone(),
                s.samples.iter().map(|x| x.0).collect(),
                s.samples.iter().map(|x| x.1.to_bits()).collect(),
            )
        })
        .collect();
    e.sort();
    e
}
