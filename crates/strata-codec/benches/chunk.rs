//! Chunk encode/decode speed and size on node-exporter-like data: Gorilla
//! chunks, the head's tail chunks (Gorilla timestamps, decimal values),
//! sealed chunks, and the `tsz` crate as the baseline.
//!
//! Prints bytes/sample per value kind and overall; criterion reports the
//! time for the whole data set, whose sample count is printed alongside.

#![allow(clippy::unwrap_used)]

mod data;
mod real;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use data::{node_exporter_like, Jitter, Series, MIX};
use strata_codec::chunk::tail::decode_tail_range_into;
use strata_codec::{
    decode_chunk_range_into, decode_into, encode_sealed, encode_sealed_with, ChunkIter,
    SealScratch, TailChunk, XorChunk,
};
use tsz::stream::{BufferedReader, BufferedWriter};
use tsz::{DataPoint, Decode, Encode, StdDecoder, StdEncoder};

/// One series' samples, whichever data set it comes from.
type Samples<'a> = (&'a [i64], &'a [f64]);

fn samples(s: &Series) -> Samples<'_> {
    (&s.ts, &s.vs)
}

fn strata_encode((ts, vs): Samples) -> Vec<u8> {
    let mut c = XorChunk::new();
    for (&t, &v) in ts.iter().zip(vs) {
        c.append(t, v);
    }
    c.bytes().to_vec()
}

fn tail_encode((ts, vs): Samples) -> Vec<u8> {
    let mut c = TailChunk::new();
    for (&t, &v) in ts.iter().zip(vs) {
        c.append(t, v);
    }
    c.bytes().to_vec()
}

fn tail_decode(bytes: &[u8], ts: &mut Vec<i64>, vs: &mut Vec<f64>) {
    decode_tail_range_into(bytes, i64::MIN, i64::MAX, ts, vs).unwrap();
}

fn sealed_encode((ts, vs): Samples) -> Vec<u8> {
    let mut out = Vec::new();
    encode_sealed(ts, vs, &mut out);
    out
}

