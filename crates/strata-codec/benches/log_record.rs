//! Log-record encode/decode speed and size for a remote-write-like batch:
//! a thousand samples sharing a timestamp, ascending series ids, a few new
//! series.

#![allow(clippy::unwrap_used)]

mod data;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use data::{node_exporter_like, Jitter, Rng};
use strata_codec::{Label, LogRecord, LogRecordEncoder, LogSample, NewSeries};

fn batch() -> LogRecord {
    // One scrape of each synthetic series: values from the node-exporter mix.
    let series = node_exporter_like(7, 10, Jitter::Adjusted);
    let mut rng = Rng::new(3);
    let mut id = 1000u64;
    let t = 1_700_000_015_000;
    let samples = series
        .iter()
        .map(|s| {
            id += 1 + rng.next_u64() % 3;
            LogSample {
                series: id,
                t,
                v: s.vs.get(100).copied().unwrap_or(0.0),
            }
        })
        .collect();
    let new_series = (0..10u64)
        .map(|i| NewSeries {
            id: id + 1 + i,
            labels: vec![
                Label::new("__name__", "node_network_receive_bytes_total"),
                Label::new("device", format!("eth{i}")),
                Label::new("instance", "host-17.example:9100"),
                Label::new("job", "node"),
            ],
        })
        .collect();
    LogRecord {
        new_series,
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

fn bench_log_record(c: &mut Criterion) {
    let rec = batch();
    let n = rec.samples.len();
    let mut out = Vec::new();
    rec.encode(&mut out);
    assert_eq!(LogRecord::decode(&out).unwrap().samples.len(), n);
    let sample_only = LogRecord {
        new_series: vec![],
        samples: rec.samples.clone(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    };
    let mut so = Vec::new();
    sample_only.encode(&mut so);
    let mut encoder = LogRecordEncoder::new().unwrap();
    let mut packed = Vec::new();
    encoder.encode(&rec, &mut packed);
    assert_eq!(LogRecord::decode(&packed).unwrap().samples.len(), n);
    eprintln!(
        "\n[log record] {n} samples + {} new series: {} bytes, {} compressed; samples alone {:.2} bytes/sample",
        rec.new_series.len(),
        out.len(),
        packed.len(),
        so.len() as f64 / n as f64
    );

    let mut g = c.benchmark_group("log_record");
    g.throughput(Throughput::Elements(n as u64));
    let mut buf = Vec::with_capacity(out.len());
    g.bench_function("encode", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&rec).encode(&mut buf);
            black_box(&buf);
        })
    });
    g.bench_function("decode", |b| {
        b.iter(|| LogRecord::decode(black_box(&out)).unwrap())
    });
    g.bench_function("encode_compressed", |b| {
        b.iter(|| {
            buf.clear();
            encoder.encode(black_box(&rec), &mut buf);
            black_box(&buf);
        })
    });
    g.bench_function("decode_compressed", |b| {
        b.iter(|| LogRecord::decode(black_box(&packed)).unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = bench_log_record
}
criterion_main!(benches);
