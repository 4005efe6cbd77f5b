//! A chunk's samples in a time range, read from its frozen runs and its
//! tail, in time order.

use strata_codec::chunk::tail::{decode_tail_range_into, decode_tail_range_to_slices};
use strata_codec::CodecError;

use super::body::HeadChunk;

impl HeadChunk {
    /// Appends the samples in `[mint, maxt]`, in time order, to `ts`/`vs`.
    pub(crate) fn decode_range_into(
        &self,
        mint: i64,
        maxt: i64,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), CodecError> {
        for p in &self.older().frozen {
            if p.last_t >= mint && p.first_t <= maxt {
                p.decode_range_into(mint, maxt, ts, vs)?;
            }
        }
        let tail = self.tail();
        if tail.last_t().is_some_and(|l| l >= mint) {
            decode_tail_range_into(tail.bytes(), mint, maxt, ts, vs)?;
        }
        Ok(())
    }

    /// Writes the samples in `[mint, maxt]`, in time order, to the front of
    /// `ts`/`vs` (each at least [`len`](Self::len) long) and returns how
    /// many it wrote.
    pub(crate) fn decode_range_to_slices(
        &self,
        mint: i64,
        maxt: i64,
        ts: &mut [i64],
        vs: &mut [f64],
    ) -> Result<usize, CodecError> {
        let mut n = 0;
        let frozen = &self.older().frozen;
        if !frozen.is_empty() {
            let (mut t, mut v) = (Vec::new(), Vec::new());
            for p in frozen {
                if p.last_t >= mint && p.first_t <= maxt {
                    p.decode_range_into(mint, maxt, &mut t, &mut v)?;
                }
            }
            n = t.len();
            let (Some(t_out), Some(v_out)) = (ts.get_mut(..n), vs.get_mut(..n)) else {
                return Err(CodecError::Corrupt("head chunk longer than its count"));
            };
            t_out.copy_from_slice(&t);
            v_out.copy_from_slice(&v);
        }
        let tail = self.tail();
        if tail.last_t().is_some_and(|l| l >= mint) {
            let (Some(t_out), Some(v_out)) = (ts.get_mut(n..), vs.get_mut(n..)) else {
                return Err(CodecError::Corrupt("head chunk longer than its count"));
            };
            n += decode_tail_range_to_slices(tail.bytes(), mint, maxt, t_out, v_out)?;
        }
        Ok(n)
    }

    /// Appends every sample to `ts`/`vs`.
    pub(crate) fn decode_into(
        &self,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), CodecError> {
        self.decode_range_into(i64::MIN, i64::MAX, ts, vs)
    }
}
