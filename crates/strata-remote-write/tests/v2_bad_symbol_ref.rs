#![allow(clippy::unwrap_used)]

use strata_remote_write::proto::v2;
use strata_remote_write::{decode, encode_v2, DecodeLimits, V2RequestBuilder, Version};

use strata_write::DecodedWrite;

mod common;
use common::labels;

fn decode_with(bad: v2::TimeSeries) -> DecodedWrite {
    let mut builder = V2RequestBuilder::new();
    builder.add_series(&labels(&[("__name__", "up"), ("job", "ok")]), &[(1, 1.0)]);
    builder.push_series(bad);
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let decoded = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(decoded.series.len(), 1, "the valid series is kept");
    assert_eq!(decoded.rejected.len(), 1, "{:?}", decoded.rejected);
    decoded
}

#[test]
fn out_of_range_label_ref_rejects_the_series() {
    // Symbols: "", "__name__", "up", "job", "ok".
    let decoded = decode_with(v2::TimeSeries {
        labels_refs: vec![1, 2, 3, 99],
        samples: vec![
            v2::Sample {
                value: 1.0,
                timestamp: 1,
                start_timestamp: 0
            };
            2
        ],
        ..Default::default()
    });
    let r = &decoded.rejected[0];
    assert_eq!(r.samples, 2);
    assert!(
        r.reason.contains("99") && r.reason.contains("out of range"),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("\"job\""), "{}", r.reason);
    assert!(r.reason.contains("5 entries"), "{}", r.reason);
    assert_eq!(r.labels, r#"{__name__="up"}"#);
}

#[test]
fn odd_label_refs_reject_the_series() {
    let decoded = decode_with(v2::TimeSeries {
        labels_refs: vec![1, 2, 3],
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 1,
            start_timestamp: 0,
        }],
        ..Default::default()
    });
    assert!(
        decoded.rejected[0].reason.contains("odd"),
        "{:?}",
        decoded.rejected
    );
}

#[test]
fn out_of_range_metadata_ref_rejects_the_series() {
    let decoded = decode_with(v2::TimeSeries {
        labels_refs: vec![1, 2, 3, 4],
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 2,
            start_timestamp: 0,
        }],
        metadata: Some(v2::Metadata {
            r#type: 1,
            help_ref: 0,
            unit_ref: 42,
        }),
        ..Default::default()
    });
    assert!(
        decoded.rejected[0].reason.contains("unit_ref"),
        "{:?}",
        decoded.rejected
    );
}
