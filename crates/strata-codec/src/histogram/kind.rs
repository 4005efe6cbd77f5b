//! What sets the integer and the float histogram chunk apart: the sample
//! type, the running state of its values, and how those are checked,
//! written and read. The chunk (`chunk.rs`) and its reader (`read.rs`) are
//! written once over it; `int_chunk.rs` and `float_chunk.rs` are the two
//! kinds.

use std::fmt::Debug;

use super::layout::Layout;
use super::types::{CounterResetHint, FloatHistogram, Histogram, Span};
use super::AppendError;
use crate::bits::{BitReader, BitWriter};
use crate::CodecError;

/// One kind of histogram chunk, named by its running state: the same for
/// the appender and the decoder, the last values and whatever their
/// encoding carries from one sample to the next.
pub trait Kind: Clone + Debug + Default {
    /// The samples a chunk of this kind holds.
    type Histogram: Sample;

    /// The flags byte's low six bits.
    const KIND: u8;

    /// Zeroes for a layout of `p` positive and `n` negative buckets.
    fn for_buckets(p: usize, n: usize) -> Self;

    /// Refuses a sample whose buckets do not match its spans, or that has
    /// custom bounds with an exponential schema.
    fn check_shape(h: &Self::Histogram) -> Result<(), AppendError>;

    /// `h` with its buckets laid out by `pos` and `neg`, which cover all of
    /// its own; `None` if they do not.
    fn widen(h: &Self::Histogram, pos: &[Span], neg: &[Span]) -> Option<Self::Histogram>;

    /// Bytes to reserve before writing `h`.
    fn reserve(h: &Self::Histogram) -> usize;

    /// Whether a non-stale sample of the chunk's frame can follow the last
    /// one, by its counts: `Ok(true)` if it has the chunk's spans,
    /// `Ok(false)` if they differ but no count went down, else the reason
    /// for a new chunk.
    fn fits(&self, layout: &Layout, h: &Self::Histogram, gauge: bool) -> Result<bool, AppendError>;

    /// Writes the values of `h` (of a stale marker, only its sum) after its
    /// timestamp, moving the state on; `first` for a chunk's first sample.
    fn write(&mut self, w: &mut BitWriter, h: &Self::Histogram, stale: bool, first: bool);

    /// Reads a sample's values after its timestamp, moving the state on;
    /// returns whether it is a stale marker.
    fn read(&mut self, r: &mut BitReader<'_>, first: bool) -> Result<bool, CodecError>;

    /// Writes the current sample, not a stale marker, to `out`.
    fn fill(&self, layout: &Layout, hint: CounterResetHint, out: &mut Self::Histogram);

    /// Heap bytes the state holds.
    fn heap_bytes(&self) -> usize;
}

/// What a chunk reads of a sample beside its values.
pub trait Sample: Clone + Debug + Default {
    fn hint(&self) -> CounterResetHint;
    fn is_stale(&self) -> bool;
    fn stale_marker() -> Self;
    fn schema(&self) -> i32;
    fn zero_threshold(&self) -> f64;
    fn positive_spans(&self) -> &[Span];
    fn negative_spans(&self) -> &[Span];
    fn custom_values(&self) -> &[f64];

    /// The layout a chunk whose first sample this is takes.
    fn layout(&self) -> Layout {
        Layout {
            schema: self.schema(),
            zero_threshold: self.zero_threshold(),
            positive: self.positive_spans().to_vec(),
            negative: self.negative_spans().to_vec(),
            custom_values: self.custom_values().to_vec(),
        }
    }
}

macro_rules! sample {
    ($t:ty) => {
        impl Sample for $t {
            fn hint(&self) -> CounterResetHint {
                self.counter_reset_hint
            }
            fn is_stale(&self) -> bool {
                <$t>::is_stale(self)
            }
            fn stale_marker() -> Self {
                <$t>::stale_marker()
            }
            fn schema(&self) -> i32 {
                self.schema
            }
            fn zero_threshold(&self) -> f64 {
                self.zero_threshold
            }
            fn positive_spans(&self) -> &[Span] {
                &self.positive_spans
            }
            fn negative_spans(&self) -> &[Span] {
                &self.negative_spans
            }
            fn custom_values(&self) -> &[f64] {
                &self.custom_values
            }
        }
    };
}

sample!(Histogram);
sample!(FloatHistogram);
