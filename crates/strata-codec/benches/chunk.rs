//! Chunk encode/decode speed and size on node-exporter-like data: Gorilla
//! (head) chunks, sealed chunks, and the `tsz` crate as the baseline.
//!
//! Prints bytes/sample per value kind and overall; criterion reports the
//! time for the whole data set, whose sample count is printed alongside.

#![allow(clippy::unwrap_used)]

mod data;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use data::{node_exporter_like, Jitter, Kind, Series, MIX};
use strata_codec::{
    decode_chunk_range_into, decode_into, encode_sealed, encode_sealed_with, ChunkIter,
    SealScratch, XorChunk,
};
use tsz::stream::{BufferedReader, BufferedWriter};
use tsz::{DataPoint, Decode, Encode, StdDecoder, StdEncoder};

fn strata_encode(s: &Series) -> Vec<u8> {
    let mut c = XorChunk::new();
    for (&t, &v) in s.ts.iter().zip(&s.vs) {
        c.append(t, v);
    }
    c.bytes().to_vec()
}

fn sealed_encode(s: &Series) -> Vec<u8> {
    let mut out = Vec::new();
    encode_sealed(&s.ts, &s.vs, &mut out);
    out
}

fn tsz_encode(s: &Series) -> Box<[u8]> {
    let start = s.ts.first().copied().unwrap_or(0) as u64;
    let mut e = StdEncoder::new(start, BufferedWriter::new());
    for (&t, &v) in s.ts.iter().zip(&s.vs) {
        e.encode(DataPoint::new(t as u64, v));
    }
    e.close()
}

fn tsz_decode(bytes: Box<[u8]>, ts: &mut Vec<i64>, vs: &mut Vec<f64>) {
    let mut d = StdDecoder::new(BufferedReader::new(bytes));
    while let Ok(dp) = d.next() {
        ts.push(dp.get_time() as i64);
        vs.push(dp.get_value());
    }
}

/// Checks every codec round-trips the data and prints their sizes.
fn report_sizes(label: &str, data: &[Series]) {
    let total: usize = data.iter().map(|s| s.ts.len()).sum();
    eprintln!("\n[{label}] {} series, {total} samples", data.len());
    eprintln!(
        "{:<12} {:>14} {:>14} {:>14}",
        "kind", "gorilla B/smpl", "sealed B/smpl", "tsz B/smpl"
    );
    let mut all = (0usize, 0usize, 0usize, 0usize);
    for (kind, _) in MIX {
        let (mut n, mut a, mut b, mut c) = (0usize, 0usize, 0usize, 0usize);
        for s in data.iter().filter(|s| s.kind == kind) {
            let sb = strata_encode(s);
            let tb = tsz_encode(s);
            let cb = sealed_encode(s);
            let (mut ts, mut vs) = (vec![], vec![]);
            decode_chunk_range_into(&cb, i64::MIN, i64::MAX, &mut ts, &mut vs).unwrap();
            assert_eq!(ts, s.ts);
            assert!(vs
                .iter()
                .zip(&s.vs)
                .all(|(x, y)| x.to_bits() == y.to_bits()));
            let (mut ts, mut vs) = (vec![], vec![]);
            decode_into(&sb, &mut ts, &mut vs).unwrap();
            assert_eq!(ts, s.ts);
            assert!(vs
                .iter()
                .zip(&s.vs)
                .all(|(x, y)| x.to_bits() == y.to_bits()));
            let (mut tts, mut tvs) = (vec![], vec![]);
            tsz_decode(tb.clone(), &mut tts, &mut tvs);
            assert_eq!(tts, s.ts, "tsz round trip");
            n += s.ts.len();
            a += sb.len();
            b += tb.len();
            c += cb.len();
        }
        all = (all.0 + n, all.1 + a, all.2 + b, all.3 + c);
        eprintln!(
            "{:<12} {:>14.3} {:>14.3} {:>14.3}",
            format!("{kind:?}"),
            a as f64 / n as f64,
            c as f64 / n as f64,
            b as f64 / n as f64
        );
    }
    eprintln!(
        "{:<12} {:>14.3} {:>14.3} {:>14.3}",
        "all",
        all.1 as f64 / all.0 as f64,
        all.3 as f64 / all.0 as f64,
        all.2 as f64 / all.0 as f64
    );
}

/// Best of `passes` back-to-back runs of `f` over the data, in ns/sample:
/// on a loaded machine the minimum is the steadiest figure.
fn best_pass(total: usize, passes: usize, mut f: impl FnMut()) -> f64 {
    (0..passes)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / total as f64
        })
        .fold(f64::MAX, f64::min)
}

