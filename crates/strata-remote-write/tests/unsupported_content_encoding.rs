#![allow(clippy::unwrap_used)]

use strata_remote_write::{negotiate, Encoding, Version};

#[test]
fn other_encodings_are_415_naming_them() {
    for enc in ["gzip", "deflate", "br", "snappy-framed"] {
        let err = negotiate(Some(Version::V2.content_type()), Some(enc)).unwrap_err();
        assert_eq!(err.status(), 415);
        let msg = err.to_string();
        assert!(
            msg.contains(enc) && msg.contains("snappy") && msg.contains("zstd"),
            "{msg}"
        );
    }
}

#[test]
fn absent_encoding_is_taken_as_snappy_and_zstd_is_accepted() {
    assert_eq!(
        negotiate(Some(Version::V2.content_type()), None).unwrap(),
        (Version::V2, Encoding::Snappy)
    );
    assert_eq!(
        negotiate(Some(Version::V1.content_type()), Some("zstd")).unwrap(),
        (Version::V1, Encoding::Zstd)
    );
}
