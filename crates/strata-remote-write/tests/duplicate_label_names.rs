#![allow(clippy::unwrap_used)]

mod common;
use common::{reject_one_v1, v1_series};

#[test]
fn duplicate_label_names_reject_the_series() {
    let r = reject_one_v1(v1_series(
        &[("__name__", "up"), ("job", "a"), ("job", "b")],
        &[(1, 1.0)],
    ));
    assert_eq!(r.labels, r#"{__name__="up", job="a", job="b"}"#);
    assert_eq!(r.reason, r#"duplicate label name "job""#);
    assert!(r.to_string().contains(&r.labels));
}
