#![allow(clippy::unwrap_used)]

use strata_remote_write::{decode, DecodeLimits, Version};

mod common;

#[test]
fn corrupt_snappy_is_400() {
    let mut body = common::v1_body(vec![common::v1_series(
        &[("__name__", "up"), ("job", "node")],
        &[(1, 1.0)],
    )]);
    // Declare more bytes than the body encodes.
    body[0] = body[0].wrapping_add(5);
    let err = decode(Version::V1, &body, &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.to_string().starts_with("corrupt snappy"), "{err}");
}

#[test]
fn empty_body_is_400() {
    let err = decode(Version::V2, &[], &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.to_string().contains("snappy"), "{err}");
}

#[test]
fn unframed_plain_protobuf_is_400() {
    // A client that forgot to compress: 0x0a is a plausible varint length.
    let err = decode(
        Version::V1,
        &[0x0a, 0xff, 0xff, 0x01],
        &DecodeLimits::default(),
    )
    .unwrap_err();
    assert_eq!(err.status(), 400);
}