/// Prints the best-pass decode speed of every codec, measured interleaved.
fn report_best_decode(total: usize, strata: &[Vec<u8>], sealed: &[Vec<u8>], tsz: &[Box<[u8]>]) {
    let (mut ts, mut vs) = (Vec::with_capacity(400), Vec::with_capacity(400));
    let (mut g, mut s, mut z) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..10 {
        g = g.min(best_pass(total, 20, || {
            for bytes in strata {
                ts.clear();
                vs.clear();
                decode_into(black_box(bytes), &mut ts, &mut vs).unwrap();
                black_box((&ts, &vs));
            }
        }));
        s = s.min(best_pass(total, 20, || {
            for bytes in sealed {
                ts.clear();
                vs.clear();
                decode_chunk_range_into(black_box(bytes), i64::MIN, i64::MAX, &mut ts, &mut vs)
                    .unwrap();
                black_box((&ts, &vs));
            }
        }));
        let copies: Vec<Box<[u8]>> = tsz.to_vec();
        let t = Instant::now();
        for bytes in copies {
            ts.clear();
            vs.clear();
            tsz_decode(bytes, &mut ts, &mut vs);
            black_box((&ts, &vs));
        }
        z = z.min(t.elapsed().as_nanos() as f64 / total as f64);
    }
    eprintln!(
        "best-pass decode ns/sample: gorilla {g:.2}, sealed {s:.2}, tsz {z:.2} (tsz {:.1}x sealed)",
        z / s
    );
}

/// Prints the best-pass encode speed of the sealed and Gorilla encoders,
/// measured interleaved. The sealed encoder reuses one scratch, as the
/// sealer does.
fn report_best_encode(total: usize, data: &[Series]) {
    let mut scratch = SealScratch::default();
    let mut out = Vec::with_capacity(4096);
    let (mut s, mut g) = (f64::MAX, f64::MAX);
    for _ in 0..10 {
        s = s.min(best_pass(total, 10, || {
            for series in data {
                out.clear();
                encode_sealed_with(&mut scratch, black_box(&series.ts), &series.vs, &mut out);
                black_box(&out);
            }
        }));
        g = g.min(best_pass(total, 10, || {
            for series in data {
                black_box(strata_encode(black_box(series)));
            }
        }));
    }
    eprintln!("best-pass encode ns/sample: sealed {s:.2}, gorilla {g:.2}");
}

fn bench_codecs(c: &mut Criterion) {
    for (name, jitter) in [
        ("adjusted", Jitter::Adjusted),
        ("aligned", Jitter::Aligned),
        ("raw_jitter", Jitter::Raw),
    ] {
        let data = node_exporter_like(42, 2, jitter);
        report_sizes(name, &data);
        if jitter != Jitter::Adjusted {
            // Timestamps do not change decode speed much; sizes suffice.
            continue;
        }
        let total: usize = data.iter().map(|s| s.ts.len()).sum();
        let strata: Vec<Vec<u8>> = data.iter().map(strata_encode).collect();
        let tsz: Vec<Box<[u8]>> = data.iter().map(tsz_encode).collect();
        let sealed: Vec<Vec<u8>> = data.iter().map(sealed_encode).collect();
        report_best_decode(total, &strata, &sealed, &tsz);
        report_best_encode(total, &data);

        let mut g = c.benchmark_group(format!("chunk_{name}"));
        g.throughput(Throughput::Elements(total as u64));
        g.bench_function("encode/strata", |b| {
            b.iter(|| {
                for s in &data {
                    black_box(strata_encode(black_box(s)));
                }
            })
        });
        g.bench_function("encode/sealed", |b| {
            b.iter(|| {
                for s in &data {
                    black_box(sealed_encode(black_box(s)));
                }
            })
        });
        g.bench_function("encode/tsz", |b| {
            b.iter(|| {
                for s in &data {
                    black_box(tsz_encode(black_box(s)));
                }
            })
        });
        let (mut ts, mut vs) = (Vec::with_capacity(400), Vec::with_capacity(400));
        g.bench_function("decode/strata_decode_into", |b| {
            b.iter(|| {
                for bytes in &strata {
                    ts.clear();
                    vs.clear();
                    decode_into(black_box(bytes), &mut ts, &mut vs).unwrap();
                    black_box((&ts, &vs));
                }
            })
        });
        g.bench_function("decode/sealed", |b| {
            b.iter(|| {
                for bytes in &sealed {
                    ts.clear();
                    vs.clear();
                    decode_chunk_range_into(black_box(bytes), i64::MIN, i64::MAX, &mut ts, &mut vs)
                        .unwrap();
                    black_box((&ts, &vs));
                }
            })
        });
        g.bench_function("decode/strata_iter", |b| {
            b.iter(|| {
                let mut sum = 0.0;
                for bytes in &strata {
                    for (t, v) in ChunkIter::new(black_box(bytes)).unwrap() {
                        sum += v + t as f64;
                    }
                }
                black_box(sum)
            })
        });
        g.bench_function("decode/tsz", |b| {
            b.iter_batched(
                || tsz.clone(),
                |chunks| {
                    for bytes in chunks {
                        ts.clear();
                        vs.clear();
                        tsz_decode(bytes, &mut ts, &mut vs);
                        black_box((&ts, &vs));
                    }
                },
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }
    let _ = Kind::Constant;
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = bench_codecs
}
criterion_main!(benches);
