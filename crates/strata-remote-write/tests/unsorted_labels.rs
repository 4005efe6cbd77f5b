#![allow(clippy::unwrap_used)]

mod common;
use common::{decode_v1, reject_one_v1, v1_series};
use strata_codec::Label;

#[test]
fn unsorted_labels_are_sorted_on_receipt() {
    // vmagent sends labels in scrape order: the metric name first, then the
    // page's labels, then the target's.
    let d = decode_v1(vec![v1_series(
        &[
            ("__name__", "node_cpu_seconds_total"),
            ("mode", "idle"),
            ("cpu", "0"),
            ("job", "node"),
            ("instance", "host:9100"),
        ],
        &[(1, 1.0), (2, 2.0)],
    )]);
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.series.len(), 1);
    assert_eq!(
        d.series[0].labels,
        vec![
            Label::new("__name__", "node_cpu_seconds_total"),
            Label::new("cpu", "0"),
            Label::new("instance", "host:9100"),
            Label::new("job", "node"),
            Label::new("mode", "idle"),
        ]
    );
    assert_eq!(d.series[0].samples, vec![(1, 1.0), (2, 2.0)]);
}

#[test]
fn duplicate_names_out_of_order_still_reject_the_series() {
    let r = reject_one_v1(v1_series(
        &[("zone", "a"), ("__name__", "up"), ("zone", "b")],
        &[(1, 1.0), (2, 1.0)],
    ));
    assert_eq!(r.reason, r#"duplicate label name "zone""#);
    assert_eq!(r.samples, 2);
    // Named sorted, the duplicates in the order sent.
    assert_eq!(r.labels, r#"{__name__="up", zone="a", zone="b"}"#);
}
