//! Decoding the samples of a chunk in a time range into the caller's
//! buffers: written once for the Gorilla and the tail formats, which differ
//! only in how a sample is read, and the keep-or-drop of what was appended
//! that the sealed format's decoder shares.

use crate::CodecError;

/// What the range decoding needs of a format's decoder. Both formats write
/// the first two samples each in a way of their own and every later one
/// as a delta-of-delta and a value.
pub(crate) trait RangeDecoder<'a>: Sized {
    /// A decoder of the chunk in `bytes`; fails only if its header is
    /// missing.
    fn open(bytes: &'a [u8]) -> Result<Self, CodecError>;

    /// How many samples the input can hold at most, whatever its header
    /// says: the room to decode into.
    fn capacity_hint(&self) -> usize;

    /// Whether one of the first two samples is next.
    fn at_head(&self) -> bool;

    /// Whether samples are left.
    fn has_more(&self) -> bool;

    /// Reads one of the first two samples as (timestamp, value bits).
    fn next_head(&mut self) -> Result<(i64, u64), CodecError>;

    /// Reads a sample after the second as (timestamp, value bits).
    fn next_dod(&mut self) -> Result<(i64, u64), CodecError>;
}

/// Appends the samples in `[mint, maxt]` of the chunk in `bytes` to `ts`
/// and `vs`. On error nothing is appended.
#[inline(always)]
pub(crate) fn range_into<'a, D: RangeDecoder<'a>>(
    bytes: &'a [u8],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<(), CodecError> {
    let d = D::open(bytes)?;
    decode_appending(d.capacity_hint(), ts, vs, |t_out, v_out| {
        decode_slices(d, mint, maxt, t_out, v_out)
    })
}

/// Writes the samples in `[mint, maxt]` of the chunk in `bytes` to the
/// front of `t_out` and `v_out`, returning how many.
#[inline(always)]
pub(crate) fn range_to_slices<'a, D: RangeDecoder<'a>>(
    bytes: &'a [u8],
    mint: i64,
    maxt: i64,
    t_out: &mut [i64],
    v_out: &mut [f64],
) -> Result<usize, CodecError> {
    decode_slices(D::open(bytes)?, mint, maxt, t_out, v_out)
}

/// Decodes into `t_out`/`v_out`, which hold room for every sample the input
/// can encode; returns how many were written.
#[inline(always)]
fn decode_slices<'a, D: RangeDecoder<'a>>(
    mut d: D,
    mint: i64,
    maxt: i64,
    t_out: &mut [i64],
    v_out: &mut [f64],
) -> Result<usize, CodecError> {
    let mut out = RangeOut {
        mint,
        maxt,
        t_out,
        v_out,
        k: 0,
    };
    // The first two samples have their own encodings; the loop below only
    // sees delta-of-delta samples.
    while d.at_head() {
        let (t, v) = d.next_head()?;
        if !out.push(t, v)? {
            return Ok(out.k);
        }
    }
    while d.has_more() {
        let (t, v) = d.next_dod()?;
        if !out.push(t, v)? {
            break;
        }
    }
    Ok(out.k)
}

/// Decodes with `decode` into room for `n` more samples at the ends of `ts`
/// and `vs`, keeping the samples it reports written: none on error.
#[inline(always)]
pub(crate) fn decode_appending(
    n: usize,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
    decode: impl FnOnce(&mut [i64], &mut [f64]) -> Result<usize, CodecError>,
) -> Result<(), CodecError> {
    keep_appended(ts, vs, |ts, vs| {
        let (ts_len, vs_len) = (ts.len(), vs.len());
        // Decode into pre-sized slices rather than pushing: a push re-reads
        // and re-writes the vector's length through memory for every
        // sample.
        ts.resize(ts_len + n, 0);
        vs.resize(vs_len + n, 0.0);
        match (ts.get_mut(ts_len..), vs.get_mut(vs_len..)) {
            (Some(t_out), Some(v_out)) => decode(t_out, v_out),
            _ => Err(CodecError::Corrupt("buffer")),
        }
    })
}

/// Runs `decode`, which appends to `ts` and `vs` and returns how many of
/// the samples it appended to keep; keeps those, or none on error.
#[inline(always)]
pub(crate) fn keep_appended(
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
    decode: impl FnOnce(&mut Vec<i64>, &mut Vec<f64>) -> Result<usize, CodecError>,
) -> Result<(), CodecError> {
    let (ts_len, vs_len) = (ts.len(), vs.len());
    let kept = decode(ts, vs);
    let keep = kept.as_ref().map_or(0, |&k| k);
    ts.truncate(ts_len + keep);
    vs.truncate(vs_len + keep);
    kept.map(|_| ())
}

/// Where a bulk decoder writes the samples in `[mint, maxt]`.
pub(crate) struct RangeOut<'a> {
    pub mint: i64,
    pub maxt: i64,
    pub t_out: &'a mut [i64],
    pub v_out: &'a mut [f64],
    /// Samples written.
    pub k: usize,
}

impl RangeOut<'_> {
    /// Writes the sample if it is in the range; false once it is past it.
    #[inline(always)]
    pub fn push(&mut self, t: i64, v: u64) -> Result<bool, CodecError> {
        if t > self.maxt {
            return Ok(false);
        }
        if t >= self.mint {
            match (self.t_out.get_mut(self.k), self.v_out.get_mut(self.k)) {
                (Some(ts), Some(vs)) => {
                    *ts = t;
                    *vs = f64::from_bits(v);
                }
                _ => return Err(CodecError::Corrupt("more samples than bits")),
            }
            self.k += 1;
        }
        Ok(true)
    }
}
