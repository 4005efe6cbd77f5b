//! Native histogram chunks: append and decode speed for one 120-sample
//! chunk of a request-duration histogram, exponential (schema 3, 20
//! populated buckets) and with 10 custom bounds (NHCB).
//!
//! Prints bytes/sample of both chunk kinds and of the log form; criterion
//! reports time per chunk with a throughput of 120 samples.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use strata_codec::histogram::{
    encode_histogram_sample, FloatHistogram, FloatHistogramChunk, Histogram, HistogramChunk, Span,
    CUSTOM_BUCKETS_SCHEMA,
};

const SAMPLES: usize = 120;

/// xorshift: deterministic noise without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A request-duration series scraped every 15 s (with a few ms of jitter):
/// each bucket gains a steady number of requests per scrape, more in the
/// middle buckets, plus noise of about its square root.
fn series(
    schema: i32,
    first_index: i32,
    buckets: usize,
    custom_values: Vec<f64>,
    bound: impl Fn(usize) -> f64,
) -> Vec<(i64, Histogram)> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut counts = vec![0u64; buckets];
    let mut sum = 0.0;
    let middle = buckets as i64 / 2;
    (0..SAMPLES)
        .map(|i| {
            for (b, c) in counts.iter_mut().enumerate() {
                let rate = 30 / (1 + (b as i64 - middle).unsigned_abs());
                let noise = rng.below(2 * (rate as f64).sqrt() as u64 + 1);
                let add = rate + noise;
                *c += add;
                sum += add as f64 * bound(b) * 0.8;
            }
            let mut prev = 0i64;
            let deltas = counts
                .iter()
                .map(|&c| {
                    let d = c as i64 - prev;
                    prev = c as i64;
                    d
                })
                .collect();
            let h = Histogram {
                schema,
                zero_threshold: if custom_values.is_empty() {
                    2f64.powi(-128)
                } else {
                    0.0
                },
                count: counts.iter().sum(),
                sum,
                positive_spans: vec![Span::new(first_index, buckets as u32)],
                positive_buckets: deltas,
                custom_values: custom_values.clone(),
                ..Histogram::default()
            };
            let t = 1_700_000_000_000 + i as i64 * 15_000 + rng.below(5) as i64;
            (t, h)
        })
        .collect()
}

fn exponential() -> Vec<(i64, Histogram)> {
    // Schema 3, buckets -40..-20: about 31 ms to 177 ms.
    series(3, -40, 20, Vec::new(), |b| {
        2f64.powf((b as f64 - 40.0) / 8.0)
    })
}

fn nhcb() -> Vec<(i64, Histogram)> {
    let bounds = vec![0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
    let b2 = bounds.clone();
    series(CUSTOM_BUCKETS_SCHEMA, 0, 11, bounds, move |b| {
        b2.get(b).copied().unwrap_or(10.0)
    })
}

fn int_chunk(samples: &[(i64, Histogram)]) -> HistogramChunk {
    let mut c = HistogramChunk::new();
    for (t, h) in samples {
        c.append(*t, h).unwrap();
    }
    c
}

fn float_chunk(samples: &[(i64, FloatHistogram)]) -> FloatHistogramChunk {
    let mut c = FloatHistogramChunk::new();
    for (t, h) in samples {
        c.append(*t, h).unwrap();
    }
    c
}

fn bench_dataset(c: &mut Criterion, name: &str, samples: Vec<(i64, Histogram)>) {
    let floats: Vec<(i64, FloatHistogram)> =
        samples.iter().map(|(t, h)| (*t, h.to_float())).collect();
    let ints = int_chunk(&samples);
    let fl = float_chunk(&floats);
    let mut log = Vec::new();
    for (_, h) in &samples {
        encode_histogram_sample(h, &mut log);
    }
    let n = SAMPLES as f64;
    eprintln!(
        "\n[{name}] {} buckets, bytes/sample: integer chunk {:.2}, float chunk {:.2}, log form {:.2}",
        samples.first().map_or(0, |(_, h)| h.positive_buckets.len()),
        ints.bytes().len() as f64 / n,
        fl.bytes().len() as f64 / n,
        log.len() as f64 / n,
    );

    report_best(&samples, &floats, &ints, &fl);

    let mut g = c.benchmark_group(format!("histogram_{name}"));
    g.throughput(Throughput::Elements(SAMPLES as u64));
    g.bench_function("append/integer", |b| {
        b.iter(|| black_box(int_chunk(black_box(&samples))))
    });
    g.bench_function("append/float", |b| {
        b.iter(|| black_box(float_chunk(black_box(&floats))))
    });
    let mut h = Histogram::default();
    g.bench_function("decode/integer", |b| {
        b.iter(|| {
            let mut it = ints.iter();
            while let Some(t) = it.next_into(&mut h) {
                black_box((t, &h));
            }
            assert!(it.err().is_none());
        })
    });
    let mut fh = FloatHistogram::default();
    g.bench_function("decode/float", |b| {
        b.iter(|| {
            let mut it = fl.iter();
            while let Some(t) = it.next_into(&mut fh) {
                black_box((t, &fh));
            }
            assert!(it.err().is_none());
        })
    });
    g.finish();
}

/// Nanoseconds per sample of the fastest of many passes of `f` over one
/// chunk: steadier than criterion's mean on a shared machine.
fn best_pass(mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..300 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_nanos() as f64 / SAMPLES as f64);
    }
    best
}

fn report_best(
    samples: &[(i64, Histogram)],
    floats: &[(i64, FloatHistogram)],
    ints: &HistogramChunk,
    fl: &FloatHistogramChunk,
) {
    let append_int = best_pass(|| {
        black_box(int_chunk(black_box(samples)));
    });
    let append_float = best_pass(|| {
        black_box(float_chunk(black_box(floats)));
    });
    let mut h = Histogram::default();
    let decode_int = best_pass(|| {
        let mut it = ints.iter();
        while let Some(t) = it.next_into(&mut h) {
            black_box((t, &h));
        }
    });
    let mut fh = FloatHistogram::default();
    let decode_float = best_pass(|| {
        let mut it = fl.iter();
        while let Some(t) = it.next_into(&mut fh) {
            black_box((t, &fh));
        }
    });
    eprintln!(
        "best-pass ns/sample: append integer {append_int:.0}, float {append_float:.0}; \
         decode integer {decode_int:.0}, float {decode_float:.0}"
    );
}

fn bench_histograms(c: &mut Criterion) {
    bench_dataset(c, "exponential", exponential());
    bench_dataset(c, "nhcb", nhcb());
}

criterion_group!(benches, bench_histograms);
criterion_main!(benches);
