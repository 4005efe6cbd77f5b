//! Reading integer histogram chunks.

use super::int_chunk::{IntState, KIND_INT, MAX_SAMPLES};
use super::layout::Layout;
use super::types::{Histogram, STALE_NAN_BITS};
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

/// Iterates over the samples of an integer histogram chunk, yielding
/// `(timestamp, histogram)`.
///
/// It stops at the end of the chunk or at the first error; [`err`](Self::err)
/// tells which. Samples before an error are genuine. Hints come from the
/// chunk's header and the sample's position, as in Prometheus: a gauge
/// chunk's samples are gauges, a counter chunk's first sample is a reset or
/// unknown, the others are not resets. A stale marker comes back as
/// [`Histogram::stale_marker`].
#[derive(Clone, Debug)]
pub struct HistogramIter<'a> {
    r: BitReader<'a>,
    total: u16,
    read: u16,
    header: CounterResetHeader,
    layout: Layout,
    state: IntState,
    stale: bool,
    err: Option<CodecError>,
}

impl<'a> HistogramIter<'a> {
    /// An iterator over the chunk in `bytes`; fails only if the header is
    /// missing or names another kind of chunk. Errors in the body show up
    /// while iterating.
    pub fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let (total, header, body) = read_header(bytes, KIND_INT)?;
        Ok(Self {
            r: BitReader::new(body),
            total,
            read: 0,
            header,
            layout: Layout::default(),
            state: IntState::default(),
            stale: false,
            err: None,
        })
    }

    /// For bytes known to hold a header; otherwise an iterator that has
    /// already failed.
    pub(super) fn from_valid(bytes: &'a [u8]) -> Self {
        Self::new(bytes).unwrap_or_else(|e| Self {
            r: BitReader::new(&[]),
            total: 0,
            read: 0,
            header: CounterResetHeader::Unknown,
            layout: Layout::default(),
            state: IntState::default(),
            stale: false,
            err: Some(e),
        })
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
    pub fn next_into(&mut self, out: &mut Histogram) -> Option<i64> {
        if self.err.is_some() || self.read >= self.total {
            return None;
        }
        match self.read_sample() {
            Ok(()) => {}
            Err(e) => {
                self.err = Some(e);
                return None;
            }
        }
        self.fill(out);
        self.read += 1;
        Some(self.state.t)
    }

    fn read_sample(&mut self) -> Result<(), CodecError> {
        let r = &mut self.r;
        let s = &mut self.state;
        if self.read == 0 {
            self.layout = Layout::read(r)?;
            let (p, n) = self.layout.bucket_counts();
            *s = IntState::for_buckets(p, n);
            s.t = read_varbit_int(r);
        } else {
            let delta = s.t_delta.wrapping_add(read_varbit_int(r) as u64);
            let t = s.t.wrapping_add(delta as i64);
            if t <= s.t {
                return Err(overrun_or(
                    r,
                    CodecError::Corrupt("timestamps do not increase"),
                ));
            }
            s.t = t;
            s.t_delta = delta;
        }
        s.sum = s.sum_window.read(r, s.sum).map_err(|e| overrun_or(r, e))?;
        self.stale = s.sum == STALE_NAN_BITS;
        if !self.stale {
            read_dod(r, &mut s.count, &mut s.count_delta);
            read_dod(r, &mut s.zero, &mut s.zero_delta);
            read_bucket_dods(r, &mut s.pos, &mut s.pos_delta);
            read_bucket_dods(r, &mut s.neg, &mut s.neg_delta);
        }
        if r.overrun() {
            return Err(CodecError::Truncated);
        }
        if self.read == 0 {
            s.forget_deltas();
        }
        Ok(())
    }

    fn fill(&self, out: &mut Histogram) {
        if self.stale {
            *out = Histogram::stale_marker();
            return;
        }
        let (l, s) = (&self.layout, &self.state);
        out.schema = l.schema;
        out.zero_threshold = l.zero_threshold;
        out.zero_count = s.zero;
        out.count = s.count;
        out.sum = f64::from_bits(s.sum);
        out.positive_spans.clone_from(&l.positive);
        out.positive_buckets.clone_from(&s.pos);
        out.negative_spans.clone_from(&l.negative);
        out.negative_buckets.clone_from(&s.neg);
        out.custom_values.clone_from(&l.custom_values);
        out.counter_reset_hint = self.header.hint_for(self.read);
    }
}

impl Iterator for HistogramIter<'_> {
    type Item = (i64, Histogram);

    fn next(&mut self) -> Option<(i64, Histogram)> {
        let mut h = Histogram::default();
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
