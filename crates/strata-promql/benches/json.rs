//! The query API's JSON writer on a large range-query result: 1,000 series
//! of 1,000 points (1 M points out), values as a gauge and a counter give
//! them.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use strata_codec::Label;
use strata_promql::http::json::{write_query_data, MatrixChunks};
use strata_promql::value::{MatrixSeries, Point};
use strata_promql::QueryValue;

fn matrix(series: usize, points: usize) -> QueryValue {
    let m = (0..series)
        .map(|s| MatrixSeries {
            labels: Arc::from(vec![
                Label::new("host", format!("host-{:03}", s / 5)),
                Label::new("job", "node"),
                Label::new("series", (s % 5).to_string()),
            ]),
            points: (0..points)
                .map(|i| Point {
                    t: 1_700_000_000_000 + i as i64 * 60_000,
                    v: if s % 2 == 0 {
                        (i as f64 * 0.37 + s as f64).sin() * 100.0
                    } else {
                        (i * (s % 13 + 1)) as f64
                    },
                })
                .collect(),
            histograms: Vec::new(),
        })
        .collect();
    QueryValue::Matrix(m)
}

fn json(c: &mut Criterion) {
    let v = matrix(1_000, 1_000);
    let mut g = c.benchmark_group("json");
    g.throughput(Throughput::Elements(1_000_000));
    g.sample_size(10);
    g.bench_function("matrix_1m_points", |b| {
        b.iter(|| {
            let mut out = String::new();
            write_query_data(&mut out, &v);
            out.len()
        })
    });
    g.bench_function("matrix_1m_points_streamed", |b| {
        b.iter(|| {
            let QueryValue::Matrix(m) = v.clone() else {
                unreachable!()
            };
            MatrixChunks::new(m).map(|c| c.len()).sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, json);
criterion_main!(benches);
