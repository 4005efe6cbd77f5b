//! Decode cost per sample of a realistic remote-write request: 2000 samples
//! over node_exporter-like series, one sample per series as Prometheus sends
//! them in steady state. Also the same series with labels in vmagent's
//! scrape order (sorted on receipt) and compressed with zstd (vmagent's
//! first choice).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use strata_codec::Label;
use strata_remote_write::proto::v1;
use strata_remote_write::{
    decode, decode_protobuf, decode_raw, decompress, encode_v1, encode_v2, DecodeLimits, Encoding,
    V2RequestBuilder, Version,
};

const SAMPLES: usize = 2000;

/// One series: its labels and `(timestamp ms, value)` samples.
type Series = (Vec<Label>, Vec<(i64, f64)>);

/// 2000 series like node_exporter's: cpu seconds per cpu and mode, disk and
/// network counters per device, filesystem gauges per mountpoint.
fn node_series() -> Vec<Series> {
    let modes = [
        "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user",
    ];
    let devices = [
        "nvme0n1", "nvme1n1", "sda", "sdb", "eth0", "eth1", "lo", "docker0",
    ];
    let disk_metrics = [
        "node_disk_read_bytes_total",
        "node_disk_written_bytes_total",
        "node_disk_io_time_seconds_total",
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
    ];
    let mut out = Vec::with_capacity(SAMPLES);
    let mut host = 0;
    while out.len() < SAMPLES {
        let instance = format!("ip-10-0-{}-{}.ec2.internal:9100", host / 250, host % 250);
        for cpu in 0..16 {
            for mode in modes {
                out.push(vec![
                    Label::new("__name__", "node_cpu_seconds_total"),
                    Label::new("cpu", cpu.to_string()),
                    Label::new("instance", instance.clone()),
                    Label::new("job", "node"),
                    Label::new("mode", mode),
                ]);
            }
        }
        for metric in disk_metrics {
            for device in devices {
                out.push(vec![
                    Label::new("__name__", metric),
                    Label::new("device", device),
                    Label::new("instance", instance.clone()),
                    Label::new("job", "node"),
                ]);
            }
        }
        host += 1;
    }
    out.truncate(SAMPLES);
    out.into_iter()
        .enumerate()
        .map(|(i, labels)| (labels, vec![(1_700_000_000_000, i as f64 * 1.5)]))
        .collect()
}

/// The same series with labels as vmagent sends them: the page's labels
/// first, then the target's (`instance`, `job`), so not sorted.
fn scrape_order(series: &[Series]) -> Vec<Series> {
    series
        .iter()
        .map(|(labels, samples)| {
            let (target, page): (Vec<Label>, Vec<Label>) = labels
                .iter()
                .cloned()
                .partition(|l| l.name == "instance" || l.name == "job");
            (page.into_iter().chain(target).collect(), samples.clone())
        })
        .collect()
}

fn v1_body(series: &[Series]) -> Vec<u8> {
    let req = v1::WriteRequest {
        timeseries: series
            .iter()
            .map(|(l, s)| v1::TimeSeries::from_samples(l, s))
            .collect(),
        metadata: Vec::new(),
    };
    let mut body = Vec::new();
    encode_v1(&req, &mut body);
    body
}

fn bodies() -> [(Version, Vec<u8>); 2] {
    let series = node_series();
    let v1_req = v1::WriteRequest {
        timeseries: series
            .iter()
            .map(|(l, s)| v1::TimeSeries::from_samples(l, s))
            .collect(),
        metadata: Vec::new(),
    };
    let mut builder = V2RequestBuilder::new();
    for (l, s) in &series {
        builder.add_series(l, s);
    }
    let mut b1 = Vec::new();
    let mut b2 = Vec::new();
    encode_v1(&v1_req, &mut b1);
    encode_v2(&builder.build(), &mut b2);
    [(Version::V1, b1), (Version::V2, b2)]
}

fn bench_decode(c: &mut Criterion) {
    let limits = DecodeLimits::default();
    let mut group = c.benchmark_group("remote_write_decode");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    for (version, body) in bodies() {
        let name = format!("{version:?}");
        let raw = decompress(&body, &limits).expect("valid body");
        assert_eq!(
            decode(version, &body, &limits)
                .expect("valid body")
                .sample_count(),
            SAMPLES
        );
        group.bench_with_input(
            BenchmarkId::new("snappy+protobuf", &name),
            &body,
            |b, body| b.iter(|| decode(version, black_box(body), &limits).expect("valid body")),
        );
        // What the server runs: labels stay slices of the body.
        group.bench_with_input(BenchmarkId::new("server", &name), &body, |b, body| {
            b.iter(|| {
                decode_raw(version, Encoding::Snappy, black_box(body), &limits).expect("valid body")
            })
        });
        group.bench_with_input(BenchmarkId::new("protobuf", &name), &raw, |b, raw| {
            b.iter(|| decode_protobuf(version, black_box(raw)).expect("valid body"))
        });
        group.bench_with_input(BenchmarkId::new("snappy", &name), &body, |b, body| {
            b.iter(|| decompress(black_box(body), &limits).expect("valid body"))
        });
    }
    // vmagent's requests: labels in scrape order, snappy and zstd.
    let unsorted = v1_body(&scrape_order(&node_series()));
    let raw = decompress(&unsorted, &limits).expect("valid body");
    let zstd_body = zstd::bulk::compress(&raw, 1).expect("compresses");
    for (name, encoding, body) in [
        ("V1-scrape-order", Encoding::Snappy, &unsorted),
        ("V1-scrape-order-zstd", Encoding::Zstd, &zstd_body),
    ] {
        let d = decode_raw(Version::V1, encoding, body, &limits).expect("valid body");
        assert_eq!(d.sample_count(), SAMPLES);
        assert!(d.rejected.is_empty());
        group.bench_with_input(BenchmarkId::new("server", name), body, |b, body| {
            b.iter(|| {
                decode_raw(Version::V1, encoding, black_box(body), &limits).expect("valid body")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
