//! One series' samples of one bucket in the head: the older ones frozen in
//! the compact sealed format, the newest in an appendable tail chunk
//! (`strata_codec::TailChunk`: Gorilla's timestamps, values as the change
//! of their decimal mantissa).
//!
//! The tail only has to be appendable; on node_exporter data it takes two
//! to three times the bytes of the sealed format (1.67 bytes a sample on
//! captured pages, against 0.60; Gorilla's XOR took 2.01). A bucket is
//! an hour by default, so the head would otherwise grow by the tail's size
//! for the whole hour. [`HeadChunk::freeze`] (run by a background pass at
//! low priority) moves a long enough tail into the frozen run, and the head
//! grows by the sealed format's size instead.
//!
//! Each freeze re-encodes the frozen run with the tail as one run, up to
//! [`RUN_MAX_SAMPLES`]: one allocation and one header per chunk rather
//! than a part per freeze, each with its own entry and header (about 100
//! bytes a part, which cancelled the gain of freezing early). The first
//! run is kept inline; only a chunk that grows past a run (a reader's, or a
//! writer's with spilling off) holds more.
//!
//! A writer's head goes one step further: once a chunk's frozen runs hold
//! enough samples, [`HeadChunk::take_spill`] takes them as one segment in
//! the sealed format (the run's own bytes when there is one), the spill
//! pass writes it to the store (a segment key, see `keys::segment_key`),
//! and [`HeadChunk::spilled`] drops what it held, keeping only the
//! segment's time range. The head then holds at most a segment's worth of
//! samples per series, whatever the bucket's width, and the seal writes
//! only what is left.
//!
//! Once it takes no more samples in order (its bucket has ended, or its
//! series has samples of a later one), a chunk's tail is frozen too
//! (`Head::freeze_ended`) and the chunk closed: what its box held moves
//! into the bytes the tail took, and the box goes. A series holds the
//! ended bucket's chunk beside the open one's until the seal writes it,
//! and at a million series the boxes were 64 MiB of that.
//!
//! The head freezes a tail in three steps ([`HeadChunk::freeze_start`],
//! [`Freezing::write`], [`HeadChunk::freeze_finish`]) so that the series'
//! lock is not held while runs are read, encoded and written: the freezer
//! runs at low priority, and a write waiting for a lock it holds would
//! wait for its turn on a core too.

use std::sync::Arc;

use smallvec::SmallVec;
use strata_codec::chunk::tail::{decode_tail_range_into, decode_tail_range_to_slices};
use strata_codec::sealed::decode_sealed_range_into;
use strata_codec::{encode_sealed, CodecError, TailChunk};

use super::runs::{RunAt, RunFile};

/// Samples a tail needs before it is frozen (staggered per series by the
/// caller). Half of Prometheus' chunk size: the tail costs two to three times
/// the frozen run's bytes a sample, and merging into one run keeps the
/// sealed format's header paid once, however often a chunk freezes.
pub const FREEZE_MIN_SAMPLES: u32 = 60;

/// Samples a frozen run takes before the next freeze starts a new one:
/// each freeze re-encodes the run it merges into, so this bounds that
/// work (a few times a sample's encoding at most) on a head that does not
/// spill. Above the spill threshold's staggered range (480 to 720) so a
/// writer's chunk holds one run.
pub(crate) const RUN_MAX_SAMPLES: u32 = 1024;
const _: () = assert!(RUN_MAX_SAMPLES <= super::runs::MAX_RUN_SAMPLES);

/// Samples frozen in the sealed format, with their time range, kept in
/// the bucket's run file (see `runs.rs`), not the heap.
#[derive(Clone)]
pub(crate) struct FrozenRun {
    first_t: i64,
    last_t: i64,
    file: Arc<RunFile>,
    at: RunAt,
}

impl FrozenRun {
    /// Samples in the run.
    fn len(&self) -> u32 {
        self.at.samples()
    }

