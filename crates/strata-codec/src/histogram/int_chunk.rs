//! Appending integer histogram samples to an open chunk.

use super::appendable::{check_shape, decreased, frame_change, widen};
use super::layout::Layout;
use super::spans::{compare_buckets, deltas_to_absolute, union_spans};
use super::types::{CounterResetHint, Histogram, Span};
use super::varbit::{put_varbit_int, XorWindow};
use super::{AppendError, CounterResetHeader, CutReason, HistogramIter, HEADER_LEN};
use crate::bits::BitWriter;
use crate::CodecError;

/// The flags byte's low six bits in a chunk of integer histograms.
pub(super) const KIND_INT: u8 = 1;

/// Most samples a histogram chunk holds. The count's first byte thus stays
/// below `0xFF`, the first byte of a sealed chunk.
pub(super) const MAX_SAMPLES: u16 = 0xFEFF;

/// The running state of the encoding, the same for the appender and the
/// decoder: last values and last deltas of every field.
#[derive(Clone, Debug, Default)]
pub(super) struct IntState {
    pub t: i64,
    pub t_delta: u64,
    pub count: u64,
    pub count_delta: i64,
    pub zero: u64,
    pub zero_delta: i64,
    pub sum: u64,
    pub sum_window: XorWindow,
    /// Bucket values as the sample carries them (deltas between
    /// neighbours), and their changes since the previous sample.
    pub pos: Vec<i64>,
    pub pos_delta: Vec<i64>,
    pub neg: Vec<i64>,
    pub neg_delta: Vec<i64>,
}

impl IntState {
    /// Zeroes for a layout of `p` positive and `n` negative buckets.
    pub fn for_buckets(p: usize, n: usize) -> Self {
        Self {
            pos: vec![0; p],
            pos_delta: vec![0; p],
            neg: vec![0; n],
            neg_delta: vec![0; n],
            ..Self::default()
        }
    }

    /// After the first sample, which is written against zeroes, the deltas
    /// start from 0 so that the second sample's are small.
    pub fn forget_deltas(&mut self) {
        self.t_delta = 0;
        self.count_delta = 0;
        self.zero_delta = 0;
        self.pos_delta.fill(0);
        self.neg_delta.fill(0);
    }
}

/// An open chunk of integer native histogram samples of one series.
///
/// [`bytes`](Self::bytes) is a complete chunk after every append. The first
/// sample fixes the bucket layout; [`append`](Self::append) refuses a sample
/// that needs a new chunk and says why. A sample that only adds buckets is
/// absorbed by rewriting the chunk with the wider layout (as Prometheus
/// recodes), and one that lacks some of the chunk's buckets gets them as
/// empty buckets.
#[derive(Clone, Debug)]
pub struct HistogramChunk {
    w: BitWriter,
    n: u16,
    header: CounterResetHeader,
    layout: Layout,
    state: IntState,
    last_stale: bool,
    first_t: i64,
}

impl Default for HistogramChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl HistogramChunk {
    /// Most samples a chunk holds.
    pub const MAX_SAMPLES: u16 = MAX_SAMPLES;

    /// An empty chunk with an unknown counter-reset header.
    pub fn new() -> Self {
        Self::with_header(CounterResetHeader::Unknown)
    }

    /// An empty chunk with the given counter-reset header, typically
    /// [`CutReason::next_header`] of the cut that ended the previous chunk.
    /// A first sample hinted as a gauge or a reset overrides it.
    pub fn with_header(header: CounterResetHeader) -> Self {
        let mut c = Self {
            w: BitWriter::from_bytes(vec![0; HEADER_LEN]),
            n: 0,
            header,
            layout: Layout::default(),
            state: IntState::default(),
            last_stale: false,
            first_t: 0,
        };
        c.write_header();
        c
    }

