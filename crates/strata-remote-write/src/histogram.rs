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

/// The finest schema Prometheus reserves for exponential buckets: samples
/// of schemas 9 to this are reduced to 8 on receipt.
const MAX_RESERVED_SCHEMA: i32 = 52;

/// Prometheus' receiver reduces a histogram of a reserved schema finer than
/// 8 (9 to 52) to schema 8, merging `2^(schema-8)` buckets into one
/// (`ReduceResolution`); others are left as they are. A histogram whose
/// spans do not match its buckets is left for validation to refuse.
pub(crate) fn reduce_resolution(h: &mut HistogramSample) {
    use strata_codec::histogram::MAX_EXP_SCHEMA;
    let finer = MAX_EXP_SCHEMA + 1..=MAX_RESERVED_SCHEMA;
    match h {
        HistogramSample::Int(h) if finer.contains(&h.schema) => {
            let by = h.schema - MAX_EXP_SCHEMA;
            let (Some(p), Some(n)) = (
                merge(&h.positive_spans, &absolute(&h.positive_buckets), by),
                merge(&h.negative_spans, &absolute(&h.negative_buckets), by),
            ) else {
                return;
            };
            (h.positive_spans, h.positive_buckets) = (p.0, deltas(&p.1));
            (h.negative_spans, h.negative_buckets) = (n.0, deltas(&n.1));
            h.schema = MAX_EXP_SCHEMA;
        }
        HistogramSample::Float(h) if finer.contains(&h.schema) => {
            let by = h.schema - MAX_EXP_SCHEMA;
            let (Some(p), Some(n)) = (
                merge(&h.positive_spans, &h.positive_buckets, by),
                merge(&h.negative_spans, &h.negative_buckets, by),
            ) else {
                return;
            };
            (h.positive_spans, h.positive_buckets) = p;
            (h.negative_spans, h.negative_buckets) = n;
            h.schema = MAX_EXP_SCHEMA;
        }
        _ => {}
    }
}

fn absolute(deltas: &[i64]) -> Vec<i64> {
    let mut acc = 0i64;
    deltas
        .iter()
        .map(|&d| {
            acc = acc.wrapping_add(d);
            acc
        })
        .collect()
}

fn deltas(counts: &[i64]) -> Vec<i64> {
    let mut previous = 0i64;
    counts
        .iter()
        .map(|&c| {
            let d = c.wrapping_sub(previous);
            previous = c;
            d
        })
        .collect()
}

/// Buckets `counts` laid out by `spans`, merged `2^by` into one: bucket
/// `i` (covering `(base^(i-1), base^i]`) goes to `((i - 1) >> by) + 1`.
/// Consecutive merged buckets share a span. `None` if the spans do not
/// describe exactly `counts.len()` buckets.
fn merge<T>(spans: &[Span], counts: &[T], by: i32) -> Option<(Vec<Span>, Vec<T>)>
where
    T: Copy + std::ops::Add<Output = T>,
{
    let needed: u64 = spans.iter().map(|s| u64::from(s.length)).sum();
    if needed != counts.len() as u64 {
        return None;
    }
    let mut merged: Vec<(i64, T)> = Vec::with_capacity(counts.len());
    let mut index = 0i64;
    let mut counts = counts.iter();
    for s in spans {
        index += i64::from(s.offset);
        for _ in 0..s.length {
            let c = *counts.next()?;
            let target = ((index - 1) >> by) + 1;
            match merged.last_mut() {
                Some((last, n)) if *last == target => *n = *n + c,
                _ => merged.push((target, c)),
            }
            index += 1;
        }
    }
    let mut out_spans: Vec<Span> = Vec::new();
    let mut out_counts = Vec::with_capacity(merged.len());
    let mut previous: Option<i64> = None;
    for (target, c) in merged {
        match (previous, out_spans.last_mut()) {
            (Some(p), Some(span)) if target == p + 1 => span.length += 1,
            (Some(p), _) => out_spans.push(Span::new(i32::try_from(target - p - 1).ok()?, 1)),
            (None, _) => out_spans.push(Span::new(i32::try_from(target).ok()?, 1)),
        }
        out_counts.push(c);
        previous = Some(target);
    }
    Some((out_spans, out_counts))
}

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
    fn reserved_finer_schemas_are_reduced_to_8() {
        // Schema 10: four buckets make one of schema 8. Indexes 1..=4 go to
        // 1, 5..=8 to 2, -3..=0 to 0, and 9 to 3.
        let mut int = HistogramSample::Int(Histogram {
            schema: 10,
            count: 10,
            sum: 1.0,
            positive_spans: vec![Span::new(-3, 4), Span::new(0, 5)],
            // Absolute 1 1 1 1 | 1 1 1 1 1 at -3..=5.
            positive_buckets: vec![1, 0, 0, 0, 0, 0, 0, 0, 0],
            negative_spans: vec![Span::new(9, 1)],
            negative_buckets: vec![1],
            ..Histogram::default()
        });
        reduce_resolution(&mut int);
        let HistogramSample::Int(h) = &int else {
            panic!("still an integer histogram")
        };
        assert_eq!(h.schema, 8);
        assert_eq!(h.positive_spans, vec![Span::new(0, 3)]);
        assert_eq!(h.positive_buckets, vec![4, 0, -3]);
        assert_eq!(h.negative_spans, vec![Span::new(3, 1)]);
        assert_eq!(h.negative_buckets, vec![1]);
        int.validate().unwrap();

        let mut float = HistogramSample::Float(FloatHistogram {
            schema: 9,
            count: 3.0,
            positive_spans: vec![Span::new(1, 1), Span::new(5, 2)],
            positive_buckets: vec![1.0, 0.5, 1.5],
            ..FloatHistogram::default()
        });
        reduce_resolution(&mut float);
        let HistogramSample::Float(h) = &float else {
            panic!("still a float histogram")
        };
        // 1 -> 1; 7, 8 -> 4 (one bucket), with a gap of two.
        assert_eq!(h.schema, 8);
        assert_eq!(h.positive_spans, vec![Span::new(1, 1), Span::new(2, 1)]);
        assert_eq!(h.positive_buckets, vec![1.0, 2.0]);

        // Schemas up to 8, custom buckets and those past 52 are left alone.
        for schema in [8, -53, 53] {
            let mut h = HistogramSample::Int(Histogram {
                schema,
                ..Histogram::default()
            });
            reduce_resolution(&mut h);
            let HistogramSample::Int(h) = h else { panic!() };
            assert_eq!(h.schema, schema);
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
