//! Reading a histogram chunk of either kind (`kind.rs`).

use super::chunk::MAX_SAMPLES;
use super::kind::{Kind, Sample};
use super::layout::Layout;
use super::varbit::read_varbit_int;
use super::{CounterResetHeader, HEADER_LEN};
use crate::bits::BitReader;
use crate::CodecError;

/// Splits a histogram chunk into its sample count, counter-reset header and
/// body, checking that the flags byte names the expected kind of chunk.
pub(super) fn read_header(
    bytes: &[u8],
    kind: u8,
) -> Result<(u16, CounterResetHeader, &[u8]), CodecError> {
    let (&[a, b, flags], body) = bytes
        .split_first_chunk::<HEADER_LEN>()
        .ok_or(CodecError::Truncated)?;
    let n = u16::from_be_bytes([a, b]);
    if n > MAX_SAMPLES {
        return Err(CodecError::Corrupt("histogram chunk sample count"));
    }
    if flags & 0x3F != kind {
        return Err(CodecError::Corrupt("not this kind of histogram chunk"));
    }
    Ok((n, CounterResetHeader::from_bits(flags >> 6), body))
}

/// Iterates over the samples of a histogram chunk, yielding
/// `(timestamp, histogram)`: [`HistogramIter`](super::HistogramIter) for
/// integer histograms, [`FloatHistogramIter`](super::FloatHistogramIter)
/// for float ones.
///
/// It stops at the end of the chunk or at the first error; [`err`](Self::err)
/// tells which. Samples before an error are genuine. Hints come from the
/// chunk's header and the sample's position, as in Prometheus: a gauge
/// chunk's samples are gauges, a counter chunk's first sample is a reset or
/// unknown, the others are not resets. A stale marker comes back as the
/// histogram type's `stale_marker`.
#[derive(Clone, Debug)]
pub struct Iter<'a, K> {
    r: BitReader<'a>,
    total: u16,
    read: u16,
    header: CounterResetHeader,
    layout: Layout,
    /// The current sample's timestamp, and its distance from the one
    /// before.
    t: i64,
    t_delta: u64,
    state: K,
    stale: bool,
    err: Option<CodecError>,
}

impl<'a, K: Kind> Iter<'a, K> {
    /// An iterator over the chunk in `bytes`; fails only if the header is
    /// missing or names another kind of chunk. Errors in the body show up
    /// while iterating.
    pub fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let (total, header, body) = read_header(bytes, K::KIND)?;
        Ok(Self::with(BitReader::new(body), total, header, None))
    }

    /// For bytes known to hold a header; otherwise an iterator that has
    /// already failed.
    pub(super) fn from_valid(bytes: &'a [u8]) -> Self {
        Self::new(bytes).unwrap_or_else(|e| {
            Self::with(BitReader::new(&[]), 0, CounterResetHeader::Unknown, Some(e))
        })
    }

    fn with(
        r: BitReader<'a>,
        total: u16,
        header: CounterResetHeader,
        err: Option<CodecError>,
    ) -> Self {
        Self {
            r,
            total,
            read: 0,
            header,
            layout: Layout::default(),
            t: 0,
            t_delta: 0,
            state: K::default(),
            stale: false,
            err,
        }
    }

    /// The chunk's counter-reset header.
    pub fn header(&self) -> CounterResetHeader {
        self.header
    }

    /// Number of samples the header announces.
    pub fn len_hint(&self) -> u32 {
        u32::from(self.total)
    }

    /// The error that stopped iteration, if any.
    pub fn err(&self) -> Option<&CodecError> {
        self.err.as_ref()
    }

    /// Decodes the next sample into `out`, reusing its vectors, and returns
    /// its timestamp; `None` at the end of the chunk or on an error (then
    /// [`err`](Self::err) is set).
    pub fn next_into(&mut self, out: &mut K::Histogram) -> Option<i64> {
        if self.err.is_some() || self.read >= self.total {
            return None;
        }
        if let Err(e) = self.read_sample() {
            self.err = Some(e);
            return None;
        }
        if self.stale {
            *out = K::Histogram::stale_marker();
        } else {
            let hint = self.header.hint_for(self.read);
            self.state.fill(&self.layout, hint, out);
        }
        self.read += 1;
        Some(self.t)
    }

    fn read_sample(&mut self) -> Result<(), CodecError> {
        let r = &mut self.r;
        let first = self.read == 0;
        if first {
            self.layout = Layout::read(r)?;
            let (p, n) = self.layout.bucket_counts();
            self.state = K::for_buckets(p, n);
            self.t_delta = 0;
            self.t = read_varbit_int(r);
        } else {
            let delta = self.t_delta.wrapping_add(read_varbit_int(r) as u64);
            let t = self.t.wrapping_add(delta as i64);
            if t <= self.t {
                return Err(overrun_or(
                    r,
                    CodecError::Corrupt("timestamps do not increase"),
                ));
            }
            self.t = t;
            self.t_delta = delta;
        }
        self.stale = self.state.read(r, first)?;
        if r.overrun() {
            return Err(CodecError::Truncated);
        }
        Ok(())
    }
}

impl<K: Kind> Iterator for Iter<'_, K> {
    type Item = (i64, K::Histogram);

    fn next(&mut self) -> Option<(i64, K::Histogram)> {
        let mut h = K::Histogram::default();
        self.next_into(&mut h).map(|t| (t, h))
    }
}

/// `Truncated` if the input ran out (the bits read were padding), else `e`.
pub(super) fn overrun_or(r: &BitReader<'_>, e: CodecError) -> CodecError {
    if r.overrun() {
        CodecError::Truncated
    } else {
        e
    }
}
