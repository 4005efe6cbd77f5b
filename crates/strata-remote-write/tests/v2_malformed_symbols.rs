#![allow(clippy::unwrap_used)]

use strata_remote_write::proto::v2;
use strata_remote_write::{decode, encode_v2, DecodeLimits, Version};

fn body(req: &v2::Request) -> Vec<u8> {
    let mut out = Vec::new();
    encode_v2(req, &mut out);
    out
}

fn series(refs: Vec<u32>) -> v2::TimeSeries {
    v2::TimeSeries {
        labels_refs: refs,
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 1,
            start_timestamp: 0,
        }],
        ..Default::default()
    }
}

#[test]
fn first_symbol_not_empty_is_400() {
    let req = v2::Request {
        symbols: vec!["__name__".into(), "up".into()],
        timeseries: vec![series(vec![0, 1])],
    };
    let err = decode(Version::V2, &body(&req), &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.status(), 400);
    let msg = err.to_string();
    assert!(
        msg.contains("symbols[0]") && msg.contains("__name__"),
        "{msg}"
    );
}

#[test]
fn empty_symbols_with_series_is_400() {
    let req = v2::Request {
        symbols: vec![],
        timeseries: vec![series(vec![])],
    };
    let err = decode(Version::V2, &body(&req), &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.to_string().contains("symbols"), "{err}");
}

#[test]
fn empty_request_is_fine() {
    let decoded = decode(
        Version::V2,
        &body(&v2::Request::default()),
        &DecodeLimits::default(),
    )
    .unwrap();
    assert!(decoded.series.is_empty() && decoded.rejected.is_empty());
}
