//! The checks Prometheus makes before it stores a histogram sample.

use std::fmt;

use super::types::{FloatHistogram, Histogram, Span, MAX_EXP_SCHEMA, MIN_EXP_SCHEMA};

/// Which half of a histogram's buckets a problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Positive,
    Negative,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Positive => "positive",
            Self::Negative => "negative",
        })
    }
}

/// Why a histogram sample is invalid. The message names the field at fault;
/// bucket and span numbers count from 1, as Prometheus' messages do.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HistogramError {
    #[error("schema {0} is neither exponential (-4..=8) nor custom buckets (-53)")]
    InvalidSchema(i32),
    #[error("{side} span {span} has negative offset {offset}")]
    SpanNegativeOffset {
        side: Side,
        span: usize,
        offset: i32,
    },
    #[error("{side} spans need {spans} buckets, have {buckets}")]
    SpansBucketsMismatch {
        side: Side,
        spans: u64,
        buckets: usize,
    },
    #[error("{side} bucket {bucket} has negative observation count {count}")]
    NegativeBucketCount {
        side: Side,
        bucket: usize,
        count: f64,
    },
    #[error("{side} bucket counts overflow 64 bits")]
    BucketCountOverflow { side: Side },
    #[error("{in_buckets} observations found in buckets, but the count is {count}")]
    CountMismatch { in_buckets: u64, count: u64 },
    #[error("{in_buckets} observations found in buckets, but the count is only {count}")]
    CountNotBigEnough { in_buckets: u64, count: u64 },
    #[error("observation count {0} is negative")]
    NegativeCount(f64),
    #[error("zero bucket count {0} is negative")]
    NegativeZeroCount(f64),
    #[error("exponential schema {0} must not have custom bucket bounds")]
    CustomValuesWithExponentialSchema(i32),
    #[error("custom bucket bounds must increase strictly: {previous} then {current}")]
    CustomBoundsNotIncreasing { previous: f64, current: f64 },
    #[error("custom bucket bounds must not end with +Inf, it is implied")]
    CustomBoundsInfinite,
    #[error("custom buckets: spans reach {needed} buckets, the bounds define {defined}")]
    CustomBoundsTooFew { needed: u64, defined: u64 },
    #[error("custom buckets: must not have {0}")]
    CustomBucketsForbidden(&'static str),
}

impl Histogram {
    /// Checks what Prometheus checks before storing the sample: a known
    /// schema, spans that match the buckets, no negative bucket counts,
    /// custom bounds only (and well-formed) with schema -53, and a count
    /// equal to the buckets' total (at least that total when the sum is NaN,
    /// as NaN observations fall in no bucket).
    pub fn validate(&self) -> Result<(), HistogramError> {
        check_structure(
            self.schema,
            self.zero_threshold,
            self.zero_count != 0,
            (&self.positive_spans, self.positive_buckets.len()),
            (&self.negative_spans, self.negative_buckets.len()),
            &self.custom_values,
        )?;
        let positive = total_of_deltas(&self.positive_buckets, Side::Positive)?;
        let negative = total_of_deltas(&self.negative_buckets, Side::Negative)?;
        let in_buckets = positive
            .checked_add(negative)
            .and_then(|n| n.checked_add(self.zero_count))
            .ok_or(HistogramError::BucketCountOverflow {
                side: Side::Positive,
            })?;
        if self.sum.is_nan() {
            if in_buckets > self.count {
                return Err(HistogramError::CountNotBigEnough {
                    in_buckets,
                    count: self.count,
                });
            }
        } else if in_buckets != self.count {
            return Err(HistogramError::CountMismatch {
                in_buckets,
                count: self.count,
            });
        }
        Ok(())
    }
}

impl FloatHistogram {
    /// Checks the float form as Prometheus does, and that no count is
    /// negative. The count is not compared with the buckets' total, which
    /// rounding in rate() and friends can move either way.
    pub fn validate(&self) -> Result<(), HistogramError> {
        check_structure(
            self.schema,
            self.zero_threshold,
            self.zero_count != 0.0,
            (&self.positive_spans, self.positive_buckets.len()),
            (&self.negative_spans, self.negative_buckets.len()),
            &self.custom_values,
        )?;
        if self.count < 0.0 {
            return Err(HistogramError::NegativeCount(self.count));
        }
        if self.zero_count < 0.0 {
            return Err(HistogramError::NegativeZeroCount(self.zero_count));
        }
        for (side, buckets) in [
            (Side::Positive, &self.positive_buckets),
            (Side::Negative, &self.negative_buckets),
        ] {
            if let Some((i, &count)) = buckets.iter().enumerate().find(|(_, &c)| c < 0.0) {
                return Err(HistogramError::NegativeBucketCount {
                    side,
                    bucket: i + 1,
                    count,
                });
            }
        }
        Ok(())
    }
}

