//! One series in the head: its labels, its chunks per bucket, its extra
//! samples, and what freezing, spilling and sealing take from it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;
use strata_codec::CodecError;

use super::alloc::{fit, room_for_one, with_scratch};
use super::chunk::{HeadChunk, Spill};
use super::extra::{ExtraRun, Extras, Taken};
use super::labels::SeriesLabels;
use super::runs::{BucketFiles, RunFile};

/// [`MemSeries::keys_written_ms`] of a series whose `S` and `H`
/// keys the head has not written (or does not know to be written).
pub(crate) const NOT_WRITTEN: i64 = i64::MIN;

/// One series held in the head.
pub struct MemSeries {
    pub id: u64,
    pub labels: SeriesLabels,
    /// Whether a log record carrying the labels has been written; the
    /// first record that carries a sample of the series must carry its
    /// labels too.
    pub(crate) logged: AtomicBool,
    /// Taken out of the head's index (see [`Head::mark_sealed`]): whoever
    /// still holds the series must not append to it, but
    /// [revive](Head::revive) it first. Set and read under the `state`
    /// lock (an atomic beside `logged` rather than a field of the state,
    /// where it would move a series into the allocator's next size class).
    pub(crate) dropped: AtomicBool,
    /// Wall-clock second the `S` and `H` keys were last written, plus one
    /// (see `series_index::written`), so the sealer can refresh them before
    /// they expire; 0 until the first of the series' data is written to the
    /// store with them. Seconds in 32 bits, beside the flags: 8 bytes less
    /// put a series (with its `Arc`'s counts) in the allocator's 112-byte
    /// class instead of 128. Read through [`MemSeries::keys_written_ms`].
    series_key_written: AtomicU32,
    pub(crate) state: Mutex<SeriesState>,
    /// Active series of this series' tenant: counted while the series has
    /// an open chunk (samples in a bucket not yet sealed).
    pub(super) active: Arc<AtomicUsize>,
}

/// The mutable part of a series: its open chunks, oldest bucket first, and
/// the samples kept beside them.
pub(crate) struct SeriesState {
    pub(crate) chunks: Vec<(i64, HeadChunk)>,
    /// Out-of-order samples of open buckets and late samples of sealed
    /// ones (see `extra.rs`).
    pub(crate) extras: Extras,
    pub(crate) last_t: i64,
    pub(crate) last_v_bits: u64,
}

/// `min` raised by up to half again, by a fixed share per series. Series
/// created together (a target's, scraped together) would otherwise reach a
/// sample count at the same moment, and the background pass would freeze
/// or spill all of them in one burst of CPU, writes and freed memory every
/// few minutes; staggered, it handles a steady share of them each time.
/// Fibonacci hashing of the id spreads consecutive ids evenly over the
/// range.
pub(crate) fn staggered(min: u32, id: u64) -> u32 {
    let share = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54; // 0..1024
    let extra = (u64::from(min / 2) * share) >> 10;
    min.saturating_add(u32::try_from(extra).unwrap_or(u32::MAX))
}

/// [`MemSeries::series_key_written`] of a time in ms ([`NOT_WRITTEN`]: 0).
pub(super) fn written_secs(ms: i64) -> u32 {
    if ms == NOT_WRITTEN {
        return 0;
    }
    u32::try_from(ms.div_euclid(1000).saturating_add(1).max(1)).unwrap_or(u32::MAX)
}

impl MemSeries {
    /// When the `S` and `H` keys were last written (to the second, rounded
    /// down), or [`NOT_WRITTEN`].
    pub(crate) fn keys_written_ms(&self) -> i64 {
        match self.series_key_written.load(Ordering::Relaxed) {
            0 => NOT_WRITTEN,
            s => (i64::from(s) - 1) * 1000,
        }
    }

    /// Notes that the `S` and `H` keys were written at `now_ms`.
    pub(crate) fn note_keys_written(&self, now_ms: i64) {
        self.series_key_written
            .fetch_max(written_secs(now_ms), Ordering::Relaxed);
    }

