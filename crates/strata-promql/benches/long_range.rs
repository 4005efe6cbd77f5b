//! The engine over long ranges of many series, as a dashboard asks for
//! them: 1,000 counters a minute apart on 200 hosts, a day at 1-minute
//! steps and a week at 10-minute steps.
//! The source holds the samples in memory, so what is timed is the
//! evaluation (selectors reduced as read, range functions, aggregation),
//! not storage.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use strata_codec::Label;
use strata_promql::{Engine, MemSource, QueryLimits};

const SERIES: usize = 1_000;
const MINUTE: i64 = 60_000;
const DAY: i64 = 24 * 60 * MINUTE;
const START: i64 = 1_700_000_000_000;

fn source(days: i64) -> Arc<MemSource> {
    let src = MemSource::new();
    let samples = ((days * DAY + 2 * 60 * MINUTE) / MINUTE) as usize;
    for s in 0..SERIES {
        let labels = [
            Label::new("__name__", "c"),
            Label::new("host", format!("host-{:03}", s / 5)),
            Label::new("series", (s % 5).to_string()),
        ];
        let mut v = 0.0;
        let points: Vec<(i64, f64)> = (0..samples)
            .map(|i| {
                // A restart now and then: a counter reset to handle.
                v = if (i + s) % 5_000 == 0 {
                    0.0
                } else {
                    v + ((i * 7 + s) % 13) as f64
                };
                (START + i as i64 * MINUTE, v)
            })
            .collect();
        src.add_series(&labels, &points);
    }
    Arc::new(src)
}

fn long_range(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = START + 2 * 60 * MINUTE;
    // (group, days, step, queries by name)
    type Run<'a> = (&'a str, i64, i64, &'a [(&'a str, &'a str)]);
    let runs: [Run; 2] = [
        (
            "long_range_1d_1m",
            1,
            MINUTE,
            &[
                ("sum_rate_1h", "sum(rate(c[1h]))"),
                ("sum_by_host_rate_10m", "sum by (host) (rate(c[10m]))"),
                ("max_over_time_30m", "max by (host) (max_over_time(c[30m]))"),
                ("sum_instant", "sum by (host) (c)"),
            ],
        ),
        (
            "long_range_7d_10m",
            7,
            10 * MINUTE,
            &[
                ("sum_rate_1h", "sum(rate(c[1h]))"),
                ("sum_by_host_rate_10m", "sum by (host) (rate(c[10m]))"),
            ],
        ),
    ];
    for (group, days, step, queries) in runs {
        let engine = Engine::new(source(days), QueryLimits::default());
        let end = start + days * DAY;
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(
            (SERIES as i64 * (days * DAY / step + 1)) as u64,
        ));
        g.sample_size(10);
        for &(name, q) in queries {
            g.bench_function(name, |b| {
                b.iter(|| {
                    rt.block_on(engine.range_query(q, start, end, step, None))
                        .unwrap()
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, long_range);
criterion_main!(benches);
