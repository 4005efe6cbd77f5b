#![allow(clippy::unwrap_used)]

use strata_remote_write::{negotiate, Version};

#[test]
fn non_snappy_encoding_is_415_naming_it() {
    let err = negotiate(Some(Version::V2.content_type()), Some("zstd")).unwrap_err();
    assert_eq!(err.status(), 415);
    let msg = err.to_string();
    assert!(msg.contains("zstd") && msg.contains("snappy"), "{msg}");
}

#[test]
fn absent_encoding_is_taken_as_snappy() {
    assert_eq!(
        negotiate(Some(Version::V2.content_type()), None).unwrap(),
        Version::V2
    );
}