/// The checks shared by both forms: schema, spans against bucket counts,
/// and the custom-bucket rules.
fn check_structure(
    schema: i32,
    zero_threshold: f64,
    has_zero_count: bool,
    positive: (&[Span], usize),
    negative: (&[Span], usize),
    custom_values: &[f64],
) -> Result<(), HistogramError> {
    if schema == super::CUSTOM_BUCKETS_SCHEMA {
        if has_zero_count {
            return Err(HistogramError::CustomBucketsForbidden("a zero count"));
        }
        if zero_threshold != 0.0 {
            return Err(HistogramError::CustomBucketsForbidden("a zero threshold"));
        }
        if !negative.0.is_empty() {
            return Err(HistogramError::CustomBucketsForbidden("negative spans"));
        }
        if negative.1 != 0 {
            return Err(HistogramError::CustomBucketsForbidden("negative buckets"));
        }
        check_custom_bounds(custom_values)?;
        // Every span's offset counts from the end of the previous one, the
        // first's from bucket 0, so none may be negative here.
        if let Some((i, s)) = positive.0.iter().enumerate().find(|(_, s)| s.offset < 0) {
            return Err(HistogramError::SpanNegativeOffset {
                side: Side::Positive,
                span: i + 1,
                offset: s.offset,
            });
        }
        check_spans(positive.0, positive.1, Side::Positive)?;
        let needed: u64 = positive
            .0
            .iter()
            .map(|s| u64::from(s.length) + u64::from(s.offset.unsigned_abs()))
            .sum();
        let defined = custom_values.len() as u64 + 1;
        if needed > defined {
            return Err(HistogramError::CustomBoundsTooFew { needed, defined });
        }
        return Ok(());
    }
    if !(MIN_EXP_SCHEMA..=MAX_EXP_SCHEMA).contains(&schema) {
        return Err(HistogramError::InvalidSchema(schema));
    }
    if !custom_values.is_empty() {
        return Err(HistogramError::CustomValuesWithExponentialSchema(schema));
    }
    check_spans(positive.0, positive.1, Side::Positive)?;
    check_spans(negative.0, negative.1, Side::Negative)
}

/// Spans after the first may not go backwards, and their lengths must add
/// up to the number of buckets.
fn check_spans(spans: &[Span], buckets: usize, side: Side) -> Result<(), HistogramError> {
    if let Some((i, s)) = spans.iter().enumerate().skip(1).find(|(_, s)| s.offset < 0) {
        return Err(HistogramError::SpanNegativeOffset {
            side,
            span: i + 1,
            offset: s.offset,
        });
    }
    let total: u64 = spans.iter().map(|s| u64::from(s.length)).sum();
    if total != buckets as u64 {
        return Err(HistogramError::SpansBucketsMismatch {
            side,
            spans: total,
            buckets,
        });
    }
    Ok(())
}

/// Bounds must increase strictly (so none is NaN) and must not include the
/// implied +Inf.
fn check_custom_bounds(bounds: &[f64]) -> Result<(), HistogramError> {
    let mut previous = f64::NEG_INFINITY;
    for &current in bounds {
        // Not `current <= previous`: a NaN bound must fail too.
        if current.partial_cmp(&previous) != Some(std::cmp::Ordering::Greater) {
            return Err(HistogramError::CustomBoundsNotIncreasing { previous, current });
        }
        previous = current;
    }
    if previous == f64::INFINITY {
        return Err(HistogramError::CustomBoundsInfinite);
    }
    Ok(())
}

