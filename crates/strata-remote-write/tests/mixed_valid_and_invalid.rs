#![allow(clippy::unwrap_used)]

mod common;
use common::{decode_v1, labels, v1_series};

#[test]
fn valid_series_are_kept_beside_invalid_ones() {
    let decoded = decode_v1(vec![
        v1_series(&[("__name__", "a"), ("job", "x")], &[(1, 1.0), (2, 2.0)]),
        v1_series(&[("job", "x")], &[(1, 1.0)]),
        v1_series(&[("__name__", "b"), ("job", "x")], &[(1, 3.0)]),
        v1_series(
            &[("__name__", "c"), ("job", "")],
            &[(1, 1.0), (2, 1.0), (3, 1.0)],
        ),
        v1_series(&[("__name__", "d")], &[]),
    ]);
    let kept: Vec<_> = decoded.series.iter().map(|s| s.labels.clone()).collect();
    assert_eq!(
        kept,
        vec![
            labels(&[("__name__", "a"), ("job", "x")]),
            labels(&[("__name__", "b"), ("job", "x")]),
        ]
    );
    assert_eq!(decoded.sample_count(), 3);
    let rejected: Vec<_> = decoded.rejected.iter().map(|r| r.samples).collect();
    assert_eq!(rejected, vec![1, 3]);
    let message = decoded.rejection_message();
    assert_eq!(message.lines().count(), 2);
    assert!(message.contains(r#"{job="x"}"#), "{message}");
    assert!(message.contains(r#"{__name__="c", job=""}"#), "{message}");
}
