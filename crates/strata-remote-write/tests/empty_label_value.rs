#![allow(clippy::unwrap_used)]

mod common;
use common::{reject_one_v1, v1_series};

#[test]
fn empty_label_value_rejects_the_series() {
    let r = reject_one_v1(v1_series(&[("__name__", "up"), ("job", "")], &[(1, 1.0)]));
    assert_eq!(r.reason, r#"label "job" has an empty value"#);
    assert_eq!(r.labels, r#"{__name__="up", job=""}"#);
}
