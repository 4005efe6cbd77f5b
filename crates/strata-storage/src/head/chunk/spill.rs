//! A chunk's spill: its frozen runs taken as one segment in the sealed
//! format, written to the store by the spill pass, then dropped from the
//! chunk, which keeps only the segment's time range.

use strata_codec::{encode_sealed, TailChunk};

use super::body::{Body, HeadChunk, Older};
use super::frozen::write_runs;
use crate::head::alloc::fit_box;

/// A segment made of a chunk's frozen runs, to be written to the store
/// before [`HeadChunk::spilled`] drops them.
pub(crate) struct Spill {
    pub first_t: i64,
    pub last_t: i64,
    pub bytes: Vec<u8>,
    pub(super) samples: u32,
}

impl HeadChunk {
    /// Log replay: whether a sample at `t` that was in order when first
    /// written is one a spilled segment holds (it is not after them).
    pub(crate) fn replayed_spilled(&self, t: i64) -> bool {
        self.older()
            .spilled
            .last()
            .is_some_and(|&(_, last)| t <= last)
    }

    /// Time ranges of the segments spilled to the store, oldest first.
    pub(crate) fn spilled_segments(&self) -> &[(i64, i64)] {
        &self.older().spilled
    }

    /// Samples in the segments spilled to the store.
    pub(crate) fn spilled_len(&self) -> u32 {
        self.older().spilled_len
    }

    /// A chunk rebuilt by recovery: its segments found in the store, and
    /// how many samples they hold.
    pub(crate) fn with_spilled(spilled: Vec<(i64, i64)>, spilled_len: u32) -> Self {
        let older = (!spilled.is_empty() || spilled_len > 0).then(|| {
            Box::new(Older {
                spilled: fit_box(spilled),
                spilled_len,
                ..Older::default()
            })
        });
        Self(Body::Open {
            tail: TailChunk::new(),
            older,
        })
    }

    /// The frozen runs as one segment, if they hold at least `min_samples`
    /// samples. Nothing changes until [`Self::spilled`].
    pub(crate) fn take_spill(
        &self,
        min_samples: u32,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Option<Spill> {
        let older = self.older();
        if min_samples == 0 || older.frozen_len < min_samples {
            return None;
        }
        let (first, last) = (older.frozen.first()?, older.frozen.last()?);
        let sealed_run = match older.frozen.as_slice() {
            [run] if !run.at.is_tail() => Some(run),
            _ => None,
        };
        let bytes = if let Some(run) = sealed_run {
            run.file.with_run(run.at, <[u8]>::to_vec).ok()?
        } else {
            ts.clear();
            vs.clear();
            for p in &older.frozen {
                // Written here: an error would be a bug; keep the runs.
                p.decode_range_into(i64::MIN, i64::MAX, ts, vs).ok()?;
            }
            let mut bytes = Vec::new();
            encode_sealed(ts, vs, &mut bytes);
            bytes
        };
        Some(Spill {
            first_t: first.first_t,
            last_t: last.last_t,
            bytes,
            samples: older.frozen_len,
        })
    }

    /// Drops the frozen samples `spill` holds, now that it is in the store:
    /// every one up to its last. A freeze since [`Self::take_spill`] may
    /// have merged newer samples into its last run; those stay, re-encoded.
    pub(crate) fn spilled(&mut self, spill: &Spill) {
        let older = self.older_mut();
        let whole = older
            .frozen
            .iter()
            .take_while(|p| p.last_t <= spill.last_t)
            .count();
        let mut gone: u32 = older.frozen.drain(..whole).map(|p| p.len()).sum();
        if let Some(p) = older
            .frozen
            .first_mut()
            .filter(|p| p.first_t <= spill.last_t)
        {
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            // Written here: an error would be a bug; the run stays whole
            // (its older samples read twice rather than lost).
            if p.decode_range_into(spill.last_t.saturating_add(1), i64::MAX, &mut ts, &mut vs)
                .is_ok()
            {
                if let Some(mut runs) = write_runs(&p.file, &ts, &vs).filter(|r| r.len() == 1) {
                    if let Some(run) = runs.pop() {
                        gone += p.len().saturating_sub(run.len());
                        *p = run;
                    }
                }
            }
        }
        older.frozen_len = older.frozen_len.saturating_sub(gone);
        older.frozen.shrink_to_fit();
        let mut spilled = Vec::with_capacity(older.spilled.len() + 1);
        spilled.extend_from_slice(&older.spilled);
        spilled.push((spill.first_t, spill.last_t));
        older.spilled = spilled.into_boxed_slice();
        older.spilled_len = older.spilled_len.saturating_add(spill.samples);
    }
}
