#![allow(clippy::unwrap_used)]

use strata_remote_write::{decode, DecodeLimits, Version};

mod common;

#[test]
fn body_over_the_limit_is_413() {
    let body = common::v1_body(vec![common::v1_series(&[("__name__", "up")], &[(1, 1.0)])]);
    let limits = DecodeLimits {
        max_body_bytes: body.len() - 1,
        max_decoded_bytes: 1 << 20,
    };
    let err = decode(Version::V1, &body, &limits).unwrap_err();
    assert_eq!(err.status(), 413);
    let msg = err.to_string();
    assert!(
        msg.contains(&body.len().to_string()) && msg.contains("limit"),
        "{msg}"
    );
}
