#![allow(clippy::unwrap_used)]

use strata_codec::histogram::{
    CounterResetHint, FloatHistogram, Histogram, HistogramSample, Span, CUSTOM_BUCKETS_SCHEMA,
};
use strata_remote_write::proto::{v1, v2};
use strata_remote_write::{decode, encode_v2, DecodeLimits, V2RequestBuilder, Version};

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
fn v2_histogram_only_and_mixed_series_keep_everything() {
    let mut builder = V2RequestBuilder::new();
    let name = builder.symbol("__name__");
    let only = builder.symbol("latency_only");
    let mixed = builder.symbol("latency_mixed");
    let trace = builder.symbol("trace_id");
    let abc = builder.symbol("abc");
    let mut second = v2_histogram();
    second.timestamp = 2_000;
    builder.push_series(v2::TimeSeries {
        labels_refs: vec![name, only],
        histograms: vec![v2_histogram(), second],
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
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.series.len(), 2);
    assert_eq!(d.histogram_count(), 3);
    assert_eq!(d.sample_count(), 1);
    let want = HistogramSample::Int(Histogram {
        schema: 3,
        count: 3,
        sum: 4.5,
        positive_spans: vec![Span::new(0, 2)],
        positive_buckets: vec![1, 1],
        ..Histogram::default()
    });
    let only = &d.series[0];
    assert!(only.samples.is_empty());
    assert_eq!(
        only.histograms.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        [1_000, 2_000]
    );
    assert!(only.histograms.iter().all(|(_, h)| h.bit_eq(&want)));
    let mixed = &d.series[1];
    assert_eq!(mixed.samples, vec![(1_000, 2.0)]);
    assert_eq!(mixed.histograms.len(), 1);
    assert_eq!(mixed.exemplars.len(), 1);
    assert_eq!(d.exemplars_dropped, 0);
}

/// Every shape a sender may use, through 1.0 (prost's path: the fast one
/// hands histograms over) and 2.0: integer and float counts, exponential
/// and custom buckets, negative buckets and the zero bucket, every reset
/// hint, and a stale marker.
fn every_shape() -> Vec<(i64, HistogramSample)> {
    let exponential_int = Histogram {
        schema: -2,
        zero_threshold: 0.001,
        zero_count: 2,
        count: 9,
        sum: -3.25,
        positive_spans: vec![Span::new(-1, 2), Span::new(2, 1)],
        positive_buckets: vec![2, -1, 1],
        negative_spans: vec![Span::new(0, 1)],
        negative_buckets: vec![2],
        custom_values: Vec::new(),
        counter_reset_hint: CounterResetHint::Reset,
    };
    let exponential_float = FloatHistogram {
        schema: 8,
        zero_threshold: 1e-128,
        zero_count: 0.5,
        count: 4.5,
        sum: 10.0,
        positive_spans: vec![Span::new(100, 2)],
        positive_buckets: vec![1.5, 2.5],
        negative_spans: Vec::new(),
        negative_buckets: Vec::new(),
        custom_values: Vec::new(),
        counter_reset_hint: CounterResetHint::Gauge,
    };
    let custom_int = Histogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 6,
        sum: 2.0,
        positive_spans: vec![Span::new(0, 2), Span::new(1, 1)],
        positive_buckets: vec![1, 1, 1],
        custom_values: vec![0.1, 0.5, 1.0],
        counter_reset_hint: CounterResetHint::NotReset,
        ..Histogram::default()
    };
    let custom_float = FloatHistogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 3.0,
        sum: 1.0,
        positive_spans: vec![Span::new(0, 1)],
        positive_buckets: vec![3.0],
        custom_values: vec![0.25],
        ..FloatHistogram::default()
    };
    vec![
        (1_000, HistogramSample::Int(exponential_int)),
        (2_000, HistogramSample::Float(exponential_float)),
        (3_000, HistogramSample::Int(custom_int)),
        (4_000, HistogramSample::Float(custom_float)),
        (5_000, HistogramSample::Int(Histogram::stale_marker())),
        (
            6_000,
            HistogramSample::Float(FloatHistogram::stale_marker()),
        ),
    ]
}

fn assert_same(got: &[(i64, HistogramSample)], want: &[(i64, HistogramSample)]) {
    assert_eq!(got.len(), want.len());
    for ((t, h), (wt, wh)) in got.iter().zip(want) {
        assert_eq!(t, wt);
        assert!(h.bit_eq(wh), "at {t}: {h:?} != {wh:?}");
    }
}

#[test]
fn every_shape_decodes_in_both_versions() {
    let want = every_shape();
    let labels = common::labels(&[("__name__", "rpc_seconds"), ("job", "api")]);

    let mut v1_series = common::v1_series(&[("__name__", "rpc_seconds"), ("job", "api")], &[]);
    v1_series.histograms = want
        .iter()
        .map(|(t, h)| v1::Histogram::from_sample(*t, h))
        .collect();
    let d = common::decode_v1(vec![v1_series]);
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.histograms, want.len());
    assert_eq!(d.series[0].labels, labels);
    assert_same(&d.series[0].histograms, &want);
    assert!(d.series[0].histograms[4].1.is_stale());
    assert!(d.series[0].histograms[5].1.is_stale());

    let mut b = V2RequestBuilder::new();
    b.add_series_with_histograms(&labels, &[(500, 1.0)], &want, &[]);
    let mut body = Vec::new();
    encode_v2(&b.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.series[0].samples, vec![(500, 1.0)]);
    assert_same(&d.series[0].histograms, &want);
}

