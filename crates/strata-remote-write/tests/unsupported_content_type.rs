#![allow(clippy::unwrap_used)]

use strata_remote_write::negotiate;

#[test]
fn other_media_type_is_415_naming_it() {
    let err = negotiate(Some("application/json"), Some("snappy")).unwrap_err();
    assert_eq!(err.status(), 415);
    assert!(err.to_string().contains("application/json"), "{err}");
}

#[test]
fn unknown_proto_message_is_415_naming_it() {
    let err = negotiate(
        Some("application/x-protobuf;proto=io.prometheus.write.v3.Request"),
        Some("snappy"),
    )
    .unwrap_err();
    assert_eq!(err.status(), 415);
    assert!(
        err.to_string().contains("io.prometheus.write.v3.Request"),
        "{err}"
    );
}
