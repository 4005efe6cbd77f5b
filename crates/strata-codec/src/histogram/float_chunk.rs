//! Appending float histogram samples to an open chunk.

use super::appendable::{check_shape_parts, frame_change, widen_float};
use super::int_chunk::MAX_SAMPLES;
use super::layout::Layout;
use super::spans::{compare_buckets, union_spans};
use super::types::{CounterResetHint, FloatHistogram, Span};
use super::varbit::{put_varbit_int, XorWindow};
use super::{AppendError, CounterResetHeader, CutReason, FloatHistogramIter, HEADER_LEN};
use crate::bits::BitWriter;
use crate::CodecError;

/// The flags byte's low six bits in a chunk of float histograms.
pub(super) const KIND_FLOAT: u8 = 2;

/// The running state of the encoding, the same for the appender and the
/// decoder: the bits of every field's last value and its XOR window.
#[derive(Clone, Debug, Default)]
pub(super) struct FloatState {
    pub t: i64,
    pub t_delta: u64,
    pub count: Field,
    pub zero: Field,
    pub sum: Field,
    pub pos: Vec<Field>,
    pub neg: Vec<Field>,
}

/// One XOR-encoded field: its last value's bits and its window.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Field {
    pub bits: u64,
    pub window: XorWindow,
}

impl Field {
    #[inline(always)]
    pub fn value(&self) -> f64 {
        f64::from_bits(self.bits)
    }

    #[inline(always)]
    fn put(&mut self, w: &mut BitWriter, v: f64) {
        let bits = v.to_bits();
        self.window.write(w, self.bits, bits);
        self.bits = bits;
    }
}

impl FloatState {
    /// Zeroes for a layout of `p` positive and `n` negative buckets.
    pub fn for_buckets(p: usize, n: usize) -> Self {
        Self {
            pos: vec![Field::default(); p],
            neg: vec![Field::default(); n],
            ..Self::default()
        }
    }
}

/// An open chunk of float native histogram samples of one series.
///
/// Behaves as [`HistogramChunk`](super::HistogramChunk) does, with every
/// count XOR-encoded against the previous sample's instead of as a
/// delta-of-delta.
#[derive(Clone, Debug)]
pub struct FloatHistogramChunk {
    w: BitWriter,
    n: u16,
    header: CounterResetHeader,
    layout: Layout,
    state: FloatState,
    last_stale: bool,
    first_t: i64,
}

impl Default for FloatHistogramChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl FloatHistogramChunk {
    /// Most samples a chunk holds.
    pub const MAX_SAMPLES: u16 = MAX_SAMPLES;

    /// An empty chunk with an unknown counter-reset header.
    pub fn new() -> Self {
        Self::with_header(CounterResetHeader::Unknown)
    }

    /// An empty chunk with the given counter-reset header; a first sample
    /// hinted as a gauge or a reset overrides it.
    pub fn with_header(header: CounterResetHeader) -> Self {
        let mut c = Self {
            w: BitWriter::from_bytes(vec![0; HEADER_LEN]),
            n: 0,
            header,
            layout: Layout::default(),
            state: FloatState::default(),
            last_stale: false,
            first_t: 0,
        };
        c.write_header();
        c
    }

    /// Appends a sample at `t`, which must be after the last sample's
    /// (checked in debug builds only). Stale markers always fit and are
    /// stored as [`FloatHistogram::stale_marker`]. Nothing is written when
    /// it returns an error.
    pub fn append(&mut self, t: i64, h: &FloatHistogram) -> Result<(), AppendError> {
        check_shape_parts(
            h.schema,
            (&h.positive_spans, &h.negative_spans),
            (h.positive_buckets.len(), h.negative_buckets.len()),
            &h.custom_values,
        )?;
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
        let cut = AppendError::NeedsNewChunk(CutReason::LayoutChanged);
        let (Some(pos), Some(neg)) = (
            union_spans(&self.layout.positive, &h.positive_spans),
            union_spans(&self.layout.negative, &h.negative_spans),
        ) else {
            return Err(cut);
        };
        let widened = widen_float(h, &pos, &neg).ok_or(cut)?;
        if pos != self.layout.positive || neg != self.layout.negative {
            self.recode(&pos, &neg)?;
        }
        self.write_sample(t, &widened);
        Ok(())
    }

