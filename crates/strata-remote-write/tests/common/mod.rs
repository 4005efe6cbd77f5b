//! Request builders shared by the scenario tests.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(dead_code)]

use strata_codec::Label;
use strata_remote_write::proto::v1;
use strata_remote_write::{decode, encode_v1, DecodeLimits, Version};
use strata_write::DecodedWrite;

pub fn labels(pairs: &[(&str, &str)]) -> Vec<Label> {
    pairs.iter().map(|&(n, v)| Label::new(n, v)).collect()
}

pub fn v1_series(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> v1::TimeSeries {
    v1::TimeSeries::from_samples(&labels(pairs), samples)
}

pub fn v1_body(timeseries: Vec<v1::TimeSeries>) -> Vec<u8> {
    let mut body = Vec::new();
    encode_v1(
        &v1::WriteRequest {
            timeseries,
            metadata: Vec::new(),
        },
        &mut body,
    );
    body
}

pub fn decode_v1(timeseries: Vec<v1::TimeSeries>) -> DecodedWrite {
    decode(Version::V1, &v1_body(timeseries), &DecodeLimits::default()).unwrap()
}

/// Decodes a request made of one valid series and `bad`, asserts that `bad`
/// is the one rejected series, and returns its rejection.
pub fn reject_one_v1(bad: v1::TimeSeries) -> strata_write::RejectedSeries {
    let good = v1_series(&[("__name__", "up"), ("job", "ok")], &[(1, 1.0)]);
    let decoded = decode_v1(vec![good, bad.clone()]);
    assert_eq!(decoded.series.len(), 1, "the valid series is kept");
    assert_eq!(
        decoded.series[0].labels,
        labels(&[("__name__", "up"), ("job", "ok")])
    );
    assert_eq!(decoded.rejected.len(), 1, "{:?}", decoded.rejected);
    let rejected = decoded.rejected.into_iter().next().unwrap();
    assert_eq!(rejected.samples, bad.samples.len());
    rejected
}
