//! Arithmetic on float native histograms, as Prometheus'
//! `model/histogram/float_histogram.go` does it: adding and subtracting
//! (reconciling schemas, zero thresholds and custom bounds), scaling,
//! reducing the resolution, dropping empty buckets, detecting a counter
//! reset, and iterating over every bucket with its bounds.
//!
//! Buckets are worked on in a sparse form, `(index, count)` pairs in index
//! order, and laid out as spans again afterwards.
//!
//! By seam: `bounds` (bucket bounds), `layout` (pairs and spans, schema
//! reduction), `add` (sums, differences, scaling), `kahan` (compensated sums
//! and means), `reset` (counter resets, equality), `format` (buckets with
//! bounds, the string form), `trim` (the `</` and `>/` operators).

#[cfg(test)]
use strata_codec::histogram::FloatHistogram;

mod add;
mod bounds;
mod format;
mod kahan;
mod layout;
mod reset;
mod trim;

pub use add::{add, div, mul};
pub use bounds::{bound, exponential_bound, is_custom};
pub use format::{all_buckets, to_string};
pub(crate) use format::{go_g, go_g_precision};
pub use kahan::{KahanMean, KahanSum};
pub use layout::{compact, copy_to_schema, layout, reduce_resolution, sparse};
pub use reset::{detect_reset, equals};
pub use trim::trim_buckets;

/// Adding or subtracting histograms of exponential and custom buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncompatibleSchema;

/// What an addition or subtraction met besides its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Combined {
    /// One side said "counter reset", the other "no counter reset".
    pub counter_reset_collision: bool,
    /// Custom bounds differed and were reduced to the ones both have.
    pub nhcb_bounds_reconciled: bool,
}

/// One bucket with its bounds, as Prometheus' `Bucket[float64]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    pub lower: f64,
    pub upper: f64,
    pub lower_inclusive: bool,
    pub upper_inclusive: bool,
    pub count: f64,
    pub index: i32,
}

/// A histogram of `schema` with positive buckets from index `offset`.
#[cfg(test)]
fn h(schema: i32, count: f64, sum: f64, offset: i32, buckets: &[f64]) -> FloatHistogram {
    use strata_codec::histogram::Span;
    FloatHistogram {
        schema,
        zero_threshold: 0.001,
        count,
        sum,
        positive_spans: vec![Span::new(offset, buckets.len() as u32)],
        positive_buckets: buckets.to_vec(),
        ..FloatHistogram::default()
    }
}