    /// Appends a sample at `t`, which must be after the last sample's
    /// (checked in debug builds only). Stale markers always fit and are
    /// stored as [`Histogram::stale_marker`]. Nothing is written when it
    /// returns an error.
    pub fn append(&mut self, t: i64, h: &Histogram) -> Result<(), AppendError> {
        check_shape(h)?;
        if self.n == 0 {
            match h.counter_reset_hint {
                CounterResetHint::Gauge => self.header = CounterResetHeader::Gauge,
                CounterResetHint::Reset if !h.is_stale() => self.header = CounterResetHeader::Reset,
                _ => {}
            }
            self.write_sample(t, h);
            return Ok(());
        }
        debug_assert!(t > self.state.t, "timestamps must increase");
        let same_layout = h.is_stale() || self.fits(h)?;
        // Checked last, so that the next chunk's header reflects a reset.
        if self.n >= MAX_SAMPLES {
            return Err(AppendError::NeedsNewChunk(CutReason::Full));
        }
        if same_layout {
            self.write_sample(t, h);
            return Ok(());
        }
        // The spans differ but the indices merge: widen the chunk, the
        // sample, or both, to the union of their layouts.
        let cut = AppendError::NeedsNewChunk(CutReason::LayoutChanged);
        let (Some(pos), Some(neg)) = (
            union_spans(&self.layout.positive, &h.positive_spans),
            union_spans(&self.layout.negative, &h.negative_spans),
        ) else {
            return Err(cut);
        };
        let widened = widen(h, &pos, &neg).ok_or(cut)?;
        if pos != self.layout.positive || neg != self.layout.negative {
            self.recode(&pos, &neg)?;
        }
        self.write_sample(t, &widened);
        Ok(())
    }

    /// Whether a non-stale sample can follow the last one: `Ok(true)` if it
    /// has the chunk's layout, `Ok(false)` if its spans differ but no count
    /// went down, else the reason for a new chunk.
    fn fits(&self, h: &Histogram) -> Result<bool, AppendError> {
        let cut = |r| Err(AppendError::NeedsNewChunk(r));
        let gauge = self.header == CounterResetHeader::Gauge;
        if gauge != (h.counter_reset_hint == CounterResetHint::Gauge) {
            return cut(CutReason::KindChanged);
        }
        if self.last_stale {
            return cut(CutReason::AfterStale);
        }
        if !gauge && h.counter_reset_hint == CounterResetHint::Reset {
            return cut(CutReason::CounterReset);
        }
        if let Some(reason) =
            frame_change(&self.layout, h.schema, h.zero_threshold, &h.custom_values)
        {
            return cut(reason);
        }
        if !gauge && (h.count < self.state.count || h.zero_count < self.state.zero) {
            return cut(CutReason::CounterReset);
        }
        let s = &self.state;
        if h.positive_spans == self.layout.positive && h.negative_spans == self.layout.negative {
            if !gauge
                && (decreased(&s.pos, &h.positive_buckets)
                    || decreased(&s.neg, &h.negative_buckets))
            {
                return cut(CutReason::CounterReset);
            }
            return Ok(true);
        }
        if !gauge {
            let l = &self.layout;
            let p = compare_buckets(
                &l.positive,
                deltas_to_absolute(&s.pos),
                &h.positive_spans,
                deltas_to_absolute(&h.positive_buckets),
            );
            let n = compare_buckets(
                &l.negative,
                deltas_to_absolute(&s.neg),
                &h.negative_spans,
                deltas_to_absolute(&h.negative_buckets),
            );
            if p.decreased || n.decreased {
                return cut(CutReason::CounterReset);
            }
        }
        Ok(false)
    }

    /// Rewrites the chunk with every sample widened to the given spans.
    fn recode(&mut self, pos: &[Span], neg: &[Span]) -> Result<(), AppendError> {
        let mut fresh = Self::with_header(self.header);
        let mut it = self.iter();
        let mut h = Histogram::default();
        while let Some(t) = it.next_into(&mut h) {
            let widened =
                widen(&h, pos, neg).ok_or(AppendError::NeedsNewChunk(CutReason::LayoutChanged))?;
            fresh.write_sample(t, &widened);
        }
        if it.err().is_some() {
            return Err(AppendError::NeedsNewChunk(CutReason::LayoutChanged));
        }
        *self = fresh;
        Ok(())
    }