    /// Appends the run's samples in `[mint, maxt]` to `ts`/`vs`.
    fn decode_range_into(
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

/// `ts`/`vs` in the sealed format, written to `file` as runs of at most
/// [`RUN_MAX_SAMPLES`] samples each; `None` if one cannot be written.
fn write_runs(file: &Arc<RunFile>, ts: &[i64], vs: &[f64]) -> Option<Runs> {
    let per = RUN_MAX_SAMPLES as usize;
    let mut runs = SmallVec::new();
    for (t, v) in ts.chunks(per).zip(vs.chunks(per)) {
        let (&first_t, &last_t) = (t.first()?, t.last()?);
        let samples = u32::try_from(t.len()).ok()?;
        let at = super::alloc::with_scratch(|buf| {
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

/// A segment made of a chunk's frozen runs, to be written to the store
/// before [`HeadChunk::spilled`] drops them.
pub(crate) struct Spill {
    pub first_t: i64,
    pub last_t: i64,
    pub bytes: Vec<u8>,
    samples: u32,
}

pub(crate) struct HeadChunk(Body);

/// Frozen runs written for a chunk, not yet in it.
pub(crate) type Runs = SmallVec<[FrozenRun; 1]>;

/// A freeze begun under the series' lock (see [`HeadChunk::freeze_start`]).
pub(crate) struct Freezing {
    /// The chunk's last run, which the tail is merged into.
    into: Option<FrozenRun>,
    /// The chunk as it was.
    seen: Seen,
}

/// What a freeze outside the lock must find unchanged.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Seen {
    tail_len: u32,
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

enum Body {
    /// A chunk that takes samples.
    Open {
        /// The newest samples, after every frozen one.
        tail: TailChunk,
        /// Frozen runs and spilled segments, once the chunk has any: most
        /// open chunks are younger than a freeze, and kept inline these made
        /// every series' chunk entry 144 bytes instead of 96.
        older: Option<Box<Older>>,
    },
    /// An ended bucket's chunk with its tail frozen (see
    /// `Head::freeze_ended`): what the box held, kept in the bytes
    /// the tail took. An ended bucket's chunks wait for their seal beside
    /// the open bucket's; without the box, each waits in its 80-byte entry
    /// alone (64 bytes less a series at the seal). A sample appended to it
    /// opens it again.
    Closed(Older),
}

impl Default for HeadChunk {
    fn default() -> Self {
        Self(Body::Open {
            tail: TailChunk::new(),
            older: None,
        })
    }
}

/// What a chunk holds before its tail.
struct Older {
    /// Time ranges of the segments written to the store, oldest first, all
    /// before every sample still held.
    /// A boxed slice, not a `Vec`: a spill, which adds one, comes every
    /// few hundred samples, and 8 bytes less keep this box in the
    /// allocator's 64-byte class.
    spilled: Box<[(i64, i64)]>,
    /// Samples in the spilled segments.
    spilled_len: u32,
    /// Samples in the frozen runs.
    frozen_len: u32,
    /// Older samples, oldest run first, each after the one before; the
    /// first inline.
    frozen: SmallVec<[FrozenRun; 1]>,
}

impl Default for Older {
    fn default() -> Self {
        Self {
            spilled: Box::default(),
            spilled_len: 0,
            frozen_len: 0,
            frozen: SmallVec::new(),
        }
    }
}

/// What a chunk without a box holds before its tail: nothing.
static NO_OLDER: std::sync::LazyLock<Older> = std::sync::LazyLock::new(Older::default);

/// A closed chunk's tail: empty.
static NO_TAIL: std::sync::LazyLock<TailChunk> = std::sync::LazyLock::new(TailChunk::new);

impl HeadChunk {
    fn older(&self) -> &Older {
        match &self.0 {
            Body::Open { older, .. } => older.as_deref().unwrap_or(&NO_OLDER),
            Body::Closed(older) => older,
        }
    }

    fn older_mut(&mut self) -> &mut Older {
        match &mut self.0 {
            Body::Open { older, .. } => older.get_or_insert_with(Box::default),
            Body::Closed(older) => older,
        }
    }

    fn tail(&self) -> &TailChunk {
        match &self.0 {
            Body::Open { tail, .. } => tail,
            Body::Closed(_) => &NO_TAIL,
        }
    }

    /// The tail, the chunk opened again if it was closed.
    fn tail_mut(&mut self) -> &mut TailChunk {
        if let Body::Closed(older) = &mut self.0 {
            let older = Box::new(std::mem::take(older));
            self.0 = Body::Open {
                tail: TailChunk::new(),
                older: Some(older),
            };
        }
        match &mut self.0 {
            Body::Open { tail, .. } => tail,
            Body::Closed(_) => unreachable!("opened above"),
        }
    }

    /// Whether the chunk is closed (see [`Body::Closed`]).
    #[cfg(test)]
    fn is_closed(&self) -> bool {
        matches!(self.0, Body::Closed(_))
    }

    /// Closes the chunk if its tail is empty and it holds something older:
    /// its box goes, what it held kept inline.
    pub(crate) fn close(&mut self) {
        if let Body::Open { tail, older } = &mut self.0 {
            if tail.is_empty() {
                if let Some(older) = older.take() {
                    self.0 = Body::Closed(*older);
                }
            }
        }
    }

    /// Log replay: whether a sample at `t` that was in order when first
    /// written is one a spilled segment holds (it is not after them).
    pub(crate) fn replayed_spilled(&self, t: i64) -> bool {
        self.older()
            .spilled
            .last()
            .is_some_and(|&(_, last)| t <= last)
    }

    /// Appends a sample later than every sample held.
    pub(crate) fn append(&mut self, t: i64, v: f64) {
        self.tail_mut().append(t, v);
    }

    /// Samples held in memory (not those of spilled segments).
    pub(crate) fn len(&self) -> u32 {
        self.older().frozen_len + self.tail().len()
    }

    /// The first sample's time, spilled segments included.
    pub(crate) fn first_t(&self) -> Option<i64> {
        let older = self.older();
        if let Some(&(first, _)) = older.spilled.first() {
            return Some(first);
        }
        match older.frozen.first() {
            Some(p) => Some(p.first_t),
            None => self.tail().first_t(),
        }
    }

    /// The last sample's time, spilled segments included.
    pub(crate) fn last_t(&self) -> Option<i64> {
        self.tail()
            .last_t()
            .or_else(|| self.older().frozen.last().map(|p| p.last_t))
            .or_else(|| self.older().spilled.last().map(|&(_, last)| last))
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
                spilled: super::alloc::fit_box(spilled),
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

    /// The bucket has ended: moves the whole tail into the frozen runs if
    /// the chunk has frozen runs already (a chunk without them, a few
    /// samples, would grow by their box), then closes the chunk (see
    /// [`Body::Closed`]) if its tail is empty. Returns whether it froze.
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
        if tail.bytes().len() > super::runs::MAX_RUN_BYTES
            || tail.len() > super::runs::MAX_RUN_SAMPLES
        {
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

    /// What the chunk is now, to compare with a [`Freezing`]'s.
    fn seen(&self) -> Seen {
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

    /// Heap bytes held, for head-memory accounting.
    pub(crate) fn heap_bytes(&self) -> usize {
        let outside = |o: &Older| {
            o.spilled.len() * std::mem::size_of::<(i64, i64)>()
                + if o.frozen.spilled() {
                    o.frozen.capacity() * std::mem::size_of::<FrozenRun>()
                } else {
                    0
                }
        };
        match &self.0 {
            Body::Open { tail, older } => {
                older
                    .as_deref()
                    .map_or(0, |o| std::mem::size_of::<Older>() + outside(o))
                    + tail.heap_bytes()
            }
            Body::Closed(older) => outside(older),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_chunk_entry_stays_small() {
        // A series' chunk list holds `(bucket, HeadChunk)`: 80 bytes, the
        // allocator's class below 96 (144 with the older parts inline, 96
        // with the tail's count and first timestamp kept beside its bytes).
        assert!(std::mem::size_of::<(i64, HeadChunk)>() <= 80);
        assert!(
            std::mem::size_of::<Older>() <= 64,
            "the box in the 64-byte class"
        );
        let mut c = HeadChunk::default();
        c.append(1, 1.0);
        assert!(
            matches!(c.0, Body::Open { older: None, .. }),
            "a young chunk has nothing boxed"
        );
    }

    fn samples(n: i64) -> Vec<(i64, f64)> {
        (0..n)
            .map(|i| (1_000 + i * 15_000 + i % 3, (i as f64 * 0.37).sin() * 100.0))
            .collect()
    }

    fn all(c: &HeadChunk, mint: i64, maxt: i64) -> Vec<(i64, u64)> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        c.decode_range_into(mint, maxt, &mut ts, &mut vs).unwrap();
        ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
    }

    #[test]
    fn frozen_parts_read_like_the_tail() {
        let data = samples(1000);
        let mut plain = HeadChunk::default();
        let mut frozen = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        for (i, &(t, v)) in data.iter().enumerate() {
            plain.append(t, v);
            frozen.append(t, v);
            if i % 97 == 0 {
                frozen.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs);
            }
        }
        // Ten freezes, one run: each merged into the one before.
        assert_eq!(frozen.older().frozen.len(), 1);
        assert!(!frozen.older().frozen.spilled(), "the one run is inline");
        assert_eq!(frozen.len(), 1000);
        assert_eq!(frozen.first_t(), plain.first_t());
        assert_eq!(frozen.last_t(), plain.last_t());
        assert!(frozen.heap_bytes() < plain.heap_bytes());
        for (mint, maxt) in [
            (i64::MIN, i64::MAX),
            (0, 0),
            (1_000, 1_000),
            (2_000_000, 9_000_000),
            (14_985_000, 15_000_000),
        ] {
            assert_eq!(
                all(&frozen, mint, maxt),
                all(&plain, mint, maxt),
                "{mint}..{maxt}"
            );
        }
        // Everything frozen, tail empty: still readable, still appendable.
        assert!(frozen.freeze(1, &f, &mut ts, &mut vs));
        assert_eq!(frozen.last_t(), plain.last_t());
        frozen.append(20_000_000, 1.0);
        plain.append(20_000_000, 1.0);
        assert_eq!(
            all(&frozen, i64::MIN, i64::MAX),
            all(&plain, i64::MIN, i64::MAX)
        );
    }

    #[test]
    fn a_tail_closed_as_it_is_reads_the_same_and_merges_into_one_run() {
        let data = samples(300);
        let mut plain = HeadChunk::default();
        let mut c = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        for (i, &(t, v)) in data.iter().enumerate() {
            plain.append(t, v);
            c.append(t, v);
            if i == 199 {
                assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
            }
        }
        // No frozen run yet: nothing to close the cheap way.
        let mut young = HeadChunk::default();
        young.append(1, 1.0);
        assert!(young.close_start(&mut Vec::new()).is_none());

        let mut bytes = Vec::new();
        let closing = c.close_start(&mut bytes).unwrap();
        let runs = closing.write(&f, &bytes).unwrap();
        assert!(c.close_finish(closing, runs));
        assert!(c.is_closed());
        assert!(c.has_tail_run());
        assert_eq!(c.older().frozen.len(), 2);
        assert_eq!(c.len(), 300);
        assert_eq!(c.first_t(), plain.first_t());
        assert_eq!(c.last_t(), plain.last_t());
        for (mint, maxt) in [
            (i64::MIN, i64::MAX),
            (data[150].0, data[250].0),
            (data[250].0, i64::MAX),
            (data[299].0, data[299].0),
        ] {
            assert_eq!(
                all(&c, mint, maxt),
                all(&plain, mint, maxt),
                "{mint}..{maxt}"
            );
        }
        let mut out = vec![0; 300];
        let mut out_v = vec![0.0; 300];
        assert_eq!(
            c.decode_range_to_slices(i64::MIN, i64::MAX, &mut out, &mut out_v)
                .unwrap(),
            300
        );
        assert_eq!(
            out.iter()
                .zip(&out_v)
                .map(|(t, v)| (*t, v.to_bits()))
                .collect::<Vec<_>>(),
            all(&plain, i64::MIN, i64::MAX)
        );
        // A spill of runs in both formats is one segment in the sealed one.
        let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
        let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
        decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs)
            .unwrap();
        assert_eq!(seg_ts.len(), 300);

        // A merge that finds the chunk changed leaves it as it is.
        let stale = c.merge_start().unwrap();
        let stale_runs = stale.write(&f, &mut ts, &mut vs).unwrap();
        let merging = c.merge_start().unwrap();
        let runs = merging.write(&f, &mut ts, &mut vs).unwrap();
        assert!(c.merge_finish(merging, runs));
        assert!(!c.has_tail_run());
        assert_eq!(c.older().frozen.len(), 1);
        assert!(!c.older().frozen.spilled(), "the one run inline again");
        assert!(!c.merge_finish(stale, stale_runs));
        assert_eq!(all(&c, i64::MIN, i64::MAX), all(&plain, i64::MIN, i64::MAX));
        assert!(c.merge_start().is_none());

        // A straggler opens the chunk again, after both runs.
        c.append(data[299].0 + 1, 5.0);
        plain.append(data[299].0 + 1, 5.0);
        assert_eq!(all(&c, i64::MIN, i64::MAX), all(&plain, i64::MIN, i64::MAX));
    }

    #[test]
    fn a_closing_that_finds_the_chunk_changed_leaves_it() {
        let data = samples(100);
        let mut c = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        for &(t, v) in &data[..99] {
            c.append(t, v);
        }
        assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        c.append(data[99].0, data[99].1);
        let mut bytes = Vec::new();
        let closing = c.close_start(&mut bytes).unwrap();
        let runs = closing.write(&f, &bytes).unwrap();
        c.append(data[99].0 + 1, 1.0);
        assert!(!c.close_finish(closing, runs));
        assert!(!c.is_closed());
        assert_eq!(c.len(), 101);
        assert!(!c.has_tail_run());
    }

    #[test]
    fn spilled_parts_leave_their_range_and_the_rest() {
        let data = samples(1000);
        let mut c = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        for &(t, v) in &data[..600] {
            c.append(t, v);
            c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs);
        }
        assert!(c.take_spill(601, &mut ts, &mut vs).is_none());
        assert!(
            c.take_spill(0, &mut ts, &mut vs).is_none(),
            "0 never spills"
        );
        let spill = c.take_spill(480, &mut ts, &mut vs).unwrap();
        assert_eq!((spill.first_t, spill.samples), (data[0].0, 600));
        // Appends and freezes go on while the segment is being written: the
        // freeze merges newer samples into the run the segment was taken
        // from, and `spilled` keeps them.
        for &(t, v) in &data[600..] {
            c.append(t, v);
        }
        assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        assert_eq!(c.older().frozen.len(), 1);
        c.spilled(&spill);
        assert_eq!(c.spilled_segments(), &[(data[0].0, data[599].0)]);
        assert_eq!(c.spilled_len(), 600);
        assert_eq!(c.len(), 400);
        assert_eq!(c.first_t(), Some(data[0].0));
        assert_eq!(c.last_t(), Some(data[999].0));
        // The segment and what the chunk still holds make up every sample.
        let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
        decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs)
            .unwrap();
        let mut got: Vec<(i64, u64)> = seg_ts
            .into_iter()
            .zip(seg_vs.iter().map(|v| v.to_bits()))
            .collect();
        got.extend(all(&c, i64::MIN, i64::MAX));
        let want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_run_stops_merging_at_its_cap() {
        let data = samples(i64::from(RUN_MAX_SAMPLES) + 300);
        let mut c = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        for (i, &(t, v)) in data.iter().enumerate() {
            c.append(t, v);
            if i % 100 == 99 {
                assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
            }
        }
        let runs: Vec<u32> = c.older().frozen.iter().map(|p| p.len()).collect();
        assert_eq!(runs, [1000, 300], "the eleventh freeze starts a run");
        assert_eq!(c.len(), RUN_MAX_SAMPLES + 300);
        let want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(all(&c, i64::MIN, i64::MAX), want);
        // A spill of two runs is one segment of both.
        let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
        let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
        decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs)
            .unwrap();
        assert_eq!(seg_ts.len(), data.len() - 24);
        c.spilled(&spill);
        assert_eq!((c.len(), c.spilled_len()), (24, RUN_MAX_SAMPLES + 276));
    }

    #[test]
    fn frozen_runs_live_in_the_buckets_file_until_the_chunk_goes() {
        let files = super::super::runs::RunFiles::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let data = samples(300);
        let mut c = HeadChunk::default();
        for &(t, v) in &data {
            c.append(t, v);
        }
        let tail_only = c.heap_bytes();
        assert!(c.freeze(1, &files.file(3), &mut ts, &mut vs));
        let in_file = files.bytes();
        assert!(in_file > 0, "the run is written to the file");
        assert!(
            c.heap_bytes() < tail_only / 2,
            "the heap keeps where the run is, not its bytes: {} of {tail_only}",
            c.heap_bytes()
        );
        // A second freeze merges into the run: a new run in the file, the
        // one it replaces left there.
        c.append(99_000_000, 1.0);
        assert!(c.freeze(1, &files.file(3), &mut ts, &mut vs));
        assert!(files.bytes() > in_file);
        let mut want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        want.push((99_000_000, 1.0f64.to_bits()));
        assert_eq!(all(&c, i64::MIN, i64::MAX), want);
        drop(c);
        assert_eq!(files.bytes(), 0, "the file went with the chunk's runs");
    }

    #[test]
    fn an_ended_chunk_closes_without_its_box() {
        let data = samples(300);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        let mut c = HeadChunk::default();
        for &(t, v) in &data[..200] {
            c.append(t, v);
        }
        assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        for &(t, v) in &data[200..] {
            c.append(t, v);
        }
        let open = all(&c, i64::MIN, i64::MAX);
        let open_heap = c.heap_bytes();
        assert!(c.freeze_ended(&f, &mut ts, &mut vs));
        assert!(c.is_closed(), "tail frozen: closed");
        assert!(
            c.heap_bytes() + std::mem::size_of::<Older>() <= open_heap,
            "the box went: {} of {open_heap}",
            c.heap_bytes()
        );
        assert_eq!(all(&c, i64::MIN, i64::MAX), open);
        assert_eq!(all(&c, data[10].0, data[250].0), open[10..=250].to_vec());
        assert_eq!(
            (c.len(), c.first_t(), c.last_t()),
            (300, Some(data[0].0), Some(data[299].0))
        );
        // A spill and its drop work on the closed chunk in place.
        let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
        c.spilled(&spill);
        assert!(c.is_closed());
        assert_eq!((c.len(), c.spilled_len()), (0, 300));
        assert_eq!(c.spilled_segments(), &[(data[0].0, data[299].0)]);
        // A sample appended opens it again, and every sample still reads.
        let mut d = HeadChunk::default();
        for &(t, v) in &data {
            d.append(t, v);
        }
        d.freeze(1, &f, &mut ts, &mut vs);
        d.close();
        assert!(d.is_closed());
        d.append(99_000_000, 2.5);
        assert!(!d.is_closed());
        let mut want = open.clone();
        want.push((99_000_000, 2.5f64.to_bits()));
        assert_eq!(all(&d, i64::MIN, i64::MAX), want);
        assert_eq!(d.len(), 301);
        // A young chunk (nothing frozen) stays open: it has no box to drop.
        let mut y = HeadChunk::default();
        y.append(1, 1.0);
        y.close();
        assert!(!y.is_closed());
    }

    #[test]
    fn short_tails_stay() {
        let mut c = HeadChunk::default();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        assert!(!c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        for (t, v) in samples(i64::from(FREEZE_MIN_SAMPLES) - 1) {
            c.append(t, v);
        }
        assert!(!c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        assert_eq!(c.len(), FREEZE_MIN_SAMPLES - 1);
    }

    #[test]
    fn a_freeze_outside_the_lock_gives_way_to_a_sample_appended_meanwhile() {
        let f = super::super::runs::test_file();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let (mut tail_ts, mut tail_vs) = (Vec::new(), Vec::new());
        let mut c = HeadChunk::default();
        for i in 0..100 {
            c.append(i * 5_000, (i % 9) as f64);
        }
        assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        for i in 100..130 {
            c.append(i * 5_000, (i % 9) as f64);
        }
        let want = |c: &HeadChunk| {
            let (mut t, mut v) = (Vec::new(), Vec::new());
            c.decode_into(&mut t, &mut v).unwrap();
            (t, v)
        };

        // A sample comes between the start and the finish: the runs
        // written are left unread, the chunk as it is.
        let freezing = c.freeze_start(1, &mut tail_ts, &mut tail_vs).unwrap();
        assert_eq!(tail_ts.len(), 30);
        let runs = freezing
            .write(&f, &tail_ts, &tail_vs, &mut ts, &mut vs)
            .unwrap();
        c.append(130 * 5_000, 1.0);
        let before = want(&c);
        assert!(!c.freeze_finish(freezing, runs));
        assert_eq!(want(&c), before);
        assert_eq!(c.tail().len(), 31);

        // Nothing between: the tail merges into the run.
        let freezing = c.freeze_start(1, &mut tail_ts, &mut tail_vs).unwrap();
        let runs = freezing
            .write(&f, &tail_ts, &tail_vs, &mut ts, &mut vs)
            .unwrap();
        assert!(c.freeze_finish(freezing, runs));
        assert_eq!(c.tail().len(), 0);
        assert_eq!(c.len(), 131);
        assert_eq!(c.older().frozen.len(), 1, "merged into the one run");
        assert_eq!(want(&c), before);
    }
}