/// The total of the absolute counts behind `deltas`, failing on a negative
/// count or an overflow.
fn total_of_deltas(deltas: &[i64], side: Side) -> Result<u64, HistogramError> {
    let mut count = 0i64;
    let mut total = 0u64;
    for (i, &d) in deltas.iter().enumerate() {
        count = count
            .checked_add(d)
            .ok_or(HistogramError::BucketCountOverflow { side })?;
        if count < 0 {
            return Err(HistogramError::NegativeBucketCount {
                side,
                bucket: i + 1,
                count: count as f64,
            });
        }
        total = total
            .checked_add(count as u64)
            .ok_or(HistogramError::BucketCountOverflow { side })?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::hist;
    use super::super::*;

    #[test]
    fn validate_names_the_problem() {
        let ok = hist(3, &[(0, 5), (4, 1)], &[(1, 2)], 3, 10.0);
        ok.validate().unwrap();
        ok.to_float().validate().unwrap();

        let mut h = ok.clone();
        h.schema = 9;
        assert_eq!(h.validate(), Err(HistogramError::InvalidSchema(9)));
        let mut h = ok.clone();
        h.positive_buckets.pop();
        assert!(matches!(
            h.validate(),
            Err(HistogramError::SpansBucketsMismatch {
                side: Side::Positive,
                spans: 2,
                buckets: 1
            })
        ));
        let mut h = ok.clone();
        h.positive_buckets[1] = -6;
        assert!(matches!(
            h.validate(),
            Err(HistogramError::NegativeBucketCount { bucket: 2, .. })
        ));
        let mut h = ok.clone();
        h.negative_spans.push(Span::new(-1, 0));
        assert!(matches!(
            h.validate(),
            Err(HistogramError::SpanNegativeOffset {
                side: Side::Negative,
                span: 2,
                offset: -1
            })
        ));
        let mut h = ok.clone();
        h.count += 1;
        assert_eq!(
            h.validate(),
            Err(HistogramError::CountMismatch {
                in_buckets: 11,
                count: 12
            })
        );
        h.sum = f64::NAN;
        h.validate().unwrap();
        h.count = 10;
        assert_eq!(
            h.validate(),
            Err(HistogramError::CountNotBigEnough {
                in_buckets: 11,
                count: 10
            })
        );
        let mut h = ok.clone();
        h.custom_values = vec![1.0];
        assert_eq!(
            h.validate(),
            Err(HistogramError::CustomValuesWithExponentialSchema(3))
        );

        let mut n = hist(CUSTOM_BUCKETS_SCHEMA, &[(0, 1), (2, 3)], &[], 0, 1.0);
        n.custom_values = vec![0.1, 0.5];
        n.validate().unwrap();
        n.custom_values = vec![0.1];
        assert_eq!(
            n.validate(),
            Err(HistogramError::CustomBoundsTooFew {
                needed: 3,
                defined: 2
            })
        );
        n.custom_values = vec![0.5, 0.1];
        assert!(matches!(
            n.validate(),
            Err(HistogramError::CustomBoundsNotIncreasing { .. })
        ));
        n.custom_values = vec![0.1, f64::NAN];
        assert!(matches!(
            n.validate(),
            Err(HistogramError::CustomBoundsNotIncreasing { .. })
        ));
        n.custom_values = vec![0.1, f64::INFINITY];
        assert_eq!(n.validate(), Err(HistogramError::CustomBoundsInfinite));
        n.custom_values = vec![0.1, 0.5];
        n.zero_count = 1;
        n.count += 1;
        assert_eq!(
            n.validate(),
            Err(HistogramError::CustomBucketsForbidden("a zero count"))
        );

        let mut f = ok.to_float();
        f.negative_buckets[0] = -0.5;
        assert!(matches!(
            f.validate(),
            Err(HistogramError::NegativeBucketCount {
                side: Side::Negative,
                bucket: 1,
                ..
            })
        ));
        let mut f = ok.to_float();
        f.zero_count = -1.0;
        assert_eq!(f.validate(), Err(HistogramError::NegativeZeroCount(-1.0)));
        assert!(HistogramError::InvalidSchema(9)
            .to_string()
            .contains("schema 9"));
    }

    #[test]
    fn to_float_sums_deltas() {
        let h = hist(0, &[(0, 5), (1, 2), (4, 9)], &[], 1, 3.5);
        let f = h.to_float();
        assert_eq!(f.positive_buckets, [5.0, 2.0, 9.0]);
        assert_eq!((f.count, f.zero_count, f.sum), (17.0, 1.0, 3.5));
        assert_eq!(f.positive_spans, h.positive_spans);
    }
}
