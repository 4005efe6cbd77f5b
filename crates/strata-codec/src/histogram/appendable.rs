//! The checks both chunk kinds make before appending, and the widening of
//! a sample to a merged layout.

use super::layout::Layout;
use super::spans::{absolute_to_deltas, deltas_to_absolute, expand, span_total};
use super::types::{FloatHistogram, Histogram, Span, CUSTOM_BUCKETS_SCHEMA};
use super::{AppendError, CutReason};

/// Refuses a sample whose buckets do not match its spans, or that has custom
/// bounds with an exponential schema: either would make the chunk
/// undecodable.
pub(super) fn check_shape_parts(
    schema: i32,
    spans: (&[Span], &[Span]),
    buckets: (usize, usize),
    custom_values: &[f64],
) -> Result<(), AppendError> {
    if span_total(spans.0) != buckets.0 {
        return Err(AppendError::Malformed(
            "positive spans do not match buckets",
        ));
    }
    if span_total(spans.1) != buckets.1 {
        return Err(AppendError::Malformed(
            "negative spans do not match buckets",
        ));
    }
    if schema != CUSTOM_BUCKETS_SCHEMA && !custom_values.is_empty() {
        return Err(AppendError::Malformed(
            "custom bounds with an exponential schema",
        ));
    }
    Ok(())
}

pub(super) fn check_shape(h: &Histogram) -> Result<(), AppendError> {
    check_shape_parts(
        h.schema,
        (&h.positive_spans, &h.negative_spans),
        (h.positive_buckets.len(), h.negative_buckets.len()),
        &h.custom_values,
    )
}

/// Which part of the frame (schema, zero threshold, custom bounds) differs
/// from the chunk's, if any.
pub(super) fn frame_change(
    layout: &Layout,
    schema: i32,
    zero_threshold: f64,
    custom_values: &[f64],
) -> Option<CutReason> {
    if layout.same_frame(schema, zero_threshold, custom_values) {
        None
    } else if layout.schema != schema {
        Some(CutReason::SchemaChanged)
    } else if layout.zero_threshold.to_bits() != zero_threshold.to_bits() {
        Some(CutReason::ZeroThresholdChanged)
    } else {
        Some(CutReason::CustomBoundsChanged)
    }
}

/// Whether any absolute count behind `new` (deltas) is below the one behind
/// `old`, the two laid out alike.
pub(super) fn decreased(old: &[i64], new: &[i64]) -> bool {
    let (mut a, mut b) = (0i64, 0i64);
    old.iter().zip(new).any(|(&x, &y)| {
        a = a.wrapping_add(x);
        b = b.wrapping_add(y);
        b < a
    })
}

/// `h` with its buckets laid out by `pos` and `neg`, which cover all of
/// its own; `None` if they do not.
pub(super) fn widen(h: &Histogram, pos: &[Span], neg: &[Span]) -> Option<Histogram> {
    let mut out = h.clone();
    if h.positive_spans != pos {
        let abs = deltas_to_absolute(&h.positive_buckets);
        out.positive_buckets = absolute_to_deltas(&expand(&h.positive_spans, &abs, pos)?);
        out.positive_spans = pos.to_vec();
    }
    if h.negative_spans != neg {
        let abs = deltas_to_absolute(&h.negative_buckets);
        out.negative_buckets = absolute_to_deltas(&expand(&h.negative_spans, &abs, neg)?);
        out.negative_spans = neg.to_vec();
    }
    Some(out)
}

/// `h` with its buckets laid out by `pos` and `neg`, which cover all of
/// its own; `None` if they do not.
pub(super) fn widen_float(
    h: &FloatHistogram,
    pos: &[Span],
    neg: &[Span],
) -> Option<FloatHistogram> {
    let mut out = h.clone();
    if h.positive_spans != pos {
        out.positive_buckets = expand(&h.positive_spans, &h.positive_buckets, pos)?;
        out.positive_spans = pos.to_vec();
    }
    if h.negative_spans != neg {
        out.negative_buckets = expand(&h.negative_spans, &h.negative_buckets, neg)?;
        out.negative_spans = neg.to_vec();
    }
    Some(out)
}
