//! The head's chunk memory through a bucket (and the bytes of its frozen
//! runs' file, runs replaced by later freezes included), and what freezing
//! costs, on
//! real node_exporter data (the codec's captured fixture: a real
//! Prometheus scraping a real node_exporter and itself, 10 s and 15 s
//! scrapes, an hour, its timestamp jitter included).
//!
//! `cargo bench -p strata-storage --bench head_freeze`. Prints the head's
//! chunk bytes per series as a bucket fills, with the background pass
//! (`Head::freeze_tails`) run every 30 s of data at two freeze thresholds,
//! then criterion's time for a whole bucket's appends and passes, and for
//! closing every series' chunk at the bucket's end (frozen, or its tail
//! written as it is and merged later).
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::head::{AppendPolicy, Head, MemSeries, NONE_SEALED};

/// The `strata` binary's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../../strata-codec/benches/real/mod.rs"]
mod real;

/// The one bucket, wider than the capture.
const BUCKET_MS: i64 = 24 * 3_600_000;

/// The background pass's interval, in data time.
const PASS_MS: i64 = 30_000;

/// Minutes of data after which the table reports.
const AT_MINUTES: [i64; 6] = [5, 10, 20, 30, 45, 60];

/// Freeze thresholds compared: the head's, and Prometheus' chunk size
/// (the head's before runs were merged).
const THRESHOLDS: [u32; 2] = [strata_storage::head::FREEZE_MIN_SAMPLES, 120];

struct Data {
    series: Vec<real::Captured>,
    /// Every sample, in time order: (t, series index, value).
    samples: Vec<(i64, u32, f64)>,
}

fn data() -> Data {
    let series = real::node_exporter_capture();
    let mut samples: Vec<(i64, u32, f64)> = series
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.ts.iter()
                .zip(&s.vs)
                .map(move |(&t, &v)| (t, u32::try_from(i).unwrap(), v))
        })
        .collect();
    samples.sort_by_key(|&(t, i, _)| (t, i));
    Data { series, samples }
}

/// A head holding every series, and the policy appends go through.
fn head(data: &Data) -> (Head, Vec<Arc<MemSeries>>, AppendPolicy) {
    let head = Head::new(1, None);
    let series = data
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let labels = [
                Label::new("job", s.job.as_str()),
                Label::new("series", i.to_string()),
            ];
            head.get_or_create(&labels[..]).0
        })
        .collect();
    // One bucket wider than the capture.
    let policy = AppendPolicy::strict(0, BUCKET_MS);
    (head, series, policy)
}

/// Appends every sample in time order, running the background pass every
/// [`PASS_MS`] of data at `threshold`; calls `at(ms of data so far,
/// samples so far, head)` after each pass.
fn fill(data: &Data, threshold: u32, mut at: impl FnMut(i64, usize, &Head)) -> Head {
    let (head, series, policy) = head(data);
    let start = data.samples.first().map_or(0, |s| s.0);
    let mut next_pass = start + PASS_MS;
    let mut appended = 0usize;
    for &(t, i, v) in &data.samples {
        if t >= next_pass {
            head.freeze_tails(threshold);
            at(next_pass - start, appended, &head);
            next_pass += PASS_MS;
        }
        series[i as usize].append(&[(t, v)], &policy, |_, _, _| {});
        appended += 1;
    }
    head.freeze_tails(threshold);
    at(next_pass - start, appended, &head);
    head
}

