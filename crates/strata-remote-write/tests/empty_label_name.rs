#![allow(clippy::unwrap_used)]

mod common;
use common::{reject_one_v1, v1_series};

#[test]
fn empty_label_name_rejects_the_series() {
    let r = reject_one_v1(v1_series(&[("", "x"), ("__name__", "up")], &[(1, 1.0)]));
    assert!(r.reason.contains("empty name"), "{}", r.reason);
    assert!(r.labels.contains(r#"__name__="up""#), "{}", r.labels);
}
