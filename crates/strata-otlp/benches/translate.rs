//! The protocol layer's cost per sample: an OTLP request decoded and
//! translated, beside the same samples as a remote-write 1.0 request
//! decoded, each from its compressed body as a sender sends it (OTLP
//! gzipped, remote write snappy). 2,000 samples a request: two targets of
//! 1,000 series in 20 metric families, as a Collector batches a scrape.
#![allow(clippy::indexing_slicing)]

use std::io::Write as _;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message as _;
use strata_otlp::proto::*;
use strata_otlp::{decode, translate, Format, Limits, Settings};
use strata_remote_write::proto::v1;
use strata_remote_write::{decode_raw, encode_v1, DecodeLimits, Encoding, Version};

/// The server's allocator, so that allocation costs what it costs there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TARGETS: usize = 2;
const FAMILIES: usize = 20;
const PER_FAMILY: usize = 50;
const T_MS: i64 = 1_700_000_000_000;

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
    }
}

/// `(name, labels without job and instance)` of every series of a target.
fn series() -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for f in 0..FAMILIES {
        for i in 0..PER_FAMILY {
            out.push((
                format!("node_family_{f}_total"),
                vec![
                    ("cpu".into(), (i / 8).to_string()),
                    ("device".into(), format!("dev{}", i % 8)),
                    (
                        "mode".into(),
                        ["user", "system", "idle", "iowait"][i % 4].into(),
                    ),
                ],
            ));
        }
    }
    out
}

fn otlp_body() -> Vec<u8> {
    let all = series();
    let resources = (0..TARGETS)
        .map(|t| {
            let mut metrics: Vec<Metric> = Vec::new();
            for (name, labels) in &all {
                let point = NumberDataPoint {
                    attributes: labels.iter().map(|(k, v)| string(k, v)).collect(),
                    start_time_unix_nano: 0,
                    time_unix_nano: T_MS as u64 * 1_000_000,
                    value: Some(number_data_point::Value::AsDouble(12345.5)),
                    flags: 0,
                    exemplars: Vec::new(),
                };
                match metrics.last_mut() {
                    Some(Metric {
                        name: n,
                        data: Some(metric::Data::Gauge(g)),
                        ..
                    }) if n == name => g.data_points.push(point),
                    _ => metrics.push(Metric {
                        name: name.clone(),
                        description: String::new(),
                        unit: String::new(),
                        data: Some(metric::Data::Gauge(Gauge {
                            data_points: vec![point],
                        })),
                    }),
                }
            }
            ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![
                        string("service.name", "node"),
                        string("service.instance.id", &format!("host-{t}:9100")),
                    ],
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: None,
                    metrics,
                    schema_url: String::new(),
                }],
            }
        })
        .collect();
    let pb = ExportMetricsServiceRequest {
        resource_metrics: resources,
    }
    .encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&pb).expect("gzip");
    gz.finish().expect("gzip")
}

fn remote_write_body() -> Vec<u8> {
    let all = series();
    let mut timeseries = Vec::new();
    for t in 0..TARGETS {
        for (name, labels) in &all {
            let mut l: Vec<v1::Label> = vec![
                v1::Label {
                    name: "__name__".into(),
                    value: name.clone(),
                },
                v1::Label {
                    name: "instance".into(),
                    value: format!("host-{t}:9100"),
                },
                v1::Label {
                    name: "job".into(),
                    value: "node".into(),
                },
            ];
            l.extend(labels.iter().map(|(k, v)| v1::Label {
                name: k.clone(),
                value: v.clone(),
            }));
            l.sort_by(|a, b| a.name.cmp(&b.name));
            timeseries.push(v1::TimeSeries {
                labels: l,
                samples: vec![v1::Sample {
                    value: 12345.5,
                    timestamp: T_MS,
                }],
                exemplars: vec![],
                histograms: vec![],
            });
        }
    }
    let mut body = Vec::new();
    encode_v1(
        &v1::WriteRequest {
            timeseries,
            metadata: vec![],
        },
        &mut body,
    );
    body
}

fn bench(c: &mut Criterion) {
    let samples = (TARGETS * FAMILIES * PER_FAMILY) as u64;
    let otlp = otlp_body();
    let rw = remote_write_body();
    let settings = Settings::default();
    let limits = Limits {
        max_body_bytes: 64 << 20,
        max_decoded_bytes: 256 << 20,
    };
    let check = translate(
        &decode(&otlp, Format::Protobuf, true, &limits).expect("decode"),
        &settings,
    );
    assert_eq!(check.write.series.len() as u64, samples);

    let mut g = c.benchmark_group("ingest_protocol");
    g.throughput(Throughput::Elements(samples));
    g.bench_function("otlp_gzip_decode_translate", |b| {
        b.iter(|| {
            let req = decode(&otlp, Format::Protobuf, true, &limits).expect("decode");
            translate(&req, &settings)
        })
    });
    g.bench_function("otlp_gzip_decode_only", |b| {
        b.iter(|| decode(&otlp, Format::Protobuf, true, &limits).expect("decode"))
    });
    g.bench_function("remote_write_snappy_decode", |b| {
        b.iter(|| {
            decode_raw(Version::V1, Encoding::Snappy, &rw, &DecodeLimits::default())
                .expect("decode")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
