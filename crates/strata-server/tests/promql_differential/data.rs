//! The data both servers are given: 41 deterministic series over two hours
//! (counters with resets, gauges, a classic histogram, a series that goes
//! stale, a young counter, info series, samples aligned on 15 s).

use strata_codec::rand::SplitMix64;

use crate::common::promql_compare::WriteSeries;

/// The scrape interval of the generated series.
const INTERVAL_MS: i64 = 15_000;
/// Length of the generated history.
pub(crate) const SPAN_MS: i64 = 2 * 3600 * 1000;
/// Prometheus' stale marker.
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

fn labels(name: &str, pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out = vec![("__name__".to_owned(), name.to_owned())];
    out.extend(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    out
}

/// Scrape timestamps in `[start, end]` for the `idx`-th series: a fixed
/// phase and a few milliseconds of jitter, never on a whole second, so
/// query times (whole or half seconds) never fall on a window edge.
fn scrape_times(rng: &mut SplitMix64, idx: i64, start: i64, end: i64) -> Vec<i64> {
    let phase = 1 + (idx * 1733) % 14_000;
    let mut out = Vec::new();
    let mut t = start + phase;
    while t <= end {
        let mut ts = t + rng.below(40) as i64;
        if ts % 500 == 0 {
            ts += 1;
        }
        out.push(ts);
        t += INTERVAL_MS;
    }
    out
}

/// The generated data set: 41 series over [start, end].
pub(crate) fn generate(start: i64, end: i64) -> Vec<WriteSeries> {
    let mut rng = SplitMix64::new(0x05EE_D0F5_7A7A);
    let mut out = Vec::new();
    let mut idx = 0i64;
    let mut next_idx = || {
        idx += 1;
        idx
    };

    // Counters: 2 jobs × 3 instances × 2 methods; two of them reset.
    for job in ["api", "web"] {
        for instance in ["i0", "i1", "i2"] {
            for method in ["get", "post"] {
                let i = next_idx();
                let times = scrape_times(&mut rng, i, start, end);
                let reset_at = match i {
                    2 => Some(times.len() / 3),
                    7 => Some(times.len() * 3 / 4),
                    _ => None,
                };
                let mut v = (rng.below(1000)) as f64;
                let samples = times
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| {
                        if Some(k) == reset_at {
                            v = rng.below(3) as f64;
                        } else {
                            // Mostly whole increments, sometimes halves, now
                            // and then none.
                            v += (rng.below(40) as f64) * if k % 7 == 0 { 0.5 } else { 1.0 };
                        }
                        (t, v)
                    })
                    .collect();
                out.push(WriteSeries {
                    labels: labels(
                        "diff_requests_total",
                        &[("job", job), ("instance", instance), ("method", method)],
                    ),
                    samples,
                });
            }
        }
    }

    // Gauges: a random walk around a per-series level, some below zero.
    for instance in ["i0", "i1", "i2"] {
        for zone in ["a", "b"] {
            let i = next_idx();
            let times = scrape_times(&mut rng, i, start, end);
            let mut v = 10.0 * (i as f64) - 70.0;
            let samples = times
                .iter()
                .map(|&t| {
                    v += (rng.unit() - 0.5) * 4.0;
                    (t, (v * 1000.0).round() / 1000.0)
                })
                .collect();
            out.push(WriteSeries {
                labels: labels(
                    "diff_temperature",
                    &[("instance", instance), ("zone", zone)],
                ),
                samples,
            });
        }
    }

    // A classic histogram per job: cumulative buckets, _sum and _count.
    let bounds = ["0.1", "0.25", "0.5", "1", "2.5", "+Inf"];
    for job in ["api", "web"] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        // A long-running process: counts far from zero, so the extrapolation
        // of rate() never reaches the zero point (see `diff_young_total`).
        let mut counts = [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0];
        let mut sum = 4000.0;
        let mut bucket_samples: Vec<Vec<(i64, f64)>> = vec![Vec::new(); 6];
        let mut sum_samples = Vec::new();
        let mut count_samples = Vec::new();
        for &t in &times {
            let n = rng.below(20);
            for _ in 0..n {
                let obs = rng.unit().powi(2) * if job == "api" { 1.5 } else { 3.0 };
                sum += obs;
                for (b, bound) in bounds.iter().enumerate() {
                    let le: f64 = bound.parse().unwrap_or(f64::INFINITY);
                    if obs <= le {
                        counts[b] += 1.0;
                    }
                }
            }
            for b in 0..6 {
                bucket_samples[b].push((t, counts[b]));
            }
            sum_samples.push((t, sum));
            count_samples.push((t, counts[5]));
        }
        for (b, bound) in bounds.iter().enumerate() {
            out.push(WriteSeries {
                labels: labels(
                    "diff_latency_seconds_bucket",
                    &[("job", job), ("le", bound)],
                ),
                samples: std::mem::take(&mut bucket_samples[b]),
            });
        }
        out.push(WriteSeries {
            labels: labels("diff_latency_seconds_sum", &[("job", job)]),
            samples: sum_samples,
        });
        out.push(WriteSeries {
            labels: labels("diff_latency_seconds_count", &[("job", job)]),
            samples: count_samples,
        });
    }

    // A gauge that goes stale (a stale marker), stays away 20 minutes and
    // comes back; another with a 10-minute gap and no marker.
    for instance in ["i0", "i1"] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        let n = times.len();
        let mut samples = Vec::new();
        for (k, &t) in times.iter().enumerate() {
            let v = (k % 17) as f64 * 1.25 - 3.0;
            if instance == "i0" {
                if k == n * 2 / 5 {
                    samples.push((t, f64::from_bits(STALE_NAN)));
                    continue;
                }
                if k > n * 2 / 5 && k < n * 2 / 5 + 80 {
                    continue;
                }
            } else if k > n / 2 && k < n / 2 + 40 {
                continue;
            }
            samples.push((t, v));
        }
        out.push(WriteSeries {
            labels: labels("diff_flaky", &[("instance", instance)]),
            samples,
        });
    }

    // A counter of a process started an hour into the data, from zero:
    // rate() extrapolates towards its zero point.
    let i = next_idx();
    let times = scrape_times(&mut rng, i, start + SPAN_MS / 2, end);
    let mut v = 0.0;
    out.push(WriteSeries {
        labels: labels("diff_young_total", &[("instance", "i0")]),
        samples: times
            .iter()
            .map(|&t| {
                // The first value puts the zero point 7.5 to 16.5 s before the
                // first sample, where the two orders of clamping disagree.
                v += if v == 0.0 { 10.0 } else { rng.below(30) as f64 };
                (t, v)
            })
            .collect(),
    });

    // Info-style series for group_left joins.
    for (instance, version) in [("i0", "1.0"), ("i1", "1.1"), ("i2", "2.0")] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        out.push(WriteSeries {
            labels: labels(
                "diff_build_info",
                &[("instance", instance), ("version", version)],
            ),
            samples: times.iter().map(|&t| (t, 1.0)).collect(),
        });
    }

    // Samples exactly on multiples of 15 s: windows start on a sample.
    let first = start.div_euclid(INTERVAL_MS) * INTERVAL_MS + INTERVAL_MS;
    out.push(WriteSeries {
        labels: labels("diff_aligned", &[("instance", "i0")]),
        samples: (0..)
            .map(|k| first + k * INTERVAL_MS)
            .take_while(|&t| t <= end)
            .map(|t| (t, ((t / INTERVAL_MS) % 11) as f64))
            .collect(),
    });
    out
}
