//! Float histogram chunks: every count XOR-coded against the previous
//! sample's, as the sum is, instead of as a delta-of-delta.

use super::appendable::{check_shape_parts, widen_float};
use super::chunk::Chunk;
use super::kind::Kind;
use super::layout::Layout;
use super::read::{overrun_or, Iter};
use super::spans::compare_buckets;
use super::types::{CounterResetHint, FloatHistogram, Span, STALE_NAN_BITS};
use super::varbit::XorWindow;
use super::{AppendError, CutReason};
use crate::bits::{BitReader, BitWriter};
use crate::CodecError;

/// An open chunk of float native histogram samples of one series (see
/// [`Chunk`]).
pub type FloatHistogramChunk = Chunk<FloatState>;

/// Iterates over the samples of a float histogram chunk (see [`Iter`]).
pub type FloatHistogramIter<'a> = Iter<'a, FloatState>;

/// The flags byte's low six bits in a chunk of float histograms.
pub(super) const KIND_FLOAT: u8 = 2;

/// The running state of the encoding, the same for the appender and the
/// decoder: the bits of every field's last value and its XOR window.
#[derive(Clone, Debug, Default)]
pub struct FloatState {
    count: Field,
    zero: Field,
    sum: Field,
    pos: Vec<Field>,
    neg: Vec<Field>,
}

/// One XOR-encoded field: its last value's bits and its window.
#[derive(Clone, Copy, Debug, Default)]
struct Field {
    bits: u64,
    window: XorWindow,
}

impl Field {
    #[inline(always)]
    fn value(&self) -> f64 {
        f64::from_bits(self.bits)
    }

    #[inline(always)]
    fn put(&mut self, w: &mut BitWriter, v: f64) {
        let bits = v.to_bits();
        self.window.write(w, self.bits, bits);
        self.bits = bits;
    }

    #[inline(always)]
    fn read(&mut self, r: &mut BitReader<'_>) -> Result<(), CodecError> {
        self.bits = self
            .window
            .read(r, self.bits)
            .map_err(|e| overrun_or(r, e))?;
        Ok(())
    }
}

impl Kind for FloatState {
    type Histogram = FloatHistogram;

    const KIND: u8 = KIND_FLOAT;

    fn for_buckets(p: usize, n: usize) -> Self {
        Self {
            pos: vec![Field::default(); p],
            neg: vec![Field::default(); n],
            ..Self::default()
        }
    }

    fn check_shape(h: &FloatHistogram) -> Result<(), AppendError> {
        check_shape_parts(
            h.schema,
            (&h.positive_spans, &h.negative_spans),
            (h.positive_buckets.len(), h.negative_buckets.len()),
            &h.custom_values,
        )
    }

    fn widen(h: &FloatHistogram, pos: &[Span], neg: &[Span]) -> Option<FloatHistogram> {
        widen_float(h, pos, neg)
    }

    fn reserve(h: &FloatHistogram) -> usize {
        16 + 2 * (h.positive_buckets.len() + h.negative_buckets.len())
    }

    fn fits(&self, layout: &Layout, h: &FloatHistogram, gauge: bool) -> Result<bool, AppendError> {
        let cut = |r| Err(AppendError::NeedsNewChunk(r));
        if !gauge && (h.count < self.count.value() || h.zero_count < self.zero.value()) {
            return cut(CutReason::CounterReset);
        }
        let same = h.positive_spans == layout.positive && h.negative_spans == layout.negative;
        if same {
            let down =
                |old: &[Field], new: &[f64]| old.iter().zip(new).any(|(o, &n)| n < o.value());
            if !gauge
                && (down(&self.pos, &h.positive_buckets) || down(&self.neg, &h.negative_buckets))
            {
                return cut(CutReason::CounterReset);
            }
            return Ok(true);
        }
        if !gauge {
            let p = compare_buckets(
                &layout.positive,
                self.pos.iter().map(Field::value),
                &h.positive_spans,
                h.positive_buckets.iter().copied(),
            );
            let n = compare_buckets(
                &layout.negative,
                self.neg.iter().map(Field::value),
                &h.negative_spans,
                h.negative_buckets.iter().copied(),
            );
            if p.decreased || n.decreased {
                return cut(CutReason::CounterReset);
            }
        }
        Ok(false)
    }

    #[inline(always)]
    fn write(&mut self, w: &mut BitWriter, h: &FloatHistogram, stale: bool, _first: bool) {
        self.sum.put(w, h.sum);
        if !stale {
            self.count.put(w, h.count);
            self.zero.put(w, h.zero_count);
            for (f, &v) in self.pos.iter_mut().zip(&h.positive_buckets) {
                f.put(w, v);
            }
            for (f, &v) in self.neg.iter_mut().zip(&h.negative_buckets) {
                f.put(w, v);
            }
        }
    }

    #[inline(always)]
    fn read(&mut self, r: &mut BitReader<'_>, _first: bool) -> Result<bool, CodecError> {
        self.sum.read(r)?;
        let stale = self.sum.bits == STALE_NAN_BITS;
        if !stale {
            self.count.read(r)?;
            self.zero.read(r)?;
            for f in self.pos.iter_mut().chain(self.neg.iter_mut()) {
                f.read(r)?;
            }
        }
        Ok(stale)
    }

    #[inline]
    fn fill(&self, layout: &Layout, hint: CounterResetHint, out: &mut FloatHistogram) {
        out.schema = layout.schema;
        out.zero_threshold = layout.zero_threshold;
        out.zero_count = self.zero.value();
        out.count = self.count.value();
        out.sum = self.sum.value();
        out.positive_spans.clone_from(&layout.positive);
        out.positive_buckets.clear();
        out.positive_buckets
            .extend(self.pos.iter().map(Field::value));
        out.negative_spans.clone_from(&layout.negative);
        out.negative_buckets.clear();
        out.negative_buckets
            .extend(self.neg.iter().map(Field::value));
        out.custom_values.clone_from(&layout.custom_values);
        out.counter_reset_hint = hint;
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Field>() * (self.pos.capacity() + self.neg.capacity())
    }
}
