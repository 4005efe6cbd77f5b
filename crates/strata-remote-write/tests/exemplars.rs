//! Valid exemplars of either version reach their series as sent: labels in
//! their order, values bit for bit, timestamps as given.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use strata_codec::{Exemplar, Label};
use strata_remote_write::proto::v1;
use strata_remote_write::{decode, encode_v2, DecodeLimits, V2RequestBuilder, Version};

use strata_write::DecodedWrite;

mod common;
use common::labels;

fn ex(t: i64, v: f64, pairs: &[(&str, &str)]) -> Exemplar {
    Exemplar {
        labels: pairs.iter().map(|&(n, v)| Label::new(n, v)).collect(),
        t,
        v,
    }
}

/// A series as sent: labels, float samples, exemplars.
type Case = (Vec<Label>, Vec<(i64, f64)>, Vec<Exemplar>);

/// Three series: many exemplars, two, none; and one with exemplars only.
fn cases() -> Vec<Case> {
    let nan = f64::from_bits(0x7ff8_0000_0000_0001);
    vec![
        (
            labels(&[
                ("__name__", "http_request_duration_seconds_bucket"),
                ("le", "0.5"),
            ]),
            vec![(1_000, 3.0), (2_000, 4.0)],
            vec![
                // Not sorted by name: kept in the order sent.
                ex(
                    1_000,
                    0.25,
                    &[
                        ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
                        ("span_id", "00f067aa0ba902b7"),
                    ],
                ),
                ex(1_100, 0.3, &[]),
                ex(1_200, 0.4, &[("user", "测试 ✓"), ("ünïcödé", "ok")]),
                ex(1_300, nan, &[("trace_id", "a")]),
                ex(1_400, f64::INFINITY, &[("trace_id", "b")]),
                ex(1_500, f64::NEG_INFINITY, &[("trace_id", "c")]),
            ],
        ),
        (
            labels(&[("__name__", "rpc_calls_total"), ("job", "api")]),
            vec![(1_000, 7.0)],
            vec![
                ex(900, 1.0, &[("trace_id", "x")]),
                ex(950, 1.0, &[("trace_id", "y")]),
            ],
        ),
        (labels(&[("__name__", "up")]), vec![(1_000, 1.0)], vec![]),
        (
            labels(&[("__name__", "only_exemplars")]),
            vec![],
            vec![ex(1_000, 2.0, &[("trace_id", "z")])],
        ),
    ]
}

fn assert_decoded(d: &DecodedWrite) {
    let cases = cases();
    let sent: usize = cases.iter().map(|c| c.2.len()).sum();
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!((d.exemplars, d.exemplars_dropped), (sent, 0));
    assert_eq!(d.exemplar_problem, None);
    assert_eq!(d.series.len(), cases.len());
    for (got, (labels, samples, exemplars)) in d.series.iter().zip(&cases) {
        assert_eq!(&got.labels, labels);
        assert_eq!(&got.samples, samples);
        assert_eq!(got.exemplars.len(), exemplars.len(), "{labels:?}");
        for (a, b) in got.exemplars.iter().zip(exemplars) {
            assert!(a.same_as(b), "{a:?} != {b:?}");
        }
    }
}

#[test]
fn v1_exemplars_reach_their_series() {
    let timeseries = cases()
        .into_iter()
        .map(|(labels, samples, exemplars)| {
            let mut ts = v1::TimeSeries::from_samples(&labels, &samples);
            ts.exemplars = exemplars.iter().map(v1::Exemplar::from).collect();
            ts
        })
        .collect();
    assert_decoded(&common::decode_v1(timeseries));
}

#[test]
fn v2_exemplars_reach_their_series() {
    let mut builder = V2RequestBuilder::new();
    for (labels, samples, exemplars) in cases() {
        builder.add_series_with_exemplars(&labels, &samples, &exemplars);
    }
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_decoded(&d);
}

#[test]
fn v2_unset_timestamp_is_kept_as_zero() {
    let mut builder = V2RequestBuilder::new();
    builder.add_series_with_exemplars(
        &labels(&[("__name__", "up")]),
        &[(1_000, 1.0)],
        &[ex(0, 1.5, &[("trace_id", "t")])],
    );
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(
        d.series[0].exemplars,
        vec![ex(0, 1.5, &[("trace_id", "t")])]
    );
}

#[test]
fn a_series_with_neither_samples_nor_exemplars_is_omitted() {
    let mut builder = V2RequestBuilder::new();
    builder
        .add_series(&labels(&[("__name__", "empty")]), &[])
        .add_series_with_exemplars(&labels(&[("__name__", "kept")]), &[], &[ex(5, 1.0, &[])]);
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].labels, labels(&[("__name__", "kept")]));
    assert!(d.series[0].samples.is_empty());
    assert_eq!(d.series[0].exemplars, vec![ex(5, 1.0, &[])]);
    assert_eq!(d.sample_count(), 0);
}
