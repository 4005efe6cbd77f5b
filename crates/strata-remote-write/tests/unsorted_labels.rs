#![allow(clippy::unwrap_used)]

mod common;
use common::{reject_one_v1, v1_series};

#[test]
fn unsorted_labels_reject_the_series() {
    let r = reject_one_v1(v1_series(
        &[("__name__", "up"), ("zone", "a"), ("job", "node")],
        &[(1, 1.0), (2, 1.0)],
    ));
    assert_eq!(r.labels, r#"{__name__="up", zone="a", job="node"}"#);
    assert!(r.reason.contains("not sorted"), "{}", r.reason);
    assert!(
        r.reason.contains("\"job\"") && r.reason.contains("\"zone\""),
        "{}",
        r.reason
    );
}
