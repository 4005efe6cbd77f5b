#![allow(clippy::unwrap_used)]

use strata_remote_write::{decode, DecodeLimits, Version};

fn snappy(raw: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(raw).unwrap()
}

#[test]
fn garbage_protobuf_is_400_naming_the_message() {
    // Field 1, length-delimited, claiming 100 bytes that are not there.
    let body = snappy(&[0x0a, 100, 1, 2, 3]);
    for version in [strata_remote_write::Version::V1, Version::V2] {
        let err = decode(version, &body, &DecodeLimits::default()).unwrap_err();
        assert_eq!(err.status(), 400);
        let msg = err.to_string();
        assert!(msg.contains(version.proto_message()), "{msg}");
    }
}

#[test]
fn wrong_wire_type_names_the_field() {
    // timeseries (1) > samples (2) > value (1) sent as a varint, not a double.
    let body = snappy(&[0x0a, 4, 0x12, 2, 0x08, 1]);
    let err = decode(Version::V1, &body, &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.status(), 400);
    let msg = err.to_string();
    assert!(msg.contains("value") && msg.contains("wire type"), "{msg}");
}
