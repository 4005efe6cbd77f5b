//! Every log record survives an encode/decode round trip, values bit for
//! bit.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use proptest::prelude::*;
use strata_codec::{
    Exemplar, Label, LogExemplar, LogRecord, LogRecordEncoder, LogSample, NewSeries,
};

pub fn records() -> impl Strategy<Value = LogRecord> {
    let label = ("[a-z_]{1,12}", ".{0,20}").prop_map(|(n, v)| Label::new(n, v));
    let series = (
        prop_oneof![0u64..1000, any::<u64>()],
        prop::collection::vec(label.clone(), 0..6),
    )
        .prop_map(|(id, labels)| NewSeries { id, labels });
    let sample = (
        prop_oneof![0u64..1000, any::<u64>()],
        prop_oneof![Just(1_700_000_000_000i64), any::<i64>()],
        prop_oneof![
            any::<u64>(),
            (-1_000_000i64..1_000_000).prop_map(|i| (i as f64).to_bits()),
            support::value_bits(1).prop_map(|v| v[0]),
        ],
    )
        .prop_map(|(series, t, v)| LogSample {
            series,
            t,
            v: f64::from_bits(v),
        });
    let exemplar = (
        prop_oneof![0u64..1000, any::<u64>()],
        any::<i64>(),
        any::<u64>(),
        prop::collection::vec(label.clone(), 0..3),
    )
        .prop_map(|(series, t, v, labels)| LogExemplar {
            series,
            exemplar: Exemplar {
                labels,
                t,
                v: f64::from_bits(v),
            },
        });
    (
        prop::collection::vec(series, 0..10),
        prop::collection::vec(sample, 0..200),
        prop::collection::vec(exemplar, 0..4),
    )
        .prop_map(|(new_series, samples, exemplars)| LogRecord {
            new_series,
            samples,
            exemplars,
            histograms: Vec::new(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trips(rec in records(), prefix in prop::collection::vec(any::<u8>(), 0..4), compressed in any::<bool>()) {
        let mut out = prefix.clone();
        if compressed {
            LogRecordEncoder::new().unwrap().encode(&rec, &mut out);
            prop_assert_eq!(out.get(prefix.len()), Some(&strata_codec::log_record::COMPRESSED));
        } else {
            rec.encode(&mut out);
        }
        prop_assert_eq!(&out[..prefix.len()], prefix.as_slice());
        let got = LogRecord::decode(&out[prefix.len()..]).unwrap();
        prop_assert_eq!(&got.new_series, &rec.new_series);
        let bits = |r: &LogRecord| -> Vec<(u64, i64, u64)> {
            r.samples.iter().map(|s| (s.series, s.t, s.v.to_bits())).collect()
        };
        prop_assert_eq!(bits(&got), bits(&rec));
        let exemplars = |r: &LogRecord| -> Vec<(u64, i64, u64, Vec<Label>)> {
            r.exemplars
                .iter()
                .map(|e| (e.series, e.exemplar.t, e.exemplar.v.to_bits(), e.exemplar.labels.clone()))
                .collect()
        };
        prop_assert_eq!(exemplars(&got), exemplars(&rec));
    }
}
