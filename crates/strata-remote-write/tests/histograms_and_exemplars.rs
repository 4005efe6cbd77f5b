#![allow(clippy::unwrap_used)]

use strata_remote_write::proto::{v1, v2};
use strata_remote_write::{
    decode, encode_v2, DecodeLimits, V2RequestBuilder, Version, HISTOGRAMS_UNSUPPORTED,
};

mod common;

fn v2_histogram() -> v2::Histogram {
    v2::Histogram {
        count: Some(v2::histogram::Count::CountInt(3)),
        sum: 4.5,
        schema: 3,
        positive_spans: vec![v2::BucketSpan {
            offset: 0,
            length: 2,
        }],
        positive_deltas: vec![1, 1],
        timestamp: 1_000,
        ..Default::default()
    }
}

#[test]
fn v2_histogram_only_series_is_rejected_and_mixed_series_keep_floats() {
    let mut builder = V2RequestBuilder::new();
    let name = builder.symbol("__name__");
    let only = builder.symbol("latency_only");
    let mixed = builder.symbol("latency_mixed");
    let trace = builder.symbol("trace_id");
    let abc = builder.symbol("abc");
    builder.push_series(v2::TimeSeries {
        labels_refs: vec![name, only],
        histograms: vec![v2_histogram(), v2_histogram()],
        ..Default::default()
    });
    builder.push_series(v2::TimeSeries {
        labels_refs: vec![name, mixed],
        samples: vec![v2::Sample {
            value: 2.0,
            timestamp: 1_000,
            start_timestamp: 0,
        }],
        histograms: vec![v2_histogram()],
        exemplars: vec![v2::Exemplar {
            labels_refs: vec![trace, abc],
            value: 1.0,
            timestamp: 1_000,
        }],
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!((d.histograms, d.exemplars), (3, 1));
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].samples, vec![(1_000, 2.0)]);
    // The mixed series keeps its exemplar with its floats.
    assert_eq!(d.series[0].exemplars.len(), 1);
    assert_eq!(d.exemplars_dropped, 0);
    assert_eq!(d.rejected.len(), 2);
    assert_eq!(d.rejected[0].reason, HISTOGRAMS_UNSUPPORTED);
    assert_eq!(d.rejected[0].samples, 2);
    assert_eq!(d.rejected[0].labels, r#"{__name__="latency_only"}"#);
    assert!(d.rejected[1].reason.starts_with(HISTOGRAMS_UNSUPPORTED));
    assert_eq!(d.rejected[1].samples, 1);
}

#[test]
fn v1_exemplars_are_counted_and_kept() {
    let mut series = common::v1_series(&[("__name__", "up")], &[(1, 1.0)]);
    series.exemplars = vec![
        v1::Exemplar {
            labels: vec![v1::Label {
                name: "trace_id".into(),
                value: "x".into()
            }],
            value: 1.0,
            timestamp: 1
        };
        3
    ];
    let d = common::decode_v1(vec![series]);
    assert_eq!((d.exemplars, d.exemplars_dropped, d.histograms), (3, 0, 0));
    assert!(d.rejected.is_empty());
    assert_eq!(d.series[0].exemplars.len(), 3);
    assert_eq!(d.series[0].exemplars[0].labels[0].value, "x");
}
