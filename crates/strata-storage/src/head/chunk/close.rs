//! A chunk that takes no more samples in order closed the cheap way: its
//! tail's bytes written as they are as a run in the tail's format, and
//! later the chunk's runs merged into runs in the sealed format.

use std::sync::Arc;

use strata_codec::TailChunk;

use super::body::HeadChunk;
use super::freeze::Seen;
use super::frozen::{write_runs, FrozenRun, Runs};
use crate::head::runs::{RunFile, MAX_RUN_BYTES, MAX_RUN_SAMPLES};

/// A close begun under the series' lock (see [`HeadChunk::close_start`]):
/// the tail's bytes, to be written as they are.
pub(crate) struct Closing {
    first_t: i64,
    last_t: i64,
    seen: Seen,
}

impl Closing {
    /// Writes the tail's bytes (`bytes`, from [`HeadChunk::close_start`])
    /// to `file` as a run in the tail's format. Takes no lock.
    pub(crate) fn write(&self, file: &Arc<RunFile>, bytes: &[u8]) -> Option<Runs> {
        let at = file.write_tail(bytes, self.seen.tail_len)?;
        Some(smallvec::smallvec![FrozenRun {
            first_t: self.first_t,
            last_t: self.last_t,
            file: Arc::clone(file),
            at,
        }])
    }
}

/// A merge begun under the series' lock (see [`HeadChunk::merge_start`]):
/// the runs to merge into one in the sealed format.
pub(crate) struct Merging {
    runs: Runs,
    seen: Seen,
}

impl Merging {
    /// Reads the runs and writes their samples to `file` as runs in the
    /// sealed format; `ts`/`vs` are scratch. Takes no lock.
    pub(crate) fn write(
        &self,
        file: &Arc<RunFile>,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Option<Runs> {
        ts.clear();
        vs.clear();
        for run in &self.runs {
            run.decode_range_into(i64::MIN, i64::MAX, ts, vs).ok()?;
        }
        write_runs(file, ts, vs)
    }
}

impl HeadChunk {
    /// The first step of closing a chunk that takes no more samples in
    /// order, the cheap way: its tail's bytes copied into `bytes`, to be
    /// written as they are ([`Closing::write`]) and put in as a run
    /// ([`Self::close_finish`]), without the decoding and encoding of a
    /// freeze. `None` if the chunk has no frozen run (a chunk of a few
    /// samples would grow by a box) or an empty tail, or if the tail is too
    /// long for a run. [`Self::merge_start`] later makes the runs one.
    pub(crate) fn close_start(&self, bytes: &mut Vec<u8>) -> Option<Closing> {
        if !self.would_freeze_ended() {
            return None;
        }
        let tail = self.tail();
        if tail.bytes().len() > MAX_RUN_BYTES || tail.len() > MAX_RUN_SAMPLES {
            return None;
        }
        bytes.clear();
        bytes.extend_from_slice(tail.bytes());
        Some(Closing {
            first_t: tail.first_t()?,
            last_t: tail.last_t()?,
            seen: self.seen(),
        })
    }

    /// Puts in the run [`Closing::write`] wrote in place of the tail, and
    /// closes the chunk, if it is as [`Self::close_start`] saw it.
    pub(crate) fn close_finish(&mut self, closing: Closing, runs: Runs) -> bool {
        if self.seen() != closing.seen {
            return false;
        }
        let older = self.older_mut();
        older.frozen.extend(runs);
        older.frozen_len += closing.seen.tail_len;
        *self.tail_mut() = TailChunk::new();
        self.close();
        true
    }

    /// Whether a frozen run is in the tail's format (see
    /// [`Self::close_start`]).
    pub(crate) fn has_tail_run(&self) -> bool {
        self.older().frozen.iter().any(|r| r.at.is_tail())
    }

    /// The first step of merging the frozen runs of a chunk that holds one
    /// in the tail's format (see [`Self::close_start`]) into runs in the
    /// sealed format: its runs, as they are now. `None` if it holds none.
    pub(crate) fn merge_start(&self) -> Option<Merging> {
        if !self.has_tail_run() {
            return None;
        }
        Some(Merging {
            runs: self.older().frozen.clone(),
            seen: self.seen(),
        })
    }

    /// Puts in the runs [`Merging::write`] wrote in place of the chunk's
    /// runs, if it is as [`Self::merge_start`] saw it.
    pub(crate) fn merge_finish(&mut self, merging: Merging, runs: Runs) -> bool {
        if self.seen() != merging.seen {
            return false;
        }
        let older = self.older_mut();
        older.frozen = runs;
        older.frozen.shrink_to_fit();
        true
    }
}
