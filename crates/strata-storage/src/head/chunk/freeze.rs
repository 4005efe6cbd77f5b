//! A tail frozen into the chunk's runs, in three steps so that the
//! series' lock is not held while runs are read, encoded and written.

use std::sync::Arc;

use strata_codec::chunk::tail::decode_tail_range_into;
use strata_codec::TailChunk;

use super::body::HeadChunk;
use super::frozen::{write_runs, FrozenRun, Runs, RUN_MAX_SAMPLES};
use crate::head::runs::{RunAt, RunFile};

/// Samples a tail needs before it is frozen (staggered per series by the
/// caller). Half of Prometheus' chunk size: the tail costs two to three times
/// the frozen run's bytes a sample, and merging into one run keeps the
/// sealed format's header paid once, however often a chunk freezes.
pub const FREEZE_MIN_SAMPLES: u32 = 60;

/// A freeze begun under the series' lock (see [`HeadChunk::freeze_start`]).
pub(crate) struct Freezing {
    /// The chunk's last run, which the tail is merged into.
    pub(super) into: Option<FrozenRun>,
    /// The chunk as it was.
    pub(super) seen: Seen,
}

/// What a freeze outside the lock must find unchanged.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) tail_len: u32,
    tail_last_t: Option<i64>,
    runs: usize,
    last_run: Option<RunAt>,
}

impl Freezing {
    /// Reads the run the tail merges into, if any, and writes it with
    /// the tail's samples (`tail_ts`/`tail_vs`, from
    /// [`HeadChunk::freeze_start`]) to `file` as new runs; `ts`/`vs` are
    /// scratch. Takes no lock: a run, once written, never changes.
    pub(crate) fn write(
        &self,
        file: &Arc<RunFile>,
        tail_ts: &[i64],
        tail_vs: &[f64],
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Option<Runs> {
        ts.clear();
        vs.clear();
        if let Some(run) = &self.into {
            // A decode error would be a bug; the tail stays as it is.
            run.decode_range_into(i64::MIN, i64::MAX, ts, vs).ok()?;
        }
        ts.extend_from_slice(tail_ts);
        vs.extend_from_slice(tail_vs);
        write_runs(file, ts, vs)
    }
}

impl HeadChunk {
    /// The bucket has ended: moves the whole tail into the frozen runs if
    /// the chunk has frozen runs already (a chunk without them, a few
    /// samples, would grow by their box), then closes the chunk (see
    /// [`Body::Closed`](super::body::Body::Closed)) if its tail is empty.
    /// Returns whether it froze.
    #[cfg(test)]
    pub(crate) fn freeze_ended(
        &mut self,
        file: &Arc<RunFile>,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> bool {
        let froze = self.would_freeze_ended() && self.freeze(1, file, ts, vs);
        self.close();
        froze
    }

    /// Whether [`Self::freeze`] with `min_samples` would move the tail.
    pub(crate) fn would_freeze(&self, min_samples: u32) -> bool {
        self.tail().len() >= min_samples.max(1)
    }

    /// Whether an ended chunk's tail is frozen rather than kept: only
    /// beside frozen runs (a chunk of a few samples would grow by a box).
    pub(crate) fn would_freeze_ended(&self) -> bool {
        self.older().frozen_len > 0 && self.would_freeze(1)
    }

    /// Moves the tail into the frozen runs if it holds at least
    /// `min_samples` samples, merged into the last run while that stays
    /// within [`RUN_MAX_SAMPLES`], written to `file` (the bucket's); returns
    /// whether it did. `ts`/`vs` are scratch buffers. (The head freezes
    /// in the steps below, which hold the series' lock only briefly.)
    #[cfg(test)]
    pub(crate) fn freeze(
        &mut self,
        min_samples: u32,
        file: &Arc<RunFile>,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> bool {
        let (mut tail_ts, mut tail_vs) = (Vec::new(), Vec::new());
        let Some(freezing) = self.freeze_start(min_samples, &mut tail_ts, &mut tail_vs) else {
            return false;
        };
        freezing
            .write(file, &tail_ts, &tail_vs, ts, vs)
            .is_some_and(|runs| self.freeze_finish(freezing, runs))
    }

    /// [`Self::freeze`] in three steps, so the series' lock is not held
    /// while the runs are read, encoded and written: this one, under the
    /// lock, decodes the tail into `tail_ts`/`tail_vs` and notes what the
    /// chunk is; [`Freezing::write`], outside it, writes the runs;
    /// [`Self::freeze_finish`], under the lock again, puts them in if the
    /// chunk is still as it was. `None` if the tail is too short (or
    /// unreadable, which would be a bug: the tail stays as it is).
    pub(crate) fn freeze_start(
        &self,
        min_samples: u32,
        tail_ts: &mut Vec<i64>,
        tail_vs: &mut Vec<f64>,
    ) -> Option<Freezing> {
        if !self.would_freeze(min_samples) {
            return None;
        }
        let tail = self.tail();
        let len = tail.len();
        tail_ts.clear();
        tail_vs.clear();
        decode_tail_range_into(tail.bytes(), i64::MIN, i64::MAX, tail_ts, tail_vs).ok()?;
        Some(Freezing {
            into: self
                .older()
                .frozen
                .last()
                .filter(|p| p.len().saturating_add(len) <= RUN_MAX_SAMPLES)
                .cloned(),
            seen: self.seen(),
        })
    }

    /// What the chunk is now, to compare with a [`Freezing`]'s.
    pub(super) fn seen(&self) -> Seen {
        let tail = self.tail();
        let frozen = &self.older().frozen;
        Seen {
            tail_len: tail.len(),
            tail_last_t: tail.last_t(),
            runs: frozen.len(),
            last_run: frozen.last().map(|p| p.at),
        }
    }

    /// Puts in the runs [`Freezing::write`] wrote for this chunk's tail,
    /// in place of the tail (and of the run they merge), if the chunk is
    /// as [`Self::freeze_start`] saw it: a sample appended, a spill or a
    /// seal meanwhile leaves it as it is, and the runs unread in the file.
    /// Returns whether it put them in.
    pub(crate) fn freeze_finish(&mut self, freezing: Freezing, runs: Runs) -> bool {
        if self.seen() != freezing.seen {
            return false;
        }
        let older = self.older_mut();
        if freezing.into.is_some() {
            older.frozen.pop();
        }
        older.frozen.extend(runs);
        older.frozen_len += freezing.seen.tail_len;
        *self.tail_mut() = TailChunk::new();
        true
    }
}