#[test]
fn raw_wire_fields_map_as_prometheus_maps_them() {
    // A float histogram is one whose count is count_float; the integer
    // fields of a float histogram (and the float ones of an integer one)
    // are not read.
    let float = v2::Histogram {
        count: Some(v2::histogram::Count::CountFloat(2.0)),
        zero_count: Some(v2::histogram::ZeroCount::ZeroCountFloat(1.0)),
        sum: 3.0,
        schema: 0,
        zero_threshold: 0.5,
        positive_spans: vec![v2::BucketSpan {
            offset: 1,
            length: 1,
        }],
        positive_counts: vec![1.0],
        positive_deltas: vec![99],
        reset_hint: v2::histogram::ResetHint::No as i32,
        timestamp: 7,
        ..Default::default()
    };
    let mut b = V2RequestBuilder::new();
    let refs = vec![b.symbol("__name__"), b.symbol("h")];
    b.push_series(v2::TimeSeries {
        labels_refs: refs,
        histograms: vec![float],
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&b.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    let (t, h) = &d.series[0].histograms[0];
    assert_eq!(*t, 7);
    let want = HistogramSample::Float(FloatHistogram {
        schema: 0,
        zero_threshold: 0.5,
        zero_count: 1.0,
        count: 2.0,
        sum: 3.0,
        positive_spans: vec![Span::new(1, 1)],
        positive_buckets: vec![1.0],
        counter_reset_hint: CounterResetHint::NotReset,
        ..FloatHistogram::default()
    });
    assert!(h.bit_eq(&want), "{h:?}");
}

#[test]
fn an_invalid_histogram_is_refused_alone_naming_series_and_problem() {
    let good = v2_histogram();
    let mut bad_count = v2_histogram();
    bad_count.timestamp = 2_000;
    bad_count.count = Some(v2::histogram::Count::CountInt(5));
    let mut bad_schema = v2_histogram();
    bad_schema.timestamp = 3_000;
    bad_schema.schema = -5;

    // 1.0
    let mut series = common::v1_series(&[("__name__", "lat"), ("job", "a")], &[(1_000, 1.0)]);
    series.histograms = [&good, &bad_count, &bad_schema]
        .iter()
        .map(|h| v1::Histogram::from_sample(h.timestamp, &h.to_sample()))
        .collect();
    let d = common::decode_v1(vec![series]);
    assert_eq!(d.histograms, 3);
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].samples, vec![(1_000, 1.0)]);
    assert_eq!(d.series[0].histograms.len(), 1);
    assert_eq!(d.series[0].histograms[0].0, 1_000);
    assert_eq!(d.rejected.len(), 1);
    let r = &d.rejected[0];
    assert_eq!(r.labels, r#"{__name__="lat", job="a"}"#);
    assert_eq!(r.samples, 2);
    assert_eq!(
        r.reason,
        "invalid native histogram at timestamp 2000: 3 observations found in buckets, \
         but the count is 5 (and 1 more invalid histograms)"
    );
    assert!(d
        .rejection_message()
        .starts_with(r#"series {__name__="lat", job="a"}: invalid native histogram"#));

    // 2.0
    let mut b = V2RequestBuilder::new();
    let refs = vec![b.symbol("__name__"), b.symbol("lat")];
    b.push_series(v2::TimeSeries {
        labels_refs: refs,
        histograms: vec![bad_schema, good],
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&b.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(d.series[0].histograms.len(), 1);
    assert_eq!(d.rejected.len(), 1);
    assert_eq!(d.rejected[0].samples, 1);
    assert_eq!(
        d.rejected[0].reason,
        "invalid native histogram at timestamp 3000: \
         schema -5 is neither exponential (-4..=8) nor custom buckets (-53)"
    );
}

#[test]
fn a_reserved_finer_schema_is_reduced_to_8() {
    let mut fine = v2_histogram();
    fine.schema = 12;
    let mut series = common::v1_series(&[("__name__", "fine")], &[]);
    series.histograms = vec![v1::Histogram::from_sample(1_000, &fine.to_sample())];
    let d = common::decode_v1(vec![series]);
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    let HistogramSample::Int(h) = &d.series[0].histograms[0].1 else {
        panic!("an integer histogram")
    };
    // Buckets 0 and 1 at schema 12 are buckets 0 and 1 at schema 8.
    assert_eq!(h.schema, 8);
    assert_eq!(h.positive_spans, vec![Span::new(0, 2)]);
    assert_eq!(h.positive_buckets, vec![1, 1]);
    assert_eq!(h.count, 3);
}

#[test]
fn a_rejected_series_counts_its_histograms() {
    let mut series = common::v1_series(&[("job", "no_name")], &[(1, 1.0)]);
    series.histograms = vec![v1::Histogram::from_sample(
        1,
        &HistogramSample::Int(Histogram::stale_marker()),
    )];
    let d = common::decode_v1(vec![series]);
    assert!(d.series.is_empty());
    assert_eq!(d.rejected[0].samples, 2);
    assert_eq!(d.histograms, 1);
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
