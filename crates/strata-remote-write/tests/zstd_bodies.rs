//! `Content-Encoding: zstd` bodies, as vmagent sends them: decoded like
//! snappy ones, with the same size guards.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write as _;

use common::{labels, v1_series};
use prost::Message;
use strata_remote_write::proto::v1;
use strata_remote_write::{decode_encoded, negotiate, DecodeLimits, Encoding, Version};

fn request(n: usize) -> Vec<u8> {
    v1::WriteRequest {
        timeseries: (0..n)
            .map(|i| {
                v1_series(
                    &[
                        ("__name__", "up"),
                        ("job", "node"),
                        ("instance", &format!("h{i}")),
                    ],
                    &[(1000, i as f64)],
                )
            })
            .collect(),
        metadata: Vec::new(),
    }
    .encode_to_vec()
}

/// One frame that declares its decoded size, as `zstd::bulk` writes it.
fn framed(raw: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(raw, 1).unwrap()
}

/// Frames written by a streaming encoder, which do not declare the size.
fn streamed(raw: &[u8]) -> Vec<u8> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(raw).unwrap();
    enc.finish().unwrap()
}

#[test]
fn zstd_bodies_decode_like_snappy_ones() {
    let (version, encoding) = negotiate(Some("application/x-protobuf"), Some("zstd")).unwrap();
    assert_eq!((version, encoding), (Version::V1, Encoding::Zstd));
    let raw = request(100);
    for body in [framed(&raw), streamed(&raw)] {
        let d = decode_encoded(version, encoding, &body, &DecodeLimits::default()).unwrap();
        assert!(d.rejected.is_empty());
        assert_eq!(d.series.len(), 100);
        // Labels sent unsorted come out sorted.
        assert_eq!(
            d.series[7].labels,
            labels(&[("__name__", "up"), ("instance", "h7"), ("job", "node")])
        );
        assert_eq!(d.series[7].samples, vec![(1000, 7.0)]);
    }
}

#[test]
fn a_zstd_bomb_is_refused_with_413_declared_or_not() {
    // 64 MiB of zeros compress to a few KiB.
    let zeros = vec![0u8; 64 << 20];
    let limits = DecodeLimits {
        max_body_bytes: 1 << 20,
        max_decoded_bytes: 1 << 20,
    };
    for body in [framed(&zeros), streamed(&zeros)] {
        assert!(body.len() < limits.max_body_bytes);
        let err = decode_encoded(Version::V1, Encoding::Zstd, &body, &limits).unwrap_err();
        assert_eq!(err.status(), 413, "{err}");
        assert!(err.to_string().contains("1048576"), "{err}");
    }
    // Just under the limit decodes (and fails as protobuf, being zeros).
    let under = vec![0u8; 1 << 20];
    let err = decode_encoded(Version::V1, Encoding::Zstd, &streamed(&under), &limits).unwrap_err();
    assert_eq!(err.status(), 400, "{err}");
    assert!(err.to_string().contains("protobuf"), "{err}");
}

#[test]
fn corrupt_and_truncated_zstd_is_a_400() {
    let body = framed(&request(50));
    let limits = DecodeLimits::default();
    let err = decode_encoded(Version::V1, Encoding::Zstd, b"not zstd at all", &limits).unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.to_string().contains("zstd"), "{err}");
    let err = decode_encoded(
        Version::V1,
        Encoding::Zstd,
        &body[..body.len() / 2],
        &limits,
    )
    .unwrap_err();
    assert_eq!(err.status(), 400, "{err}");
    assert!(err.to_string().contains("zstd"), "{err}");
    // A snappy body declared as zstd is refused, not misread.
    let mut snappy = Vec::new();
    strata_remote_write::encode_v1(
        &v1::WriteRequest::decode(request(5).as_slice()).unwrap(),
        &mut snappy,
    );
    let err = decode_encoded(Version::V1, Encoding::Zstd, &snappy, &limits).unwrap_err();
    assert_eq!(err.status(), 400, "{err}");
}

#[test]
fn the_body_limit_applies_to_zstd_too() {
    let body = streamed(&request(2000));
    let limits = DecodeLimits {
        max_body_bytes: body.len() - 1,
        max_decoded_bytes: 128 << 20,
    };
    let err = decode_encoded(Version::V1, Encoding::Zstd, &body, &limits).unwrap_err();
    assert_eq!(err.status(), 413);
}
