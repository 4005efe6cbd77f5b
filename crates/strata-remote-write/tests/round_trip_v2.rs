#![allow(clippy::unwrap_used)]

use strata_remote_write::proto::v2;
use strata_remote_write::{
    decode, encode_v2, negotiate, DecodeLimits, Encoder, V2RequestBuilder, Version,
};

mod common;
use common::labels;

#[test]
fn v2_round_trip_through_the_builder() {
    let a = labels(&[
        ("__name__", "http_requests_total"),
        ("code", "200"),
        ("job", "api"),
    ]);
    let b = labels(&[
        ("__name__", "http_requests_total"),
        ("code", "500"),
        ("job", "api"),
    ]);
    let mut builder = V2RequestBuilder::new();
    builder
        .add_series(&a, &[(1_000, 10.0), (2_000, 11.0)])
        .add_series(&b, &[(1_000, 0.0)]);
    let req = builder.take();
    assert!(builder.is_empty());
    assert_eq!(req.symbols[0], "");
    // Shared strings are interned once.
    let count = |s: &str| req.symbols.iter().filter(|x| *x == s).count();
    assert_eq!(count("http_requests_total"), 1);
    assert_eq!(count("job"), 1);

    let mut body = Vec::new();
    Encoder::new().encode_v2(&req, &mut body);
    let mut body2 = Vec::new();
    encode_v2(&req, &mut body2);
    assert_eq!(body, body2);

    let (version, _) = negotiate(
        Some("application/x-protobuf;proto=io.prometheus.write.v2.Request"),
        Some("snappy"),
    )
    .unwrap();
    let decoded = decode(version, &body, &DecodeLimits::default()).unwrap();
    assert!(decoded.rejected.is_empty(), "{:?}", decoded.rejected);
    assert_eq!(decoded.series.len(), 2);
    assert_eq!(decoded.series[0].labels, a);
    assert_eq!(
        decoded.series[0].samples,
        vec![(1_000, 10.0), (2_000, 11.0)]
    );
    assert_eq!(decoded.series[1].labels, b);
    assert_eq!(decoded.series[1].samples, vec![(1_000, 0.0)]);
}

#[test]
fn v2_series_with_metadata_and_start_timestamps_decode() {
    let mut builder = V2RequestBuilder::new();
    let name = builder.symbol("__name__");
    let value = builder.symbol("process_cpu_seconds_total");
    let help = builder.symbol("Total user and system CPU time.");
    let unit = builder.symbol("seconds");
    builder.push_series(v2::TimeSeries {
        labels_refs: vec![name, value],
        samples: vec![v2::Sample {
            value: 3.5,
            timestamp: 9_000,
            start_timestamp: 1_000,
        }],
        metadata: Some(v2::Metadata {
            r#type: v2::metadata::MetricType::Counter as i32,
            help_ref: help,
            unit_ref: unit,
        }),
        created_timestamp: 1_000,
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let decoded = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert!(decoded.rejected.is_empty(), "{:?}", decoded.rejected);
    assert_eq!(decoded.series[0].samples, vec![(9_000, 3.5)]);
}