    /// Encodes a sample that has passed the checks (or is stale).
    fn write_sample(&mut self, t: i64, h: &Histogram) {
        let stale = h.is_stale();
        self.w
            .reserve(16 + h.positive_buckets.len() + h.negative_buckets.len());
        let s = &mut self.state;
        if self.n == 0 {
            // The first sample dictates the layout; a stale one has none.
            self.layout = if stale {
                Layout::default()
            } else {
                Layout {
                    schema: h.schema,
                    zero_threshold: h.zero_threshold,
                    positive: h.positive_spans.clone(),
                    negative: h.negative_spans.clone(),
                    custom_values: h.custom_values.clone(),
                }
            };
            self.layout.write(&mut self.w);
            let (p, n) = self.layout.bucket_counts();
            *s = IntState::for_buckets(p, n);
            put_varbit_int(&mut self.w, t);
            self.first_t = t;
        } else {
            // Timestamps increase, so the wrapping difference is the true
            // distance; the delta-of-delta wraps the same way when read.
            let delta = t.wrapping_sub(s.t) as u64;
            put_varbit_int(&mut self.w, delta.wrapping_sub(s.t_delta) as i64);
            s.t_delta = delta;
        }
        s.t = t;
        let sum = h.sum.to_bits();
        s.sum_window.write(&mut self.w, s.sum, sum);
        s.sum = sum;
        if !stale {
            let w = &mut self.w;
            put_dod(w, h.count, &mut s.count, &mut s.count_delta);
            put_dod(w, h.zero_count, &mut s.zero, &mut s.zero_delta);
            put_bucket_dods(w, &h.positive_buckets, &mut s.pos, &mut s.pos_delta);
            put_bucket_dods(w, &h.negative_buckets, &mut s.neg, &mut s.neg_delta);
        }
        if self.n == 0 {
            s.forget_deltas();
        }
        self.last_stale = stale;
        self.n += 1;
        self.write_header();
    }

    fn write_header(&mut self) {
        let flags = (self.header.bits() << 6) | KIND_INT;
        if let Some(head) = self.w.bytes_mut().first_chunk_mut::<HEADER_LEN>() {
            let [a, b] = self.n.to_be_bytes();
            *head = [a, b, flags];
        }
    }

    /// Number of samples appended.
    pub fn len(&self) -> u32 {
        u32::from(self.n)
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The chunk's counter-reset header.
    pub fn header(&self) -> CounterResetHeader {
        self.header
    }

    /// The complete chunk: header, layout and bit stream.
    pub fn bytes(&self) -> &[u8] {
        self.w.bytes()
    }

    /// Reopens a chunk for appending, as after a restart: the chunk in
    /// `bytes` decoded and encoded again, which must give back the same
    /// bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut it = HistogramIter::new(bytes)?;
        let mut c = Self::with_header(it.header());
        let mut h = Histogram::default();
        while let Some(t) = it.next_into(&mut h) {
            c.write_sample(t, &h);
        }
        if let Some(e) = it.err() {
            return Err(e.clone());
        }
        if c.bytes() != bytes {
            return Err(CodecError::Corrupt(
                "histogram chunk does not re-encode to itself",
            ));
        }
        Ok(c)
    }

    /// Timestamp of the first sample.
    pub fn first_t(&self) -> Option<i64> {
        (self.n > 0).then_some(self.first_t)
    }

    /// Timestamp of the last sample, the bound for the next append.
    pub fn last_t(&self) -> Option<i64> {
        (self.n > 0).then_some(self.state.t)
    }

    /// Iterates over the samples appended so far.
    pub fn iter(&self) -> HistogramIter<'_> {
        HistogramIter::from_valid(self.bytes())
    }

    /// Heap bytes held, for head-memory accounting.
    pub fn heap_bytes(&self) -> usize {
        let s = &self.state;
        let l = &self.layout;
        self.w.capacity()
            + 8 * (s.pos.capacity()
                + s.pos_delta.capacity()
                + s.neg.capacity()
                + s.neg_delta.capacity()
                + l.positive.capacity()
                + l.negative.capacity()
                + l.custom_values.capacity())
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
