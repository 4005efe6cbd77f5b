#![allow(clippy::unwrap_used)]

use strata_remote_write::proto::v1;
use strata_remote_write::{decode, encode_v1, negotiate, DecodeLimits, Version};

mod common;
use common::{labels, v1_series};

#[test]
fn v1_round_trip_keeps_labels_and_samples_bit_exact() {
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let samples = [
        (1_000, 0.5),
        (2_000, -0.0),
        (3_000, f64::INFINITY),
        (4_000, stale),
    ];
    let req = v1::WriteRequest {
        timeseries: vec![
            v1_series(
                &[
                    ("__name__", "node_cpu_seconds_total"),
                    ("cpu", "0"),
                    ("mode", "idle"),
                ],
                &samples,
            ),
            v1_series(&[("__name__", "up"), ("job", "node")], &[(5_000, 1.0)]),
        ],
        metadata: vec![v1::MetricMetadata {
            r#type: v1::MetricType::Counter as i32,
            metric_family_name: "node_cpu_seconds_total".into(),
            help: "Seconds the CPUs spent in each mode.".into(),
            unit: "seconds".into(),
        }],
    };
    let mut body = Vec::new();
    encode_v1(&req, &mut body);

    let (version, _) = negotiate(Some(Version::V1.content_type()), Some("snappy")).unwrap();
    assert_eq!(version, Version::V1);
    let decoded = decode(version, &body, &DecodeLimits::default()).unwrap();
    assert!(decoded.rejected.is_empty());
    assert_eq!(decoded.series.len(), 2);
    assert_eq!(
        decoded.series[0].labels,
        labels(&[
            ("__name__", "node_cpu_seconds_total"),
            ("cpu", "0"),
            ("mode", "idle")
        ])
    );
    let got: Vec<(i64, u64)> = decoded.series[0]
        .samples
        .iter()
        .map(|&(t, v)| (t, v.to_bits()))
        .collect();
    let want: Vec<(i64, u64)> = samples.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(got, want);
    assert_eq!(decoded.series[1].samples, vec![(5_000, 1.0)]);
    assert_eq!(decoded.sample_count(), 5);
    assert_eq!((decoded.histograms, decoded.exemplars), (0, 0));
}
