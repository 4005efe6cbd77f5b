//! A chunk's frozen runs: samples in the sealed format (or, for a tail
//! closed as it is, in the tail's), kept in the bucket's run file, and how
//! they are written.

use std::sync::Arc;

use smallvec::SmallVec;
use strata_codec::chunk::tail::decode_tail_range_into;
use strata_codec::sealed::decode_sealed_range_into;
use strata_codec::{encode_sealed, CodecError};

use crate::head::alloc::with_scratch;
use crate::head::runs::{RunAt, RunFile, MAX_RUN_SAMPLES};

/// Samples a frozen run takes before the next freeze starts a new one:
/// each freeze re-encodes the run it merges into, so this bounds that
/// work (a few times a sample's encoding at most) on a head that does not
/// spill. Above the spill threshold's staggered range (480 to 720) so a
/// writer's chunk holds one run.
pub(crate) const RUN_MAX_SAMPLES: u32 = 1024;
const _: () = assert!(RUN_MAX_SAMPLES <= MAX_RUN_SAMPLES);

/// Samples frozen in the sealed format, with their time range, kept in
/// the bucket's run file (see `runs.rs`), not the heap.
#[derive(Clone)]
pub(crate) struct FrozenRun {
    pub(super) first_t: i64,
    pub(super) last_t: i64,
    pub(super) file: Arc<RunFile>,
    pub(super) at: RunAt,
}

impl FrozenRun {
    /// Samples in the run.
    pub(super) fn len(&self) -> u32 {
        self.at.samples()
    }

    /// Appends the run's samples in `[mint, maxt]` to `ts`/`vs`.
    pub(super) fn decode_range_into(
        &self,
        mint: i64,
        maxt: i64,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), CodecError> {
        let tail = self.at.is_tail();
        self.file
            .with_run(self.at, |b| {
                if tail {
                    decode_tail_range_into(b, mint, maxt, ts, vs)
                } else {
                    decode_sealed_range_into(b, mint, maxt, ts, vs)
                }
            })
            .map_err(|_| CodecError::Corrupt("frozen run unreadable from its file"))?
    }
}

/// Frozen runs written for a chunk, not yet in it.
pub(crate) type Runs = SmallVec<[FrozenRun; 1]>;

/// `ts`/`vs` in the sealed format, written to `file` as runs of at most
/// [`RUN_MAX_SAMPLES`] samples each; `None` if one cannot be written.
pub(super) fn write_runs(file: &Arc<RunFile>, ts: &[i64], vs: &[f64]) -> Option<Runs> {
    let per = RUN_MAX_SAMPLES as usize;
    let mut runs = SmallVec::new();
    for (t, v) in ts.chunks(per).zip(vs.chunks(per)) {
        let (&first_t, &last_t) = (t.first()?, t.last()?);
        let samples = u32::try_from(t.len()).ok()?;
        let at = with_scratch(|buf| {
            encode_sealed(t, v, buf);
            file.write(buf, samples)
        })?;
        runs.push(FrozenRun {
            first_t,
            last_t,
            file: Arc::clone(file),
            at,
        });
    }
    Some(runs)
}
