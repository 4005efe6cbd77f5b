#![allow(clippy::unwrap_used)]

mod common;
use common::{reject_one_v1, v1_series};

#[test]
fn missing_metric_name_rejects_the_series() {
    let r = reject_one_v1(v1_series(
        &[("instance", "h:9100"), ("job", "node")],
        &[(1, 1.0)],
    ));
    assert!(r.reason.contains("__name__"), "{}", r.reason);
    assert_eq!(r.labels, r#"{instance="h:9100", job="node"}"#);
}

#[test]
fn utf8_label_names_are_accepted() {
    let decoded = common::decode_v1(vec![common::v1_series(
        &[
            ("__name__", "http.server.duration"),
            ("k8s.pod.name", "api-0"),
        ],
        &[(1, 1.0)],
    )]);
    assert!(decoded.rejected.is_empty(), "{:?}", decoded.rejected);
}
