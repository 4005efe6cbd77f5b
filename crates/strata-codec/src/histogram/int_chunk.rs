//! Integer histogram chunks: counts written as delta-of-deltas, the sum
//! XOR-coded.

use super::appendable::{check_shape, decreased, widen};
use super::chunk::Chunk;
use super::kind::Kind;
use super::layout::Layout;
use super::read::{overrun_or, Iter};
use super::spans::{compare_buckets, deltas_to_absolute};
use super::types::{CounterResetHint, Histogram, Span, STALE_NAN_BITS};
use super::varbit::{put_varbit_int, read_varbit_int, XorWindow};
use super::{AppendError, CutReason};
use crate::bits::{BitReader, BitWriter};
use crate::CodecError;

/// An open chunk of integer native histogram samples of one series (see
/// [`Chunk`]).
pub type HistogramChunk = Chunk<IntState>;

/// Iterates over the samples of an integer histogram chunk (see [`Iter`]).
pub type HistogramIter<'a> = Iter<'a, IntState>;

/// The flags byte's low six bits in a chunk of integer histograms.
pub(super) const KIND_INT: u8 = 1;

/// The running state of the encoding, the same for the appender and the
/// decoder: last values and last deltas of every field.
#[derive(Clone, Debug, Default)]
pub struct IntState {
    count: u64,
    count_delta: i64,
    zero: u64,
    zero_delta: i64,
    sum: u64,
    sum_window: XorWindow,
    /// Bucket values as the sample carries them (deltas between
    /// neighbours), and their changes since the previous sample.
    pos: Vec<i64>,
    pos_delta: Vec<i64>,
    neg: Vec<i64>,
    neg_delta: Vec<i64>,
}

impl IntState {
    /// After the first sample, which is written against zeroes, the deltas
    /// start from 0 so that the second sample's are small.
    fn forget_deltas(&mut self) {
        self.count_delta = 0;
        self.zero_delta = 0;
        self.pos_delta.fill(0);
        self.neg_delta.fill(0);
    }
}

impl Kind for IntState {
    type Histogram = Histogram;

    const KIND: u8 = KIND_INT;

    fn for_buckets(p: usize, n: usize) -> Self {
        Self {
            pos: vec![0; p],
            pos_delta: vec![0; p],
            neg: vec![0; n],
            neg_delta: vec![0; n],
            ..Self::default()
        }
    }

    fn check_shape(h: &Histogram) -> Result<(), AppendError> {
        check_shape(h)
    }

    fn widen(h: &Histogram, pos: &[Span], neg: &[Span]) -> Option<Histogram> {
        widen(h, pos, neg)
    }

    fn reserve(h: &Histogram) -> usize {
        16 + h.positive_buckets.len() + h.negative_buckets.len()
    }

    fn fits(&self, layout: &Layout, h: &Histogram, gauge: bool) -> Result<bool, AppendError> {
        let cut = |r| Err(AppendError::NeedsNewChunk(r));
        if !gauge && (h.count < self.count || h.zero_count < self.zero) {
            return cut(CutReason::CounterReset);
        }
        if h.positive_spans == layout.positive && h.negative_spans == layout.negative {
            if !gauge
                && (decreased(&self.pos, &h.positive_buckets)
                    || decreased(&self.neg, &h.negative_buckets))
            {
                return cut(CutReason::CounterReset);
            }
            return Ok(true);
        }
        if !gauge {
            let p = compare_buckets(
                &layout.positive,
                deltas_to_absolute(&self.pos),
                &h.positive_spans,
                deltas_to_absolute(&h.positive_buckets),
            );
            let n = compare_buckets(
                &layout.negative,
                deltas_to_absolute(&self.neg),
                &h.negative_spans,
                deltas_to_absolute(&h.negative_buckets),
            );
            if p.decreased || n.decreased {
                return cut(CutReason::CounterReset);
            }
        }
        Ok(false)
    }

    #[inline(always)]
    fn write(&mut self, w: &mut BitWriter, h: &Histogram, stale: bool, first: bool) {
        let sum = h.sum.to_bits();
        self.sum_window.write(w, self.sum, sum);
        self.sum = sum;
        if !stale {
            put_dod(w, h.count, &mut self.count, &mut self.count_delta);
            put_dod(w, h.zero_count, &mut self.zero, &mut self.zero_delta);
            put_bucket_dods(w, &h.positive_buckets, &mut self.pos, &mut self.pos_delta);
            put_bucket_dods(w, &h.negative_buckets, &mut self.neg, &mut self.neg_delta);
        }
        if first {
            self.forget_deltas();
        }
    }

    #[inline(always)]
    fn read(&mut self, r: &mut BitReader<'_>, first: bool) -> Result<bool, CodecError> {
        self.sum = self
            .sum_window
            .read(r, self.sum)
            .map_err(|e| overrun_or(r, e))?;
        let stale = self.sum == STALE_NAN_BITS;
        if !stale {
            read_dod(r, &mut self.count, &mut self.count_delta);
            read_dod(r, &mut self.zero, &mut self.zero_delta);
            read_bucket_dods(r, &mut self.pos, &mut self.pos_delta);
            read_bucket_dods(r, &mut self.neg, &mut self.neg_delta);
        }
        if first {
            self.forget_deltas();
        }
        Ok(stale)
    }

    #[inline]
    fn fill(&self, layout: &Layout, hint: CounterResetHint, out: &mut Histogram) {
        out.schema = layout.schema;
        out.zero_threshold = layout.zero_threshold;
        out.zero_count = self.zero;
        out.count = self.count;
        out.sum = f64::from_bits(self.sum);
        out.positive_spans.clone_from(&layout.positive);
        out.positive_buckets.clone_from(&self.pos);
        out.negative_spans.clone_from(&layout.negative);
        out.negative_buckets.clone_from(&self.neg);
        out.custom_values.clone_from(&layout.custom_values);
        out.counter_reset_hint = hint;
    }

    fn heap_bytes(&self) -> usize {
        8 * (self.pos.capacity()
            + self.pos_delta.capacity()
            + self.neg.capacity()
            + self.neg_delta.capacity())
    }
}

/// Writes the delta-of-delta of a count and moves the state on.
#[inline(always)]
fn put_dod(w: &mut BitWriter, v: u64, last: &mut u64, last_delta: &mut i64) {
    let delta = v.wrapping_sub(*last) as i64;
    put_varbit_int(w, delta.wrapping_sub(*last_delta));
    *last = v;
    *last_delta = delta;
}

#[inline(always)]
fn put_bucket_dods(w: &mut BitWriter, buckets: &[i64], last: &mut [i64], last_delta: &mut [i64]) {
    for ((&b, l), ld) in buckets
        .iter()
        .zip(last.iter_mut())
        .zip(last_delta.iter_mut())
    {
        let delta = b.wrapping_sub(*l);
        put_varbit_int(w, delta.wrapping_sub(*ld));
        *l = b;
        *ld = delta;
    }
}

#[inline(always)]
fn read_dod(r: &mut BitReader<'_>, last: &mut u64, last_delta: &mut i64) {
    let delta = last_delta.wrapping_add(read_varbit_int(r));
    *last = last.wrapping_add(delta as u64);
    *last_delta = delta;
}

#[inline(always)]
fn read_bucket_dods(r: &mut BitReader<'_>, last: &mut [i64], last_delta: &mut [i64]) {
    for (l, ld) in last.iter_mut().zip(last_delta.iter_mut()) {
        let delta = ld.wrapping_add(read_varbit_int(r));
        *l = l.wrapping_add(delta);
        *ld = delta;
    }
}
