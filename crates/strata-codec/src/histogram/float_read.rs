//! Reading float histogram chunks.

use super::float_chunk::{Field, FloatState, KIND_FLOAT};
use super::int_read::{overrun_or, read_header};
use super::layout::Layout;
use super::types::{FloatHistogram, STALE_NAN_BITS};
use super::varbit::read_varbit_int;
use super::CounterResetHeader;
use crate::bits::BitReader;
use crate::CodecError;

/// Iterates over the samples of a float histogram chunk, yielding
/// `(timestamp, histogram)`, with the contract of
/// [`HistogramIter`](super::HistogramIter).
#[derive(Clone, Debug)]
pub struct FloatHistogramIter<'a> {
    r: BitReader<'a>,
    total: u16,
    read: u16,
    header: CounterResetHeader,
    layout: Layout,
    state: FloatState,
    stale: bool,
    err: Option<CodecError>,
}

impl<'a> FloatHistogramIter<'a> {
    /// An iterator over the chunk in `bytes`; fails only if the header is
    /// missing or names another kind of chunk.
    pub fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let (total, header, body) = read_header(bytes, KIND_FLOAT)?;
        Ok(Self {
            r: BitReader::new(body),
            total,
            read: 0,
            header,
            layout: Layout::default(),
            state: FloatState::default(),
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
            state: FloatState::default(),
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
    /// its timestamp; `None` at the end of the chunk or on an error.
    pub fn next_into(&mut self, out: &mut FloatHistogram) -> Option<i64> {
        if self.err.is_some() || self.read >= self.total {
            return None;
        }
        if let Err(e) = self.read_sample() {
            self.err = Some(e);
            return None;
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
            *s = FloatState::for_buckets(p, n);
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
        read_field(r, &mut s.sum)?;
        self.stale = s.sum.bits == STALE_NAN_BITS;
        if !self.stale {
            read_field(r, &mut s.count)?;
            read_field(r, &mut s.zero)?;
            for f in s.pos.iter_mut().chain(s.neg.iter_mut()) {
                read_field(r, f)?;
            }
        }
        if r.overrun() {
            return Err(CodecError::Truncated);
        }
        Ok(())
    }

    fn fill(&self, out: &mut FloatHistogram) {
        if self.stale {
            *out = FloatHistogram::stale_marker();
            return;
        }
        let (l, s) = (&self.layout, &self.state);
        out.schema = l.schema;
        out.zero_threshold = l.zero_threshold;
        out.zero_count = s.zero.value();
        out.count = s.count.value();
        out.sum = s.sum.value();
        out.positive_spans.clone_from(&l.positive);
        out.positive_buckets.clear();
        out.positive_buckets.extend(s.pos.iter().map(Field::value));
        out.negative_spans.clone_from(&l.negative);
        out.negative_buckets.clear();
        out.negative_buckets.extend(s.neg.iter().map(Field::value));
        out.custom_values.clone_from(&l.custom_values);
        out.counter_reset_hint = self.header.hint_for(self.read);
    }
}

impl Iterator for FloatHistogramIter<'_> {
    type Item = (i64, FloatHistogram);

    fn next(&mut self) -> Option<(i64, FloatHistogram)> {
        let mut h = FloatHistogram::default();
        self.next_into(&mut h).map(|t| (t, h))
    }
}

#[inline(always)]
fn read_field(r: &mut BitReader<'_>, f: &mut Field) -> Result<(), CodecError> {
    f.bits = f.window.read(r, f.bits).map_err(|e| overrun_or(r, e))?;
    Ok(())
}