fn tsz_encode((ts, vs): Samples) -> Box<[u8]> {
    let start = ts.first().copied().unwrap_or(0) as u64;
    let mut e = StdEncoder::new(start, BufferedWriter::new());
    for (&t, &v) in ts.iter().zip(vs) {
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

/// Bytes of one series in each codec, (gorilla, tail, sealed, tsz), after
/// checking that each round-trips it bit for bit (tsz: its timestamps).
fn sizes((ts0, vs0): Samples) -> [usize; 4] {
    let same = |ts: &[i64], vs: &[f64]| {
        ts == ts0
            && vs.len() == vs0.len()
            && vs.iter().zip(vs0).all(|(x, y)| x.to_bits() == y.to_bits())
    };
    let sb = strata_encode((ts0, vs0));
    let hb = tail_encode((ts0, vs0));
    let tb = tsz_encode((ts0, vs0));
    let cb = sealed_encode((ts0, vs0));
    let (mut ts, mut vs) = (vec![], vec![]);
    decode_chunk_range_into(&cb, i64::MIN, i64::MAX, &mut ts, &mut vs).unwrap();
    assert!(same(&ts, &vs), "sealed round trip");
    let (mut ts, mut vs) = (vec![], vec![]);
    decode_into(&sb, &mut ts, &mut vs).unwrap();
    assert!(same(&ts, &vs), "gorilla round trip");
    let (mut ts, mut vs) = (vec![], vec![]);
    tail_decode(&hb, &mut ts, &mut vs);
    assert!(same(&ts, &vs), "tail round trip");
    let (mut tts, mut tvs) = (vec![], vec![]);
    tsz_decode(tb.clone(), &mut tts, &mut tvs);
    assert_eq!(tts, ts0, "tsz round trip");
    [sb.len(), hb.len(), cb.len(), tb.len()]
}

/// Checks every codec round-trips the data and prints their sizes, by
/// group and overall.
fn report_sizes(label: &str, groups: &[(String, Vec<Samples>)]) {
    let series: usize = groups.iter().map(|(_, g)| g.len()).sum();
    let total: usize = groups.iter().flat_map(|(_, g)| g).map(|s| s.0.len()).sum();
    eprintln!("\n[{label}] {series} series, {total} samples");
    eprintln!(
        "{:<12} {:>14} {:>14} {:>14} {:>14}",
        "group", "gorilla B/smpl", "tail B/smpl", "sealed B/smpl", "tsz B/smpl"
    );
    let line = |name: &str, n: usize, sum: [usize; 4]| {
        let [a, b, c, d] = sum.map(|x| x as f64 / n as f64);
        eprintln!("{name:<12} {a:>14.3} {b:>14.3} {c:>14.3} {d:>14.3}");
    };
    let (mut all_n, mut all) = (0, [0; 4]);
    for (name, group) in groups {
        let (mut n, mut sum) = (0, [0; 4]);
        for &s in group {
            n += s.0.len();
            for (x, y) in sum.iter_mut().zip(sizes(s)) {
                *x += y;
            }
        }
        all_n += n;
        for (x, y) in all.iter_mut().zip(sum) {
            *x += y;
        }
        line(name, n, sum);
    }
    line("all", all_n, all);
}

/// The synthetic data grouped by kind, in [`MIX`] order.
fn by_kind(data: &[Series]) -> Vec<(String, Vec<Samples<'_>>)> {
    MIX.iter()
        .map(|(kind, _)| {
            let group = data.iter().filter(|s| s.kind == *kind).map(samples);
            (format!("{kind:?}"), group.collect())
        })
        .collect()
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
fn report_best_decode(total: usize, e: &Encoded) {
    let (strata, tail, sealed, tsz) = (&e.gorilla, &e.tail, &e.sealed, &e.tsz);
    let (mut ts, mut vs) = (Vec::with_capacity(400), Vec::with_capacity(400));
    let (mut g, mut h, mut s, mut z) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..10 {
        h = h.min(best_pass(total, 20, || {
            for bytes in tail {
                ts.clear();
                vs.clear();
                tail_decode(black_box(bytes), &mut ts, &mut vs);
                black_box((&ts, &vs));
            }
        }));
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
        "best-pass decode ns/sample: gorilla {g:.2}, tail {h:.2}, sealed {s:.2}, tsz {z:.2} (tsz {:.1}x sealed)",
        z / s
    );
}

/// Prints the best-pass encode speed of the sealed and Gorilla encoders,
/// measured interleaved. The sealed encoder reuses one scratch, as the
/// sealer does.
fn report_best_encode(total: usize, data: &[Samples]) {
    let mut scratch = SealScratch::default();
    let mut out = Vec::with_capacity(4096);
    let (mut s, mut g, mut h) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..10 {
        h = h.min(best_pass(total, 10, || {
            for &series in data {
                black_box(tail_encode(black_box(series)));
            }
        }));
        s = s.min(best_pass(total, 10, || {
            for &(ts, vs) in data {
                out.clear();
                encode_sealed_with(&mut scratch, black_box(ts), vs, &mut out);
                black_box(&out);
            }
        }));
        g = g.min(best_pass(total, 10, || {
            for &series in data {
                black_box(strata_encode(black_box(series)));
            }
        }));
    }
    eprintln!("best-pass encode ns/sample: sealed {s:.2}, gorilla {g:.2}, tail {h:.2}");
}

/// One data set encoded in every codec, and its sample count.
struct Encoded {
    gorilla: Vec<Vec<u8>>,
    tail: Vec<Vec<u8>>,
    sealed: Vec<Vec<u8>>,
    tsz: Vec<Box<[u8]>>,
    total: usize,
}

/// Encodes the data in every codec and prints best-pass speeds.
fn encode_all(data: &[Samples]) -> Encoded {
    let total: usize = data.iter().map(|s| s.0.len()).sum();
    let e = Encoded {
        gorilla: data.iter().map(|&s| strata_encode(s)).collect(),
        tail: data.iter().map(|&s| tail_encode(s)).collect(),
        sealed: data.iter().map(|&s| sealed_encode(s)).collect(),
        tsz: data.iter().map(|&s| tsz_encode(s)).collect(),
        total,
    };
    report_best_decode(total, &e);
    report_best_encode(total, data);
    e
}

/// Real node_exporter data (`real::node_exporter_capture`): sizes by job,
/// best-pass speeds, and criterion's decode timings.
fn bench_captured(c: &mut Criterion) {
    let captured = real::node_exporter_capture();
    let mut groups: Vec<(String, Vec<Samples>)> = Vec::new();
    for s in &captured {
        let entry = (&s.ts[..], &s.vs[..]);
        match groups.iter_mut().find(|(job, _)| *job == s.job) {
            Some((_, g)) => g.push(entry),
            None => groups.push((s.job.clone(), vec![entry])),
        }
    }
    report_sizes("captured node_exporter", &groups);
    let data: Vec<Samples> = captured.iter().map(|s| (&s.ts[..], &s.vs[..])).collect();
    let Encoded {
        gorilla,
        tail,
        sealed,
        tsz,
        total,
    } = encode_all(&data);
    let mut g = c.benchmark_group("chunk_captured");
    g.throughput(Throughput::Elements(total as u64));
    g.bench_function("encode/gorilla", |b| {
        b.iter(|| {
            for &s in &data {
                black_box(strata_encode(black_box(s)));
            }
        })
    });
    g.bench_function("encode/tail", |b| {
        b.iter(|| {
            for &s in &data {
                black_box(tail_encode(black_box(s)));
            }
        })
    });
    let (mut ts, mut vs) = (Vec::with_capacity(400), Vec::with_capacity(400));
    g.bench_function("decode/gorilla", |b| {
        b.iter(|| {
            for bytes in &gorilla {
                ts.clear();
                vs.clear();
                decode_into(black_box(bytes), &mut ts, &mut vs).unwrap();
                black_box((&ts, &vs));
            }
        })
    });
    g.bench_function("decode/tail", |b| {
        b.iter(|| {
            for bytes in &tail {
                ts.clear();
                vs.clear();
                tail_decode(black_box(bytes), &mut ts, &mut vs);
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

fn bench_codecs(c: &mut Criterion) {
    for (name, jitter) in [
        ("adjusted", Jitter::Adjusted),
        ("aligned", Jitter::Aligned),
        ("raw_jitter", Jitter::Raw),
    ] {
        let series = node_exporter_like(42, 2, jitter);
        report_sizes(name, &by_kind(&series));
        if jitter != Jitter::Adjusted {
            // Timestamps do not change decode speed much; sizes suffice.
            continue;
        }
        let data: Vec<Samples> = series.iter().map(samples).collect();
        let Encoded {
            gorilla: strata,
            tail,
            sealed,
            tsz,
            total,
        } = encode_all(&data);

        let mut g = c.benchmark_group(format!("chunk_{name}"));
        g.throughput(Throughput::Elements(total as u64));
        g.bench_function("encode/strata", |b| {
            b.iter(|| {
                for &s in &data {
                    black_box(strata_encode(black_box(s)));
                }
            })
        });
        g.bench_function("encode/tail", |b| {
            b.iter(|| {
                for &s in &data {
                    black_box(tail_encode(black_box(s)));
                }
            })
        });
        g.bench_function("encode/sealed", |b| {
            b.iter(|| {
                for &s in &data {
                    black_box(sealed_encode(black_box(s)));
                }
            })
        });
        g.bench_function("encode/tsz", |b| {
            b.iter(|| {
                for &s in &data {
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
        g.bench_function("decode/tail", |b| {
            b.iter(|| {
                for bytes in &tail {
                    ts.clear();
                    vs.clear();
                    tail_decode(black_box(bytes), &mut ts, &mut vs);
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
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = bench_codecs, bench_captured
}
criterion_main!(benches);
