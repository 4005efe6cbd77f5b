//! The entry every chunk format's range decoder goes through: samples
//! decoded after the ends of the caller's buffers, kept if the decoding
//! succeeds and dropped if it fails (Gorilla, tail and sealed chunks
//! alike), and where a sample loop writes the samples in its range.
//!
//! The Gorilla and the tail decoders keep their sample loops apart: one
//! loop generic over both measured a fifth slower on tail chunks.

use crate::CodecError;

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