    pub(super) fn new(
        id: u64,
        labels: SeriesLabels,
        logged: bool,
        written_ms: i64,
        active: Arc<AtomicUsize>,
    ) -> Self {
        Self {
            id,
            labels,
            logged: AtomicBool::new(logged),
            dropped: AtomicBool::new(false),
            series_key_written: AtomicU32::new(written_secs(written_ms)),
            active,
            state: Mutex::new(SeriesState {
                chunks: Vec::new(),
                extras: Extras::default(),
                last_t: i64::MIN,
                last_v_bits: 0,
            }),
        }
    }

    /// Whether the series holds no samples of a bucket after `bucket`:
    /// once what it holds up to `bucket` is written, the head may drop it.
    pub(crate) fn holds_none_after(&self, bucket: i64) -> bool {
        let st = self.state.lock();
        st.chunks.iter().all(|(b, _)| *b <= bucket)
            && st.extras.iter().all(|r| r.bucket <= bucket)
            && st.extras.hists().iter().all(|h| h.bucket <= bucket)
    }

    /// The seal of `bucket`: appends this series' samples of the bucket
    /// held in memory to `ts`/`vs`, in order, and returns the segments
    /// already spilled to the store; `None` if the series has no samples
    /// in `bucket`. Its extra samples are taken for the seal: merged into
    /// `ts`/`vs`, or, after spilled segments (which they may fall
    /// between), returned apart to be written as a late segment.
    pub(crate) fn seal_samples(
        &self,
        bucket: i64,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<Option<SealSamples>, CodecError> {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let mut spilled = Vec::new();
        let chunk = st.chunks.iter().find(|(b, _)| *b == bucket);
        if let Some((_, c)) = chunk {
            c.decode_into(ts, vs)?;
            spilled = c.spilled_segments().to_vec();
        }
        let mut extras = false;
        for r in st.extras.iter_mut().filter(|r| r.bucket == bucket) {
            if r.taken != Taken::Late {
                r.taken = Taken::Seal;
                extras = true;
            }
        }
        if chunk.is_none() && !extras {
            return Ok(None);
        }
        let late = super::extra::merged(
            st.extras
                .iter()
                .filter(|r| r.bucket == bucket && r.taken == Taken::Seal),
            i64::MIN,
            i64::MAX,
        );
        if spilled.is_empty() && !late.0.is_empty() {
            let (t, v) =
                strata_codec::merge::merge_newer((std::mem::take(ts), std::mem::take(vs)), late);
            *ts = t;
            *vs = v;
            return Ok(Some(SealSamples {
                spilled,
                late: (Vec::new(), Vec::new()),
            }));
        }
        Ok(Some(SealSamples { spilled, late }))
    }

    /// The late pass: takes this series' extra samples of buckets up to
    /// `sealed_through` that no seal holds, merged per bucket. They stay
    /// readable until [`Self::late_written`].
    pub(crate) fn take_late(&self, sealed_through: i64) -> Vec<(i64, Vec<i64>, Vec<f64>)> {
        let mut st = self.state.lock();
        let mut buckets: Vec<i64> = Vec::new();
        for r in st.extras.iter_mut() {
            if r.bucket <= sealed_through && r.taken != Taken::Seal {
                r.taken = Taken::Late;
                if !buckets.contains(&r.bucket) {
                    buckets.push(r.bucket);
                }
            }
        }
        buckets.sort_unstable();
        buckets
            .into_iter()
            .map(|b| {
                let (ts, vs) = super::extra::merged(
                    st.extras
                        .iter()
                        .filter(|r| r.bucket == b && r.taken == Taken::Late),
                    i64::MIN,
                    i64::MAX,
                );
                (b, ts, vs)
            })
            .collect()
    }

    /// Drops the extra samples [`Self::take_late`] took, now written;
    /// returns how many.
    pub(crate) fn late_written(&self) -> usize {
        let mut st = self.state.lock();
        let before: usize = st.extras.iter().map(ExtraRun::len).sum();
        st.extras.retain(|r| r.taken != Taken::Late);
        before - st.extras.iter().map(ExtraRun::len).sum::<usize>()
    }

    /// Whether the series holds extra samples of buckets up to `bucket`
    /// that no seal holds.
    pub(crate) fn has_late(&self, bucket: i64) -> bool {
        self.state
            .lock()
            .extras
            .iter()
            .any(|r| r.bucket <= bucket && r.taken != Taken::Seal)
    }

    /// Segments of this series' chunks after bucket `after` to spill: those
    /// whose frozen runs hold at least `min_samples` samples
    /// ([staggered](staggered) for this series).
    pub(crate) fn take_spills(
        &self,
        after: i64,
        min_samples: u32,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Vec<(i64, Spill)> {
        let min_samples = staggered(min_samples, self.id);
        let st = self.state.lock();
        st.chunks
            .iter()
            .filter(|(b, _)| *b > after)
            .filter_map(|(b, c)| Some((*b, c.take_spill(min_samples, ts, vs)?)))
            .collect()
    }

    /// Drops what `spill` holds from the chunk of `bucket`, now that the
    /// segment is in the store.
    pub(crate) fn spilled(&self, bucket: i64, spill: &Spill) {
        let mut st = self.state.lock();
        if let Some((_, c)) = st.chunks.iter_mut().find(|(b, _)| *b == bucket) {
            c.spilled(spill);
        }
    }

    /// Recovery: the series' segments of `bucket` found in the store. The
    /// replay that follows skips the samples they hold (see
    /// `AppendPolicy::replay`), each standing for the series' last sample
    /// as it did when first written; then [`Self::raise_last`] makes sure
    /// the last spilled one does.
    pub(crate) fn restore_spilled(&self, bucket: i64, segments: Vec<(i64, i64)>, samples: u32) {
        if segments.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        if st.chunks.iter().any(|(b, _)| *b == bucket) {
            return;
        }
        if !st.has_data() {
            self.active.fetch_add(1, Ordering::Relaxed);
        }
        let at = st.chunks.partition_point(|(b, _)| *b < bucket);
        room_for_one(&mut st.chunks);
        st.chunks
            .insert(at, (bucket, HeadChunk::with_spilled(segments, samples)));
    }

    /// Recovery, after the replay: `(t, v)` is the series' last sample if
    /// it has none newer.
    pub(crate) fn raise_last(&self, t: i64, v: f64) {
        let mut st = self.state.lock();
        if t > st.last_t {
            st.last_t = t;
            st.last_v_bits = v.to_bits();
        }
    }

    /// Freezes the tails of this series' chunks holding at least
    /// `min_samples` samples ([staggered](staggered) for this series);
    /// returns how many it froze.
    pub(super) fn freeze(
        &self,
        min_samples: u32,
        files: &mut BucketFiles<'_>,
        scratch: &mut Scratch,
    ) -> usize {
        let min_samples = staggered(min_samples, self.id);
        let due: SmallVec<[i64; 2]> = self
            .state
            .lock()
            .chunks
            .iter()
            .filter(|(_, c)| c.would_freeze(min_samples))
            .map(|(b, _)| *b)
            .collect();
        due.into_iter()
            .map(|b| usize::from(self.freeze_chunk(b, min_samples, false, files, scratch)))
            .sum()
    }

    /// Freezes the whole tail of each chunk that takes no more samples in
    /// order, and closes it: a chunk of a bucket before `open`, which has
    /// ended, or before the series' newest chunk, whose samples are later
    /// than all of its. Such a chunk waits for its seal in the compact
    /// format; the stragglers of its last scrape open it again. Returns
    /// how many it froze.
    pub(super) fn freeze_ended(
        &self,
        open: i64,
        files: &mut BucketFiles<'_>,
        scratch: &mut Scratch,
    ) -> usize {
        let due = self.ended_due(open);
        due.into_iter()
            .map(|b| usize::from(self.freeze_chunk(b, 1, true, files, scratch)))
            .sum()
    }

    /// The buckets of the chunks that take no more samples in order
    /// (`open` as in [`Self::freeze_ended`]) and have a tail to freeze;
    /// those without are closed here.
    fn ended_due(&self, open: i64) -> SmallVec<[i64; 2]> {
        let mut due = SmallVec::new();
        let mut st = self.state.lock();
        let before = st.chunks.last().map_or(open, |(b, _)| open.max(*b));
        for (b, c) in st.chunks.iter_mut().take_while(|(b, _)| *b < before) {
            if c.would_freeze_ended() {
                due.push(*b);
            } else {
                c.close();
            }
        }
        due
    }

    /// [`Self::freeze_ended`] the cheap way, for the series that have
    /// moved into a later bucket (`open` as there): each such chunk's tail
    /// is written to the bucket's run file as it is (see
    /// [`HeadChunk::close_start`]) and the chunk closed, with no decoding
    /// or encoding; [`Self::merge_closed`] later merges its runs. Returns
    /// how many it closed so.
    pub(super) fn close_ended(
        &self,
        open: i64,
        files: &mut BucketFiles<'_>,
        bytes: &mut Vec<u8>,
    ) -> usize {
        let mut ctx = (files, bytes);
        self.ended_due(open)
            .into_iter()
            .map(|bucket| {
                let done = self.in_steps(
                    bucket,
                    &mut ctx,
                    |c, (_, bytes)| c.close_start(bytes),
                    |closing, (files, bytes)| closing.write(&files.get(bucket), bytes),
                    |c, closing, runs| c.close_finish(closing, runs),
                );
                usize::from(done)
            })
            .sum()
    }

    /// Closes the chunk of `bucket` the cheap way (see
    /// [`Self::close_ended`]), its tail written to `file` under the lock:
    /// the writer calls it as an append opens a later bucket's chunk.
    /// Returns whether it closed it.
    pub(super) fn close_ended_now(&self, bucket: i64, file: &Arc<RunFile>) -> bool {
        let mut st = self.state.lock();
        let Some((_, c)) = st.chunks.iter_mut().find(|(b, _)| *b == bucket) else {
            return false;
        };
        with_scratch(|bytes| {
            let Some(closing) = c.close_start(bytes) else {
                return false;
            };
            closing
                .write(file, bytes)
                .is_some_and(|runs| c.close_finish(closing, runs))
        })
    }

    /// Merges the runs of each chunk that holds one in the tail's format
    /// (written by [`Self::close_ended`]) into runs in the sealed format,
    /// about a third of the bytes, in one run rather than two. Returns how
    /// many chunks it merged.
    pub(super) fn merge_closed(&self, files: &mut BucketFiles<'_>, scratch: &mut Scratch) -> usize {
        let due: SmallVec<[i64; 2]> = self
            .state
            .lock()
            .chunks
            .iter()
            .filter(|(_, c)| c.has_tail_run())
            .map(|(b, _)| *b)
            .collect();
        let mut ctx = (files, scratch);
        due.into_iter()
            .map(|bucket| {
                let done = self.in_steps(
                    bucket,
                    &mut ctx,
                    |c, _| c.merge_start(),
                    |merging, (files, scratch)| {
                        merging.write(&files.get(bucket), &mut scratch.ts, &mut scratch.vs)
                    },
                    |c, merging, runs| c.merge_finish(merging, runs),
                );
                usize::from(done)
            })
            .sum()
    }

    /// Work on the chunk of `bucket` in three steps, the series' lock held
    /// for the first and the last only: `start` reads the chunk, `write`
    /// writes runs outside the lock (this runs at low priority, and a
    /// write waiting for the lock would wait for its turn on a core too),
    /// `finish` puts them in if the chunk is still there. Returns what
    /// `finish` did; false if a step had nothing to do.
    fn in_steps<X, S, R>(
        &self,
        bucket: i64,
        ctx: &mut X,
        start: impl FnOnce(&HeadChunk, &mut X) -> Option<S>,
        write: impl FnOnce(&S, &mut X) -> Option<R>,
        finish: impl FnOnce(&mut HeadChunk, S, R) -> bool,
    ) -> bool {
        let started = {
            let st = self.state.lock();
            st.chunks
                .iter()
                .find(|(b, _)| *b == bucket)
                .and_then(|(_, c)| start(c, ctx))
        };
        let Some(started) = started else {
            return false;
        };
        let Some(written) = write(&started, ctx) else {
            return false;
        };
        let mut st = self.state.lock();
        st.chunks
            .iter_mut()
            .find(|(b, _)| *b == bucket)
            .is_some_and(|(_, c)| finish(c, started, written))
    }

    /// Freezes the tail of the chunk of `bucket` if it holds at least
    /// `min_samples` samples, and closes the chunk if `close`. The series'
    /// lock is held only to read the tail and to put the runs in, not
    /// while they are encoded and written: this runs on a thread of low
    /// priority, which a write waiting for the lock would wait for too.
    fn freeze_chunk(
        &self,
        bucket: i64,
        min_samples: u32,
        close: bool,
        files: &mut BucketFiles<'_>,
        scratch: &mut Scratch,
    ) -> bool {
        let Scratch {
            ts,
            vs,
            tail_ts,
            tail_vs,
        } = scratch;
        let freezing = {
            let st = self.state.lock();
            let Some((_, c)) = st.chunks.iter().find(|(b, _)| *b == bucket) else {
                return false;
            };
            c.freeze_start(min_samples, tail_ts, tail_vs)
        };
        if freezing.is_none() && !close {
            return false;
        }
        let runs = freezing
            .as_ref()
            .and_then(|f| f.write(&files.get(bucket), tail_ts, tail_vs, ts, vs));
        let mut st = self.state.lock();
        let Some((_, c)) = st.chunks.iter_mut().find(|(b, _)| *b == bucket) else {
            return false;
        };
        let froze = match (freezing, runs) {
            (Some(f), Some(runs)) => c.freeze_finish(f, runs),
            _ => false,
        };
        if close {
            c.close();
        }
        froze
    }

    /// Frees the chunks of every bucket up to `bucket`, and the extra
    /// samples their seal took; the series stops counting as active when
    /// no chunk is left. Returns the extra samples freed.
    pub(crate) fn drop_through(&self, bucket: i64) -> usize {
        let mut st = self.state.lock();
        let had = st.has_data();
        st.chunks.retain(|(b, _)| *b > bucket);
        fit(&mut st.chunks);
        st.drop_hists_through(bucket);
        if had && !st.has_data() {
            self.active.fetch_sub(1, Ordering::Relaxed);
        }
        let mut freed = 0;
        if !st.extras.is_empty() {
            st.extras.retain(|r| {
                let sealed = r.bucket <= bucket && r.taken == Taken::Seal;
                if sealed {
                    freed += r.len();
                }
                !sealed
            });
        }
        freed
    }

    /// Drops the chunk of `bucket`, which its seal has written to the
    /// store, and the extra samples the seal took with it (see
    /// `released.rs`); the series stops counting as active when no chunk
    /// is left. Returns the extra samples freed.
    pub(super) fn release(&self, bucket: i64) -> usize {
        let mut st = self.state.lock();
        let had = st.has_data();
        st.chunks.retain(|(b, _)| *b != bucket);
        fit(&mut st.chunks);
        if had && !st.has_data() {
            self.active.fetch_sub(1, Ordering::Relaxed);
        }
        let mut freed = 0;
        st.extras.retain(|r| {
            let sealed = r.bucket == bucket && r.taken == Taken::Seal;
            if sealed {
                freed += r.len();
            }
            !sealed
        });
        freed
    }

    /// Whether the series has samples in a bucket not yet sealed.
    pub fn is_active(&self) -> bool {
        self.state.lock().has_data()
    }

    /// Whether the head holds nothing of the series but its labels: no
    /// chunk, no extra sample.
    pub(super) fn is_idle(&self) -> bool {
        let st = self.state.lock();
        st.chunks.is_empty() && st.extras.is_empty() && st.extras.hists().is_empty()
    }
}

/// Scratch buffers of a freezing pass: the samples of the runs written,
/// and of the tail being frozen.
#[derive(Default)]
pub(super) struct Scratch {
    ts: Vec<i64>,
    vs: Vec<f64>,
    tail_ts: Vec<i64>,
    tail_vs: Vec<f64>,
}

/// What the seal of a bucket takes from one series (see
/// [`MemSeries::seal_samples`]).
pub(crate) struct SealSamples {
    /// Time ranges of the segments spilled to the store, oldest first.
    pub spilled: Vec<(i64, i64)>,
    /// Extra samples to write as a late segment (only beside spilled
    /// segments; otherwise they are merged into the chunk).
    pub late: (Vec<i64>, Vec<f64>),
}

impl SeriesState {
    /// Whether the series holds anything in the head for an unsealed
    /// bucket: a float chunk or histograms.
    pub(super) fn has_data(&self) -> bool {
        !self.chunks.is_empty() || !self.extras.hists().is_empty()
    }

    /// Drops the histograms of every bucket up to `bucket`.
    fn drop_hists_through(&mut self, bucket: i64) {
        if self.extras.hists().iter().any(|b| b.bucket <= bucket) {
            self.extras
                .with_hists(|hists| hists.retain(|b| b.bucket > bucket));
        }
    }
}
