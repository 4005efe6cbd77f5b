//! Native histograms between their wire form (1.0's `prometheus.Histogram`,
//! 2.0's `io.prometheus.write.v2.Histogram`, the same fields) and
//! [`HistogramSample`].
//!
//! As Prometheus' `prompb` codec: a histogram is a float one when its count
//! is `count_float`, an integer one otherwise (no count at all is an
//! integer count of 0); the other oneof and the other bucket form are
//! ignored. Reset hints map one to one; an unknown enum value is `Unknown`.

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Histogram, HistogramSample, Span};

use crate::proto::{v1, v2};

fn hint(h: i32) -> CounterResetHint {
    match h {
        1 => CounterResetHint::Reset,
        2 => CounterResetHint::NotReset,
        3 => CounterResetHint::Gauge,
        _ => CounterResetHint::Unknown,
    }
}

fn hint_number(h: CounterResetHint) -> i32 {
    match h {
        CounterResetHint::Unknown => 0,
        CounterResetHint::Reset => 1,
        CounterResetHint::NotReset => 2,
        CounterResetHint::Gauge => 3,
    }
}

macro_rules! conversions {
    ($m:ident) => {
        impl $m::Histogram {
            /// The sample this message carries (its timestamp is
            /// [`Self::timestamp`]). Not validated.
            pub fn to_sample(&self) -> HistogramSample {
                let spans = |s: &[$m::BucketSpan]| -> Vec<Span> {
                    s.iter().map(|s| Span::new(s.offset, s.length)).collect()
                };
                let counter_reset_hint = hint(self.reset_hint);
                match self.count {
                    Some($m::histogram::Count::CountFloat(count)) => {
                        HistogramSample::Float(FloatHistogram {
                            schema: self.schema,
                            zero_threshold: self.zero_threshold,
                            zero_count: match self.zero_count {
                                Some($m::histogram::ZeroCount::ZeroCountFloat(z)) => z,
                                _ => 0.0,
                            },
                            count,
                            sum: self.sum,
                            positive_spans: spans(&self.positive_spans),
                            positive_buckets: self.positive_counts.clone(),
                            negative_spans: spans(&self.negative_spans),
                            negative_buckets: self.negative_counts.clone(),
                            custom_values: self.custom_values.clone(),
                            counter_reset_hint,
                        })
                    }
                    count => HistogramSample::Int(Histogram {
                        schema: self.schema,
                        zero_threshold: self.zero_threshold,
                        zero_count: match self.zero_count {
                            Some($m::histogram::ZeroCount::ZeroCountInt(z)) => z,
                            _ => 0,
                        },
                        count: match count {
                            Some($m::histogram::Count::CountInt(c)) => c,
                            _ => 0,
                        },
                        sum: self.sum,
                        positive_spans: spans(&self.positive_spans),
                        positive_buckets: self.positive_deltas.clone(),
                        negative_spans: spans(&self.negative_spans),
                        negative_buckets: self.negative_deltas.clone(),
                        custom_values: self.custom_values.clone(),
                        counter_reset_hint,
                    }),
                }
            }

            /// The wire form of `h` at `timestamp` (ms).
            pub fn from_sample(timestamp: i64, h: &HistogramSample) -> Self {
                let spans = |s: &[Span]| -> Vec<$m::BucketSpan> {
                    s.iter()
                        .map(|s| $m::BucketSpan {
                            offset: s.offset,
                            length: s.length,
                        })
                        .collect()
                };
                match h {
                    HistogramSample::Int(h) => Self {
                        count: Some($m::histogram::Count::CountInt(h.count)),
                        sum: h.sum,
                        schema: h.schema,
                        zero_threshold: h.zero_threshold,
                        zero_count: Some($m::histogram::ZeroCount::ZeroCountInt(h.zero_count)),
                        negative_spans: spans(&h.negative_spans),
                        negative_deltas: h.negative_buckets.clone(),
                        positive_spans: spans(&h.positive_spans),
                        positive_deltas: h.positive_buckets.clone(),
                        reset_hint: hint_number(h.counter_reset_hint),
                        timestamp,
                        custom_values: h.custom_values.clone(),
                        ..Default::default()
                    },
                    HistogramSample::Float(h) => Self {
                        count: Some($m::histogram::Count::CountFloat(h.count)),
                        sum: h.sum,
                        schema: h.schema,
                        zero_threshold: h.zero_threshold,
                        zero_count: Some($m::histogram::ZeroCount::ZeroCountFloat(h.zero_count)),
                        negative_spans: spans(&h.negative_spans),
                        negative_counts: h.negative_buckets.clone(),
                        positive_spans: spans(&h.positive_spans),
                        positive_counts: h.positive_buckets.clone(),
                        reset_hint: hint_number(h.counter_reset_hint),
                        timestamp,
                        custom_values: h.custom_values.clone(),
                        ..Default::default()
                    },
                }
            }
        }
    };
}

conversions!(v1);
conversions!(v2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_round_trip_through_both_versions() {
        let int = HistogramSample::Int(Histogram {
            schema: 3,
            zero_threshold: 1e-128,
            zero_count: 1,
            count: 6,
            sum: 12.5,
            positive_spans: vec![Span::new(-2, 2), Span::new(3, 1)],
            positive_buckets: vec![1, 1, -1],
            negative_spans: vec![Span::new(0, 1)],
            negative_buckets: vec![1],
            custom_values: Vec::new(),
            counter_reset_hint: CounterResetHint::NotReset,
        });
        let float = HistogramSample::Float(FloatHistogram {
            schema: -53,
            count: 3.0,
            sum: f64::NAN,
            positive_spans: vec![Span::new(0, 2)],
            positive_buckets: vec![1.0, 2.0],
            custom_values: vec![0.5, 1.0],
            counter_reset_hint: CounterResetHint::Gauge,
            ..FloatHistogram::default()
        });
        for h in [int, float] {
            let one = v1::Histogram::from_sample(7, &h);
            assert_eq!(one.timestamp, 7);
            assert!(one.to_sample().bit_eq(&h));
            let two = v2::Histogram::from_sample(7, &h);
            assert!(two.to_sample().bit_eq(&h));
        }
    }

    #[test]
    fn no_count_is_an_integer_histogram_and_hints_map() {
        let h = v2::Histogram {
            reset_hint: 1,
            ..Default::default()
        };
        match h.to_sample() {
            HistogramSample::Int(h) => {
                assert_eq!(h.count, 0);
                assert_eq!(h.counter_reset_hint, CounterResetHint::Reset);
            }
            HistogramSample::Float(_) => panic!("an integer histogram"),
        }
        for (n, want) in [
            (0, CounterResetHint::Unknown),
            (2, CounterResetHint::NotReset),
            (3, CounterResetHint::Gauge),
            (9, CounterResetHint::Unknown),
        ] {
            assert_eq!(hint(n), want);
        }
    }
}
