//! An open histogram chunk, of either kind (`kind.rs`): samples appended
//! in place, the chunk decodable after every append.

use super::appendable::frame_change;
use super::kind::{Kind, Sample};
use super::layout::Layout;
use super::read::Iter;
use super::spans::union_spans;
use super::types::{CounterResetHint, Span};
use super::varbit::put_varbit_int;
use super::{AppendError, CounterResetHeader, CutReason, HEADER_LEN};
use crate::bits::BitWriter;
use crate::CodecError;

/// Most samples a histogram chunk holds. The count's first byte thus stays
/// below `0xFF`, the first byte of a sealed chunk.
pub(super) const MAX_SAMPLES: u16 = 0xFEFF;

/// An open chunk of native histogram samples of one series:
/// [`HistogramChunk`](super::HistogramChunk) for integer histograms,
/// [`FloatHistogramChunk`](super::FloatHistogramChunk) for float ones.
///
/// [`bytes`](Self::bytes) is a complete chunk after every append. The first
/// sample fixes the bucket layout; [`append`](Self::append) refuses a sample
/// that needs a new chunk and says why. A sample that only adds buckets is
/// absorbed by rewriting the chunk with the wider layout (as Prometheus
/// recodes), and one that lacks some of the chunk's buckets gets them as
/// empty buckets.
#[derive(Clone, Debug)]
pub struct Chunk<K> {
    w: BitWriter,
    n: u16,
    header: CounterResetHeader,
    layout: Layout,
    /// The last sample's timestamp, and its distance from the one before.
    t: i64,
    t_delta: u64,
    state: K,
    last_stale: bool,
    first_t: i64,
}

impl<K: Kind> Default for Chunk<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Kind> Chunk<K> {
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
            t: 0,
            t_delta: 0,
            state: K::default(),
            last_stale: false,
            first_t: 0,
        };
        c.write_header();
        c
    }

    /// Appends a sample at `t`, which must be after the last sample's
    /// (checked in debug builds only). Stale markers always fit and are
    /// stored as the histogram type's `stale_marker`. Nothing is written
    /// when it returns an error.
    pub fn append(&mut self, t: i64, h: &K::Histogram) -> Result<(), AppendError> {
        K::check_shape(h)?;
        if self.n == 0 {
            match h.hint() {
                CounterResetHint::Gauge => self.header = CounterResetHeader::Gauge,
                CounterResetHint::Reset if !h.is_stale() => self.header = CounterResetHeader::Reset,
                _ => {}
            }
            self.write_sample(t, h);
            return Ok(());
        }
        debug_assert!(t > self.t, "timestamps must increase");
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
            union_spans(&self.layout.positive, h.positive_spans()),
            union_spans(&self.layout.negative, h.negative_spans()),
        ) else {
            return Err(cut);
        };
        let widened = K::widen(h, &pos, &neg).ok_or(cut)?;
        if pos != self.layout.positive || neg != self.layout.negative {
            self.recode(&pos, &neg)?;
        }
        self.write_sample(t, &widened);
        Ok(())
    }

    /// Whether a non-stale sample can follow the last one: `Ok(true)` if it
    /// has the chunk's layout, `Ok(false)` if its spans differ but no count
    /// went down, else the reason for a new chunk.
    fn fits(&self, h: &K::Histogram) -> Result<bool, AppendError> {
        let cut = |r| Err(AppendError::NeedsNewChunk(r));
        let gauge = self.header == CounterResetHeader::Gauge;
        if gauge != (h.hint() == CounterResetHint::Gauge) {
            return cut(CutReason::KindChanged);
        }
        if self.last_stale {
            return cut(CutReason::AfterStale);
        }
        if !gauge && h.hint() == CounterResetHint::Reset {
            return cut(CutReason::CounterReset);
        }
        if let Some(reason) = frame_change(
            &self.layout,
            h.schema(),
            h.zero_threshold(),
            h.custom_values(),
        ) {
            return cut(reason);
        }
        self.state.fits(&self.layout, h, gauge)
    }

    /// Rewrites the chunk with every sample widened to the given spans.
    fn recode(&mut self, pos: &[Span], neg: &[Span]) -> Result<(), AppendError> {
        let mut fresh = Self::with_header(self.header);
        let mut it = self.iter();
        let mut h = K::Histogram::default();
        while let Some(t) = it.next_into(&mut h) {
            let widened = K::widen(&h, pos, neg)
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
    fn write_sample(&mut self, t: i64, h: &K::Histogram) {
        let stale = h.is_stale();
        self.w.reserve(K::reserve(h));
        let first = self.n == 0;
        if first {
            // The first sample dictates the layout; a stale one has none.
            self.layout = if stale { Layout::default() } else { h.layout() };
            self.layout.write(&mut self.w);
            let (p, n) = self.layout.bucket_counts();
            self.state = K::for_buckets(p, n);
            self.t_delta = 0;
            put_varbit_int(&mut self.w, t);
            self.first_t = t;
        } else {
            // Timestamps increase, so the wrapping difference is the true
            // distance; the delta-of-delta wraps the same way when read.
            let delta = t.wrapping_sub(self.t) as u64;
            put_varbit_int(&mut self.w, delta.wrapping_sub(self.t_delta) as i64);
            self.t_delta = delta;
        }
        self.t = t;
        self.state.write(&mut self.w, h, stale, first);
        self.last_stale = stale;
        self.n += 1;
        self.write_header();
    }

    fn write_header(&mut self) {
        let flags = (self.header.bits() << 6) | K::KIND;
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
        let mut it = Iter::<K>::new(bytes)?;
        let mut c = Self::with_header(it.header());
        let mut h = K::Histogram::default();
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
        (self.n > 0).then_some(self.t)
    }

    /// Iterates over the samples appended so far.
    pub fn iter(&self) -> Iter<'_, K> {
        Iter::from_valid(self.bytes())
    }

    /// Heap bytes held, for head-memory accounting.
    pub fn heap_bytes(&self) -> usize {
        let l = &self.layout;
        self.w.capacity()
            + self.state.heap_bytes()
            + 8 * (l.positive.capacity() + l.negative.capacity() + l.custom_values.capacity())
    }
}
