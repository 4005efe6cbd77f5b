//! Invalid UTF-8 in one series rejects that series, not the request.
#![allow(clippy::unwrap_used)]

use prost::Message;
use strata_remote_write::{decode, DecodeLimits, Version};

#[derive(Clone, PartialEq, Message)]
struct Req {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<Series>,
}
#[derive(Clone, PartialEq, Message)]
struct Series {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Lbl>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<strata_remote_write::proto::v1::Sample>,
}
#[derive(Clone, PartialEq, Message)]
struct Lbl {
    #[prost(bytes = "vec", tag = "1")]
    name: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

fn series(pairs: &[(&[u8], &[u8])]) -> Series {
    Series {
        labels: pairs
            .iter()
            .map(|(n, v)| Lbl {
                name: n.to_vec(),
                value: v.to_vec(),
            })
            .collect(),
        samples: vec![strata_remote_write::proto::v1::Sample {
            value: 1.0,
            timestamp: 1,
        }],
    }
}

#[test]
fn invalid_utf8_value_rejects_only_its_series() {
    let req = Req {
        timeseries: vec![
            series(&[(b"__name__", b"up"), (b"job", b"bad\xff")]),
            series(&[(b"__name__", b"up"), (b"job", b"good")]),
        ],
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap();
    let decoded = decode(Version::V1, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(decoded.series.len(), 1);
    assert_eq!(decoded.rejected.len(), 1);
    let r = &decoded.rejected[0];
    assert!(
        r.reason.contains("\"job\"") && r.reason.contains("UTF-8"),
        "{}",
        r.reason
    );
    assert!(r.labels.contains("__name__=\"up\""), "{}", r.labels);
}
