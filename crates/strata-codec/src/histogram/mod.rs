//! Native histograms: the sample types, their checks, their chunks and their
//! log-record form.
//!
//! A native histogram sample is modelled as Prometheus 3 models it: an
//! exponential schema (-4..=8) or custom buckets (schema -53, "NHCB"), a zero
//! bucket, and positive and negative buckets laid out by spans. It comes in
//! two forms: [`Histogram`], with integer counts and buckets stored as deltas
//! between neighbours (as remote write carries them), and [`FloatHistogram`],
//! with absolute `f64` counts (what queries compute with).
//!
//! [`HistogramChunk`] and [`FloatHistogramChunk`] compress the samples of one
//! series the way Prometheus' `tsdb/chunkenc` histogram chunks do: the bucket
//! layout once per chunk, then per sample the timestamp and counts as
//! delta-of-delta (integer form) or XOR (float form) and the sum as XOR.
//! [`HistogramIter`] and [`FloatHistogramIter`] read them back from untrusted
//! bytes. [`encode_histogram_sample`] and [`encode_float_histogram_sample`]
//! give one sample's compact log form. `docs/format.md` draws every layout.
//!
//! ```
//! use strata_codec::histogram::{AppendError, Histogram, HistogramChunk, Span};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut chunks = vec![HistogramChunk::new()];
//! for (i, count) in [3u64, 5, 2].into_iter().enumerate() {
//!     let h = Histogram {
//!         schema: 3,
//!         count,
//!         sum: count as f64 * 0.25,
//!         positive_spans: vec![Span::new(-2, 1)],
//!         positive_buckets: vec![count as i64],
//!         ..Histogram::default()
//!     };
//!     h.validate()?;
//!     let t = 1_000 * i as i64;
//!     let open = chunks.last_mut().ok_or("no chunk")?;
//!     if let Err(AppendError::NeedsNewChunk(why)) = open.append(t, &h) {
//!         // 5 -> 2 is a counter reset: the next chunk says so in its header.
//!         let mut next = HistogramChunk::with_header(why.next_header(h.counter_reset_hint));
//!         next.append(t, &h)?;
//!         chunks.push(next);
//!     }
//! }
//! assert_eq!(chunks.len(), 2);
//! let (t, h) = chunks[1].iter().next().ok_or("empty chunk")?;
//! assert_eq!((t, h.count), (2_000, 2));
//! # Ok(())
//! # }
//! ```

mod appendable;
mod chunk;
mod float_chunk;
mod int_chunk;
mod kind;
mod layout;
mod list;
mod log_sample;
mod read;
mod spans;
mod types;
mod validate;
mod varbit;

pub use chunk::Chunk;
pub use float_chunk::{FloatHistogramChunk, FloatHistogramIter};
pub use int_chunk::{HistogramChunk, HistogramIter};
pub use list::{
    append_to_chunks, chunks_of, decode_chunk_list, decode_chunk_list_into, encode_chunk_list,
    AnyHistogramChunk,
};
pub use log_sample::{
    decode_float_histogram_sample, decode_histogram_sample, decode_sample,
    encode_float_histogram_sample, encode_histogram_sample, encode_sample,
};
pub use read::Iter;
pub use types::{
    CounterResetHint, FloatHistogram, Histogram, HistogramSample, Span, CUSTOM_BUCKETS_SCHEMA,
    MAX_EXP_SCHEMA, MIN_EXP_SCHEMA, STALE_NAN_BITS,
};
pub use validate::{HistogramError, Side};

/// Bytes of a histogram chunk's header: a 2-byte big-endian sample count and
/// a flags byte.
pub const HEADER_LEN: usize = 3;

/// The counter-reset knowledge a chunk records in the top two bits of its
/// flags byte, with Prometheus' bit values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CounterResetHeader {
    /// Whether a reset preceded the chunk is not known; a query must compare
    /// with the previous chunk.
    #[default]
    Unknown,
    /// The chunk was started because the counters reset.
    Reset,
    /// The chunk was started without a reset (it was full, or its layout
    /// changed).
    NotReset,
    /// The chunk holds gauge histograms, which have no resets.
    Gauge,
}

impl CounterResetHeader {
    fn bits(self) -> u8 {
        match self {
            Self::Unknown => 0b00,
            Self::NotReset => 0b01,
            Self::Reset => 0b10,
            Self::Gauge => 0b11,
        }
    }

    fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b01 => Self::NotReset,
            0b10 => Self::Reset,
            0b11 => Self::Gauge,
            _ => Self::Unknown,
        }
    }

    /// The hint a decoded sample gets from its chunk's header and position,
    /// as in Prometheus: only the first sample of a chunk may be a reset.
    fn hint_for(self, index: u16) -> CounterResetHint {
        match self {
            Self::Gauge => CounterResetHint::Gauge,
            _ if index > 0 => CounterResetHint::NotReset,
            Self::Reset => CounterResetHint::Reset,
            _ => CounterResetHint::Unknown,
        }
    }
}

/// Why a sample cannot join the current chunk. The caller starts a new chunk
/// with [`next_header`](Self::next_header) and appends the sample there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CutReason {
    /// The chunk holds the most samples it can.
    #[error("chunk is full")]
    Full,
    /// A count went down, or the sample says it follows a reset.
    #[error("counter reset")]
    CounterReset,
    /// The schema differs from the chunk's.
    #[error("schema changed")]
    SchemaChanged,
    /// The zero threshold differs (bit for bit) from the chunk's.
    #[error("zero threshold changed")]
    ZeroThresholdChanged,
    /// The custom bucket bounds differ from the chunk's.
    #[error("custom bucket bounds changed")]
    CustomBoundsChanged,
    /// The bucket layout changed in a way the chunk cannot absorb: for a
    /// gauge, any change; for a counter, spans whose indices cannot be
    /// merged into the chunk's.
    #[error("bucket layout changed")]
    LayoutChanged,
    /// A gauge histogram arrived in a counter chunk, or the other way round.
    #[error("gauge and counter histograms do not share a chunk")]
    KindChanged,
    /// The previous sample was a stale marker; only stale markers may follow
    /// one in a chunk.
    #[error("sample after a stale marker")]
    AfterStale,
}

impl CutReason {
    /// The counter-reset header the next chunk should start with when the
    /// sample that caused this cut was `hint`.
    pub fn next_header(self, hint: CounterResetHint) -> CounterResetHeader {
        if hint == CounterResetHint::Gauge {
            return CounterResetHeader::Gauge;
        }
        match self {
            Self::CounterReset | Self::CustomBoundsChanged => CounterResetHeader::Reset,
            Self::Full | Self::LayoutChanged => CounterResetHeader::NotReset,
            Self::SchemaChanged | Self::ZeroThresholdChanged | Self::KindChanged => {
                CounterResetHeader::Unknown
            }
            Self::AfterStale => CounterResetHeader::Unknown,
        }
    }
}

/// Why [`HistogramChunk::append`] or [`FloatHistogramChunk::append`] refused
/// a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AppendError {
    /// The sample is fine but belongs in a new chunk.
    #[error("sample needs a new chunk: {0}")]
    NeedsNewChunk(CutReason),
    /// The sample's spans and buckets disagree (or custom bounds come with
    /// an exponential schema); it fits no chunk. [`Histogram::validate`]
    /// catches this and more before a sample gets here.
    #[error("malformed histogram: {0}")]
    Malformed(&'static str),
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