    /// As [`HistogramChunk`](super::HistogramChunk)'s: `Ok(true)` for the
    /// chunk's layout, `Ok(false)` for spans to merge, else why to cut.
    fn fits(&self, h: &FloatHistogram) -> Result<bool, AppendError> {
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
        let s = &self.state;
        if !gauge && (h.count < s.count.value() || h.zero_count < s.zero.value()) {
            return cut(CutReason::CounterReset);
        }
        let same =
            h.positive_spans == self.layout.positive && h.negative_spans == self.layout.negative;
        if same {
            let down =
                |old: &[Field], new: &[f64]| old.iter().zip(new).any(|(o, &n)| n < o.value());
            if !gauge && (down(&s.pos, &h.positive_buckets) || down(&s.neg, &h.negative_buckets)) {
                return cut(CutReason::CounterReset);
            }
            return Ok(true);
        }
        if !gauge {
            let p = compare_buckets(
                &self.layout.positive,
                s.pos.iter().map(Field::value),
                &h.positive_spans,
                h.positive_buckets.iter().copied(),
            );
            let n = compare_buckets(
                &self.layout.negative,
                s.neg.iter().map(Field::value),
                &h.negative_spans,
                h.negative_buckets.iter().copied(),
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
        let mut h = FloatHistogram::default();
        while let Some(t) = it.next_into(&mut h) {
            let widened = widen_float(&h, pos, neg)
                .ok_or(AppendError::NeedsNewChunk(CutReason::LayoutChanged))?;
            fresh.write_sample(t, &widened);
        }
        if it.err().is_some() {
            return Err(AppendError::NeedsNewChunk(CutReason::LayoutChanged));
        }
        *self = fresh;
        Ok(())
    }

    /// Encodes a sample that has passed the checks (or is stale).
    fn write_sample(&mut self, t: i64, h: &FloatHistogram) {
        let stale = h.is_stale();
        self.w
            .reserve(16 + 2 * (h.positive_buckets.len() + h.negative_buckets.len()));
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
            *s = FloatState::for_buckets(p, n);
            put_varbit_int(&mut self.w, t);
            self.first_t = t;
        } else {
            let delta = t.wrapping_sub(s.t) as u64;
            put_varbit_int(&mut self.w, delta.wrapping_sub(s.t_delta) as i64);
            s.t_delta = delta;
        }
        s.t = t;
        let w = &mut self.w;
        s.sum.put(w, h.sum);
        if !stale {
            s.count.put(w, h.count);
            s.zero.put(w, h.zero_count);
            for (f, &v) in s.pos.iter_mut().zip(&h.positive_buckets) {
                f.put(w, v);
            }
            for (f, &v) in s.neg.iter_mut().zip(&h.negative_buckets) {
                f.put(w, v);
            }
        }
        self.last_stale = stale;
        self.n += 1;
        self.write_header();
    }

    fn write_header(&mut self) {
        let flags = (self.header.bits() << 6) | KIND_FLOAT;
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
        let mut it = FloatHistogramIter::new(bytes)?;
        let mut c = Self::with_header(it.header());
        let mut h = FloatHistogram::default();
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
    pub fn iter(&self) -> FloatHistogramIter<'_> {
        FloatHistogramIter::from_valid(self.bytes())
    }

    /// Heap bytes held, for head-memory accounting.
    pub fn heap_bytes(&self) -> usize {
        let field = std::mem::size_of::<Field>();
        let l = &self.layout;
        self.w.capacity()
            + field * (self.state.pos.capacity() + self.state.neg.capacity())
            + 8 * (l.positive.capacity() + l.negative.capacity() + l.custom_values.capacity())
    }
}
