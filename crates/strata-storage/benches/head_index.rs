//! The head's series index at a million series: a write request's lookups
//! (`Head::get_many`, what every request's series resolution runs), every
//! series in id order (`Head::all_series`, the background passes and the
//! seal), the head's memory by part (`Head::memory`, every `/metrics`
//! scrape), and the selection of series (`Head::select_ids` then
//! `Head::series_for`, every head read): by a label, a host's dashboard
//! panel, a metric over a whole job.
//!
//! `cargo bench -p strata-storage --bench head_index`. Series are
//! node_exporter-like label sets (a name, an instance, a job and a
//! per-series label), 1,000,000 by default (`STRATA_BENCH_SERIES`).
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::head::Head;

/// The `strata` binary's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Series a write request carries, about what vmagent sends.
const REQUEST: usize = 2_000;

fn series_count() -> usize {
    std::env::var("STRATA_BENCH_SERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// Label set `i`: 500 metrics by 2,000 instances, sorted by name.
fn labels(i: usize) -> Vec<Label> {
    vec![
        Label::new("__name__", format!("node_metric_{}_total", i % 500)),
        Label::new(
            "instance",
            format!("10.0.{}.{}:9100", i / 500 / 250, i / 500 % 250),
        ),
        Label::new("job", "node"),
        Label::new("mode", format!("m{}", i % 7)),
    ]
}

fn bench(c: &mut Criterion) {
    let n = series_count();
    let sets: Vec<Vec<Label>> = (0..n).map(labels).collect();
    let head = Head::new(1, None);
    let created = std::time::Instant::now();
    for l in &sets {
        head.get_or_create(&l[..]);
    }
    println!(
        "head_index: {n} series created in {:.2} s",
        created.elapsed().as_secs_f64()
    );

    let mut g = c.benchmark_group("head_index");
    g.sample_size(20);
    // Requests of consecutive series (one target's page), spread over the
    // head.
    let stride = n / 64;
    g.throughput(Throughput::Elements(REQUEST as u64));
    g.bench_function("get_many", |b| {
        let mut at = 0;
        b.iter(|| {
            at = (at + stride) % (n - REQUEST);
            let found = head.get_many(sets[at..at + REQUEST].iter().map(|l| &l[..]));
            black_box(found)
        })
    });
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("all_series", |b| {
        b.iter_batched(
            || (),
            |()| black_box(head.all_series()),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("memory", |b| b.iter(|| black_box(head.memory())));
    let one_instance = [Matcher::new(MatchOp::Equal, "instance", "10.0.1.17:9100").unwrap()];
    g.throughput(Throughput::Elements(1));
    g.bench_function("select_instance", |b| {
        b.iter(|| black_box(head.series_for(&head.select_ids(&one_instance))))
    });
    // A dashboard panel for one host: a metric, the host and its job (a
    // list of every series), and a mode left out.
    let panel = [
        Matcher::new(MatchOp::Equal, "__name__", "node_metric_3_total").unwrap(),
        Matcher::new(MatchOp::Equal, "instance", "10.0.1.17:9100").unwrap(),
        Matcher::new(MatchOp::Equal, "job", "node").unwrap(),
        Matcher::new(MatchOp::NotEqual, "mode", "m0").unwrap(),
    ];
    g.bench_function("select_host_panel", |b| {
        b.iter(|| black_box(head.series_for(&head.select_ids(&panel))))
    });
    // A rule over a metric on every host of the job.
    let rule = [
        Matcher::new(MatchOp::Equal, "__name__", "node_metric_3_total").unwrap(),
        Matcher::new(MatchOp::Equal, "job", "node").unwrap(),
    ];
    g.bench_function("select_metric_of_job", |b| {
        b.iter(|| black_box(head.series_for(&head.select_ids(&rule))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