fn report(data: &Data) {
    println!(
        "head chunk bytes per series, {} series ({} samples), pass every {} s",
        data.series.len(),
        data.samples.len(),
        PASS_MS / 1000
    );
    print!("| minutes | samples per series |");
    for f in THRESHOLDS {
        print!(" freeze at {f}: heap | its run file |");
    }
    println!();
    println!("|---|---|{}", "---|---|".repeat(THRESHOLDS.len()));
    let mut counts = vec![0; AT_MINUTES.len()];
    let rows: Vec<Vec<(usize, u64)>> = THRESHOLDS
        .iter()
        .map(|&f| {
            let mut row = vec![(0, 0); AT_MINUTES.len()];
            fill(data, f, |ms, n, head| {
                // The first pass at or after each minute.
                for (k, &minutes) in AT_MINUTES.iter().enumerate() {
                    if ms >= minutes * 60_000 && row[k].0 == 0 {
                        row[k] = (head.memory().chunks, head.run_file_bytes());
                        counts[k] = n;
                    }
                }
            });
            row
        })
        .collect();
    for (k, minutes) in AT_MINUTES.iter().enumerate() {
        print!(
            "| {minutes} | {:.0} |",
            counts[k] as f64 / data.series.len() as f64
        );
        for row in &rows {
            let n = data.series.len() as f64;
            print!(" {:.0} | {:.0} |", row[k].0 as f64 / n, row[k].1 as f64 / n);
        }
        println!();
    }
}

fn bench(c: &mut Criterion) {
    let data = data();
    report(&data);
    let mut g = c.benchmark_group("head_bucket");
    g.throughput(Throughput::Elements(data.samples.len() as u64));
    g.sample_size(10);
    for f in THRESHOLDS {
        g.bench_function(format!("append_and_freeze_at_{f}"), |b| {
            b.iter_batched(
                || (),
                |()| black_box(fill(&data, f, |_, _, _| {})),
                BatchSize::PerIteration,
            )
        });
    }
    g.bench_function("append_only", |b| {
        b.iter_batched(
            || (),
            |()| black_box(fill(&data, u32::MAX, |_, _, _| {})),
            BatchSize::PerIteration,
        )
    });
    g.finish();

    // A bucket's end: every series has a sample of the next bucket, and
    // its ended chunk (frozen runs and a tail) is closed: by the freezer's
    // freeze, or as the writer closes it, its tail written as it is (then
    // merged into one run by the freezer).
    let bucket = data.samples.last().map_or(0, |s| s.0).div_euclid(BUCKET_MS);
    let ended = || {
        let head = fill(&data, THRESHOLDS[0], |_, _, _| {});
        let series = head.all_series();
        let policy = AppendPolicy::strict(0, BUCKET_MS);
        for s in &series {
            let out = s.append(&[((bucket + 1) * BUCKET_MS, 1.0)], &policy, |_, _, _| {});
            assert_eq!(out.ended, Some(bucket));
        }
        (head, series)
    };
    let mut g = c.benchmark_group("head_bucket_end");
    g.throughput(Throughput::Elements(data.series.len() as u64));
    g.sample_size(10);
    g.bench_function("freeze_ended", |b| {
        b.iter_batched(
            ended,
            |(head, series)| {
                black_box(head.freeze_ended(bucket));
                (head, series)
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("close_as_it_is", |b| {
        b.iter_batched(
            ended,
            |(head, series)| {
                for s in &series {
                    black_box(head.close_ended_chunk(s, bucket));
                }
                (head, series)
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("merge_closed", |b| {
        b.iter_batched(
            || {
                let (head, series) = ended();
                for s in &series {
                    head.close_ended_chunk(s, bucket);
                }
                (head, series)
            },
            |(head, series)| {
                black_box(head.merge_closed());
                (head, series)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();

    // Reads of a full hour's head (every run frozen at 60 samples): every
    // series' whole hour, and its last 5 minutes (mostly the tail).
    let head = fill(&data, THRESHOLDS[0], |_, _, _| {});
    let all = [Matcher::new(MatchOp::RegexMatch, "job", ".+").unwrap()];
    let (first, last) = (
        data.samples.first().map_or(0, |s| s.0),
        data.samples.last().map_or(0, |s| s.0),
    );
    let mut g = c.benchmark_group("head_read");
    g.throughput(Throughput::Elements(data.series.len() as u64));
    for (name, mint) in [("hour", first), ("last_5m", last - 300_000)] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(head.read_ranges(&all, NONE_SEALED, BUCKET_MS, mint, last)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
