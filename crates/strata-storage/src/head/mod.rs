//! The head: the in-memory delta of every unsealed bucket. Per series and
//! bucket one in-order chunk (a frozen run in the sealed format and a
//! tail chunk), beside it the out-of-order samples, and late samples of
//! sealed buckets until the late pass writes them; a series map keyed by a
//! label-set hash, and in-memory postings for selection.
//!
//! The head holds only series with samples it has not yet written out: a
//! series whose buckets are all sealed is dropped at the seal (as
//! Prometheus' head forgets a series once its chunks are compacted out).
//! Its labels live on in the store (`S` and `H` keys, postings), and for a
//! while in a bounded cache (`recent.rs`); if it comes back it gets its old
//! id from there.
//!
//! Split by operation as Prometheus' head is: `append.rs` adds samples,
//! `read.rs` selects series and reads their samples.

mod append;
mod by_id;
mod chunk;
mod exemplars;
mod extra;
mod hash_filter;
mod hist;
mod ids;
mod labels;
mod read;
mod recent;
mod released;
mod runs;

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use smallvec::SmallVec;
use strata_codec::{CodecError, Label, LabelPairs};

pub use append::{AppendOutcome, AppendPolicy, Rejection};

pub use chunk::FREEZE_MIN_SAMPLES;
pub(crate) use chunk::{HeadChunk, Spill};
pub use exemplars::{ExemplarAdded, ExemplarStore, DEFAULT_MAX_EXEMPLARS};
use extra::{ExtraRun, Extras, Taken};
use hash_filter::HashFilter;
use ids::IdList;
pub use labels::SeriesLabels;
pub use read::HeadRead;
pub(crate) use recent::RecentSeries;
pub(crate) use released::Released;
pub(crate) use runs::BucketFiles;
use runs::{RunFile, RunFiles};

/// No bucket sealed yet.
pub const NONE_SEALED: i64 = i64::MIN;

pub use strata_codec::labels::TENANT_LABEL;

/// The tenant a label set belongs to: its [`TENANT_LABEL`] value, or `""`
/// (the default tenant) without one.
pub fn tenant_of(labels: &(impl LabelPairs + ?Sized)) -> &str {
    labels
        .pairs()
        .find(|(n, _)| *n == TENANT_LABEL)
        .map_or("", |(_, v)| v)
}

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
    active: Arc<AtomicUsize>,
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
fn written_secs(ms: i64) -> u32 {
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

    fn new(
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
        let late = extra::merged(
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
                let (ts, vs) = extra::merged(
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
        if !hist::has_data(&st) {
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
    fn freeze(
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
    fn freeze_ended(&self, open: i64, files: &mut BucketFiles<'_>, scratch: &mut Scratch) -> usize {
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
    fn close_ended(&self, open: i64, files: &mut BucketFiles<'_>, bytes: &mut Vec<u8>) -> usize {
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
    fn close_ended_now(&self, bucket: i64, file: &Arc<RunFile>) -> bool {
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
    fn merge_closed(&self, files: &mut BucketFiles<'_>, scratch: &mut Scratch) -> usize {
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
        let had = hist::has_data(&st);
        st.chunks.retain(|(b, _)| *b > bucket);
        fit(&mut st.chunks);
        hist::drop_through(&mut st, bucket);
        if had && !hist::has_data(&st) {
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
    fn release(&self, bucket: i64) -> usize {
        let mut st = self.state.lock();
        let had = hist::has_data(&st);
        st.chunks.retain(|(b, _)| *b != bucket);
        fit(&mut st.chunks);
        if had && !hist::has_data(&st) {
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
        hist::has_data(&self.state.lock())
    }

    /// Whether the head holds nothing of the series but its labels: no
    /// chunk, no extra sample.
    fn is_idle(&self) -> bool {
        let st = self.state.lock();
        st.chunks.is_empty() && st.extras.is_empty() && st.extras.hists().is_empty()
    }
}

/// Moves `v` into an allocation of exactly its length, if it has more.
///
/// Not `Vec::shrink_to_fit` (nor `into_boxed_slice`, which shrinks): they
/// ask the allocator to shrink the block in place, and mimalloc keeps a
/// block that stays at least half used. A frozen run encoded into a growing
/// buffer and boxed stayed in the 512-byte block it grew to at 300 bytes,
/// and a series' chunk list, shrunk from two entries to one at the seal, in
/// 160 bytes; the head's accounting and the process's allocation count both
/// saw the smaller size, and the rest showed up only in RSS.
pub(crate) fn fit<T>(v: &mut Vec<T>) {
    if v.len() < v.capacity() {
        let mut exact = Vec::with_capacity(v.len());
        exact.append(v);
        *v = exact;
    }
}

/// `v` boxed in an allocation of exactly its length (see [`fit`]).
pub(crate) fn fit_box<T>(mut v: Vec<T>) -> Box<[T]> {
    fit(&mut v);
    v.into_boxed_slice()
}

/// Runs `f` with an empty byte buffer kept per thread (a new one if the
/// thread's is in use): for bytes that are copied or written elsewhere
/// before `f` returns.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|buf| match buf.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            f(&mut buf)
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// Makes room for one more chunk and no more. A series holds one or two
/// (the open bucket, and the one before for the grace); a `Vec` growing by
/// itself would make room for four at its first push, 576 bytes where 144
/// are used, the largest part of a young series' memory.
pub(crate) fn room_for_one(chunks: &mut Vec<(i64, HeadChunk)>) {
    if chunks.len() == chunks.capacity() {
        chunks.reserve_exact(1);
    }
}

/// Scratch buffers of a freezing pass: the samples of the runs written,
/// and of the tail being frozen.
#[derive(Default)]
struct Scratch {
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

/// Hashes a label set; equal sets hash equal, collisions are resolved by
/// comparing the labels.
pub fn labels_hash(labels: &(impl LabelPairs + ?Sized)) -> u64 {
    let mut h = FxHasher::default();
    for (name, value) in labels.pairs() {
        name.hash(&mut h);
        value.hash(&mut h);
    }
    h.finish()
}

#[derive(Default)]
struct SeriesIndex {
    /// The first series with each label hash: one probe and one label
    /// comparison per lookup.
    by_hash: FxHashMap<u64, Arc<MemSeries>>,
    /// Further series whose labels hash like an earlier one's.
    collisions: FxHashMap<u64, Vec<Arc<MemSeries>>>,
    by_id: by_id::ById,
    /// name -> value -> ids, each id list ascending.
    postings: FxHashMap<Box<str>, FxHashMap<Box<str>, IdList>>,
    /// tenant -> its active series.
    active: FxHashMap<Box<str>, Arc<AtomicUsize>>,
}

impl SeriesIndex {
    fn active_counter(&mut self, tenant: &str) -> Arc<AtomicUsize> {
        if let Some(c) = self.active.get(tenant) {
            return Arc::clone(c);
        }
        let c = Arc::new(AtomicUsize::new(0));
        self.active.insert(tenant.into(), Arc::clone(&c));
        c
    }

    fn insert(&mut self, hash: u64, series: Arc<MemSeries>) {
        for (name, value) in series.labels.pairs() {
            // Look up before inserting: `entry` would allocate both keys for
            // every label of every new series, nearly all already there.
            if !self.postings.contains_key(name) {
                self.postings.insert(name.into(), FxHashMap::default());
            }
            let Some(values) = self.postings.get_mut(name) else {
                continue;
            };
            if !values.contains_key(value) {
                values.insert(value.into(), IdList::default());
            }
            if let Some(ids) = values.get_mut(value) {
                ids.push(series.id);
            }
        }
        self.by_id.insert(Arc::clone(&series));
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(series);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collisions.entry(hash).or_default().push(series);
            }
        }
    }

    /// Takes `gone` out of the maps and postings. Each postings list that
    /// names one of them is walked once, however many of its series go.
    fn remove(&mut self, gone: &[Arc<MemSeries>]) {
        let ids: FxHashSet<u64> = gone.iter().map(|s| s.id).collect();
        let mut lists: FxHashSet<(&str, &str)> = FxHashSet::default();
        for s in gone {
            self.by_id.remove(s.id);
            let hash = labels_hash(&s.labels);
            let first = self.by_hash.get(&hash).is_some_and(|f| Arc::ptr_eq(f, s));
            if let Some(others) = self.collisions.get_mut(&hash) {
                others.retain(|o| !Arc::ptr_eq(o, s));
                if first {
                    if let Some(next) = others.pop() {
                        self.by_hash.insert(hash, next);
                    }
                }
                if others.is_empty() {
                    self.collisions.remove(&hash);
                }
            }
            if first && self.by_hash.get(&hash).is_some_and(|f| Arc::ptr_eq(f, s)) {
                self.by_hash.remove(&hash);
            }
            lists.extend(s.labels.pairs());
        }
        for (name, value) in lists {
            let Some(values) = self.postings.get_mut(name) else {
                continue;
            };
            if let Some(list) = values.get_mut(value) {
                list.retain(|id| !ids.contains(&id));
                if list.is_empty() {
                    values.remove(value);
                }
            }
            if values.is_empty() {
                self.postings.remove(name);
            }
        }
    }
}

/// Where a series [`Head::get_or_create_as`] returns came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The head held it.
    Head,
    /// The store knew it (it had been dropped from the head): it keeps its
    /// old id.
    Returned,
    /// New, with a new id.
    New,
}

/// The in-memory delta. Safe to share between the write coordinator (the
/// only appender), the sealer and any number of readers.
pub struct Head {
    index: RwLock<SeriesIndex>,
    next_id: AtomicU64,
    /// Every bucket up to this one is sealed and read from the store.
    sealed_through: AtomicI64,
    /// The newest bucket whose seal has begun: its chunks are no longer
    /// spilled.
    sealing_through: AtomicI64,
    /// Out-of-order and late samples held beside the chunks.
    extra_samples: AtomicUsize,
    /// Series dropped from the head, for a while: labels by id, id by
    /// label hash.
    recent: RecentSeries,
    /// Label hashes more than one series' labels share, with every id
    /// known to share it, so the `H` key written for one lists them all.
    /// A 64-bit hash makes this empty in practice.
    shared_hashes: Mutex<FxHashMap<u64, Vec<u64>>>,
    /// Series dropped from the head so far.
    dropped: AtomicU64,
    /// The label hashes the store's `H` keys may hold.
    stored_hashes: HashFilter,
    /// Series whose chunk of a bucket being sealed is written and dropped,
    /// per bucket (see `released.rs`): none or one.
    released: RwLock<Vec<Arc<Released>>>,
    /// Exemplars of every series, bounded in all.
    exemplars: ExemplarStore,
    /// Whether any series has had native histograms: reads of a head
    /// without look for none.
    holds_histograms: AtomicBool,
    /// The files the chunks' frozen runs are kept in, one a bucket.
    runs: RunFiles,
}

impl Head {
    pub fn new(next_id: u64, sealed_through: Option<i64>) -> Self {
        Self::with_recent(next_id, sealed_through, recent::DEFAULT_BYTES)
    }

    /// [`Head::new`] with `recent_bytes` for the cache of dropped series.
    pub fn with_recent(next_id: u64, sealed_through: Option<i64>, recent_bytes: usize) -> Self {
        Self {
            index: RwLock::new(SeriesIndex::default()),
            next_id: AtomicU64::new(next_id.max(1)),
            sealed_through: AtomicI64::new(sealed_through.unwrap_or(NONE_SEALED)),
            sealing_through: AtomicI64::new(sealed_through.unwrap_or(NONE_SEALED)),
            extra_samples: AtomicUsize::new(0),
            recent: RecentSeries::new(recent_bytes),
            shared_hashes: Mutex::new(FxHashMap::default()),
            dropped: AtomicU64::new(0),
            stored_hashes: HashFilter::default(),
            released: RwLock::new(Vec::new()),
            exemplars: ExemplarStore::default(),
            holds_histograms: AtomicBool::new(false),
            runs: RunFiles::default(),
        }
    }

    /// Notes that a series has native histograms in the head.
    pub(crate) fn note_histograms(&self) {
        if !self.holds_histograms.load(Ordering::Relaxed) {
            self.holds_histograms.store(true, Ordering::Relaxed);
        }
    }

    /// Whether any series has had native histograms in the head.
    pub(crate) fn holds_histograms(&self) -> bool {
        self.holds_histograms.load(Ordering::Relaxed)
    }

    /// The series with these labels, created (with the next id) if new.
    /// The labels must be valid: sorted, unique names.
    pub fn get_or_create(&self, labels: &(impl LabelPairs + ?Sized)) -> (Arc<MemSeries>, bool) {
        let (s, origin) = self.get_or_create_as(labels, None);
        (s, origin == Origin::New)
    }

    /// The series with these labels: the head's, else created with
    /// `stored_id` (the id the store knows it by: a series that comes
    /// back) or the next id. The labels must be valid: sorted, unique
    /// names.
    pub fn get_or_create_as(
        &self,
        labels: &(impl LabelPairs + ?Sized),
        stored_id: Option<u64>,
    ) -> (Arc<MemSeries>, Origin) {
        let hash = labels_hash(labels);
        {
            let idx = self.index.read();
            if let Some(s) = find(&idx, hash, labels) {
                return (s, Origin::Head);
            }
        }
        let mut idx = self.index.write();
        if let Some(s) = find(&idx, hash, labels) {
            return (s, Origin::Head);
        }
        let (id, origin) = match stored_id {
            Some(id) if !idx.by_id.contains(id) => {
                self.next_id.fetch_max(id + 1, Ordering::Relaxed);
                (id, Origin::Returned)
            }
            _ => (self.next_id.fetch_add(1, Ordering::Relaxed), Origin::New),
        };
        let active = idx.active_counter(tenant_of(labels));
        // A series that comes back is logged again with its labels (a
        // reader node that dropped it too learns them from the log), and
        // its `S` and `H` keys are written again with its data.
        let series = Arc::new(MemSeries::new(
            id,
            SeriesLabels::new(labels),
            false,
            NOT_WRITTEN,
            active,
        ));
        idx.insert(hash, Arc::clone(&series));
        (series, origin)
    }

    /// A series the head dropped while `s` was held (by a write on its
    /// way to the coordinator, by the log follower): the series the head
    /// now holds with its labels, or `s` itself, put back.
    pub fn revive(&self, s: &Arc<MemSeries>) -> Arc<MemSeries> {
        let hash = labels_hash(&s.labels);
        let mut idx = self.index.write();
        if let Some(live) = find(&idx, hash, &s.labels) {
            return live;
        }
        let st = s.state.lock();
        if s.dropped.load(Ordering::Relaxed) && !idx.by_id.contains(s.id) {
            s.dropped.store(false, Ordering::Relaxed);
            drop(st);
            idx.insert(hash, Arc::clone(s));
        }
        Arc::clone(s)
    }

    /// The ids an `H` key for series `id` with label hash `hash` lists:
    /// itself and every other series known to share the hash.
    pub(crate) fn hash_ids(&self, hash: u64, id: u64) -> Vec<u64> {
        let mut ids = vec![id];
        {
            let idx = self.index.read();
            if let Some(others) = idx.collisions.get(&hash) {
                ids.extend(idx.by_hash.get(&hash).map(|s| s.id));
                ids.extend(others.iter().map(|s| s.id));
            }
        }
        if let Some(known) = self.shared_hashes.lock().get(&hash) {
            ids.extend_from_slice(known);
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Notes that the store lists `ids` under `hash`, none of them the
    /// series about to be created with that hash.
    pub(crate) fn note_shared_hash(&self, hash: u64, ids: &[u64]) {
        let mut shared = self.shared_hashes.lock();
        let known = shared.entry(hash).or_default();
        known.extend_from_slice(ids);
        known.sort_unstable();
        known.dedup();
    }

    /// The exemplars the head holds.
    pub fn exemplars(&self) -> &ExemplarStore {
        &self.exemplars
    }

    /// The cache of series dropped from the head.
    pub(crate) fn recent(&self) -> &RecentSeries {
        &self.recent
    }

    /// Bytes held by the cache of dropped series and the filter of label
    /// hashes the store's labels index holds.
    pub fn recent_series_bytes(&self) -> usize {
        self.recent.usage() + self.stored_hashes.heap_bytes()
    }

    /// Notes that the store's `H` keys hold `hash` (written or found).
    pub(crate) fn note_stored_hash(&self, hash: u64) {
        self.stored_hashes.insert(hash);
    }

    /// False only if no `H` key with `hash` has been noted.
    pub(crate) fn may_be_stored(&self, hash: u64) -> bool {
        self.stored_hashes.may_contain(hash)
    }

    /// Series dropped from the head so far (their buckets all sealed).
    pub fn series_dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Adds a series known from storage (recovery), keeping its id.
    pub fn insert_recovered(&self, id: u64, labels: Vec<Label>, written_ms: i64) -> Arc<MemSeries> {
        let hash = labels_hash(&labels);
        let mut idx = self.index.write();
        if let Some(s) = idx.by_id.get(id) {
            return Arc::clone(s);
        }
        let active = idx.active_counter(tenant_of(&labels));
        let series = Arc::new(MemSeries::new(
            id,
            SeriesLabels::new(&labels[..]),
            true,
            written_ms,
            active,
        ));
        idx.insert(hash, Arc::clone(&series));
        self.next_id.fetch_max(id + 1, Ordering::Relaxed);
        series
    }

    /// The series with these labels, if the head knows it.
    pub fn get(&self, labels: &(impl LabelPairs + ?Sized)) -> Option<Arc<MemSeries>> {
        find(&self.index.read(), labels_hash(labels), labels)
    }

    /// [`Self::get`] for each of a write request's label sets, under one
    /// lock. A request's series lie scattered over the heap, and looked up
    /// one at a time each lookup waited on its own cache misses; here every
    /// hash is probed first, and each series' memory is fetched a few
    /// lookups ahead of its comparison.
    pub fn get_many<'a, L: LabelPairs + ?Sized + 'a>(
        &self,
        sets: impl Iterator<Item = &'a L>,
    ) -> Vec<Option<Arc<MemSeries>>> {
        const AHEAD: usize = 8;
        let sets: Vec<(&L, u64)> = sets.map(|l| (l, labels_hash(l))).collect();
        let idx = self.index.read();
        let firsts: Vec<Option<&Arc<MemSeries>>> =
            sets.iter().map(|(_, h)| idx.by_hash.get(h)).collect();
        for s in firsts.iter().take(AHEAD).flatten() {
            prefetch(Arc::as_ptr(s));
        }
        let mut out = Vec::with_capacity(sets.len());
        for (i, &(labels, hash)) in sets.iter().enumerate() {
            if let Some(Some(s)) = firsts.get(i + AHEAD) {
                prefetch(Arc::as_ptr(s));
            }
            if let Some(Some(s)) = firsts.get(i + AHEAD / 2) {
                prefetch(s.labels.as_ptr());
            }
            out.push(match firsts.get(i).copied().flatten() {
                Some(s) if s.labels.eq_pairs(labels) => Some(Arc::clone(s)),
                Some(_) => find(&idx, hash, labels),
                None => None,
            });
        }
        out
    }

    /// Series of `tenant` (`""`: the default tenant) with samples in a
    /// bucket not yet sealed.
    pub fn active_series(&self, tenant: &str) -> usize {
        self.index
            .read()
            .active
            .get(tenant)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    pub fn series_by_id(&self, id: u64) -> Option<Arc<MemSeries>> {
        self.index.read().by_id.get(id).cloned()
    }

    /// Every series, ascending by id.
    pub fn all_series(&self) -> Vec<Arc<MemSeries>> {
        let idx = self.index.read();
        let mut all = Vec::with_capacity(idx.by_id.len());
        all.extend(idx.by_id.values().cloned());
        all
    }

    pub fn num_series(&self) -> usize {
        self.index.read().by_id.len()
    }

    pub fn next_series_id(&self) -> u64 {
        self.next_id.load(Ordering::Relaxed)
    }

    pub fn sealed_through(&self) -> Option<i64> {
        match self.sealed_through.load(Ordering::Acquire) {
            NONE_SEALED => None,
            b => Some(b),
        }
    }

    /// The newest bucket whose seal has begun.
    pub(crate) fn sealing_through(&self) -> i64 {
        self.sealing_through.load(Ordering::Acquire)
    }

    /// Notes that the seal of `bucket` has begun: the spill pass leaves its
    /// chunks alone from now on.
    pub(crate) fn begin_seal(&self, bucket: i64) {
        self.sealing_through.fetch_max(bucket, Ordering::AcqRel);
    }

    /// Marks `bucket` (and every older one) sealed, then frees their
    /// chunks, and drops the series left with nothing else in the head.
    /// Readers that saw the old value re-read those buckets from the store.
    /// Returns how many series were dropped.
    pub fn mark_sealed(&self, bucket: i64) -> usize {
        self.sealed_through.fetch_max(bucket, Ordering::AcqRel);
        self.begin_seal(bucket);
        // After `sealed_through`: a read that no longer finds a released
        // series reads the bucket from the store as a sealed one.
        self.released.write().retain(|r| r.bucket > bucket);
        let mut freed = 0;
        let mut idle = Vec::new();
        for s in self.all_series() {
            freed += s.drop_through(bucket);
            if s.is_idle() {
                idle.push(s);
            }
        }
        self.extra_freed(freed);
        self.drop_idle(idle)
    }

    /// The seal of `bucket` has written the chunks of `series` (durably):
    /// drops them from the head, noting each series as released (see
    /// `released.rs`).
    pub(crate) fn release_sealed(&self, bucket: i64, series: &[Arc<MemSeries>]) {
        if series.is_empty() {
            return;
        }
        let set = {
            let mut sets = self.released.write();
            match sets.iter().find(|r| r.bucket == bucket) {
                Some(r) => Arc::clone(r),
                None => {
                    let r = Arc::new(Released::new(bucket, self.next_series_id()));
                    sets.push(Arc::clone(&r));
                    r
                }
            }
        };
        let mut freed = 0;
        for s in series {
            // A series beyond the set's size (none: the seal walks the
            // series there were when it began) keeps its chunk until the
            // checkpoint.
            if set.insert(s.id) {
                freed += s.release(bucket);
            }
        }
        self.extra_freed(freed);
    }

    /// The series of `bucket` whose chunks a seal has written and released,
    /// if any were.
    pub(crate) fn released_set(&self, bucket: i64) -> Option<Arc<Released>> {
        self.released
            .read()
            .iter()
            .find(|r| r.bucket == bucket)
            .cloned()
    }

    /// Drops every series with nothing but its labels in the head (after
    /// recovery, a series whose replayed samples were all spilled or
    /// sealed); returns how many.
    pub(crate) fn drop_all_idle(&self) -> usize {
        let idle = self
            .all_series()
            .into_iter()
            .filter(|s| s.is_idle())
            .collect();
        self.drop_idle(idle)
    }

    /// Takes the series of `idle` that are still idle out of the index,
    /// marks them dropped and keeps their labels in the recent cache.
    fn drop_idle(&self, idle: Vec<Arc<MemSeries>>) -> usize {
        if idle.is_empty() {
            return 0;
        }
        let mut gone = Vec::with_capacity(idle.len());
        {
            let mut idx = self.index.write();
            for s in idle {
                let st = s.state.lock();
                let held = idx.by_id.get(s.id).is_some_and(|h| Arc::ptr_eq(h, &s));
                // A sample may have come in since the caller looked.
                if !held
                    || s.dropped.load(Ordering::Relaxed)
                    || !st.chunks.is_empty()
                    || !st.extras.is_empty()
                    || !st.extras.hists().is_empty()
                {
                    continue;
                }
                s.dropped.store(true, Ordering::Relaxed);
                drop(st);
                gone.push(s);
            }
            idx.remove(&gone);
        }
        for s in &gone {
            self.recent
                .insert(s.id, labels_hash(&s.labels), s.labels.clone());
        }
        self.dropped.fetch_add(gone.len() as u64, Ordering::Relaxed);
        gone.len()
    }

    /// Out-of-order and late samples held beside the chunks.
    pub fn extra_samples(&self) -> usize {
        self.extra_samples.load(Ordering::Relaxed)
    }

    pub(crate) fn extra_added(&self, n: usize) {
        self.extra_samples.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn extra_freed(&self, n: usize) {
        let _ = self
            .extra_samples
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(n))
            });
    }

    /// Freezes every chunk tail of at least `min_samples` samples into the
    /// compact sealed format (see [`HeadChunk`]); returns how many. Takes
    /// each series' lock in turn, briefly.
    pub fn freeze_tails(&self, min_samples: u32) -> usize {
        let mut scratch = Scratch::default();
        let mut files = BucketFiles::new(&self.runs);
        self.all_series()
            .iter()
            .map(|s| s.freeze(min_samples, &mut files, &mut scratch))
            .sum()
    }

    /// Freezes the tail of every chunk that takes no more samples in
    /// order, however short, and closes it: those of a bucket before
    /// `open` (a bucket index), and those before their series' newest
    /// chunk. An ended bucket's chunks otherwise keep up to a freeze's
    /// worth of samples in the tail, two to three times their frozen size,
    /// and their box, until their seal drops them. Returns how many it
    /// froze.
    pub fn freeze_ended(&self, open: i64) -> usize {
        let mut scratch = Scratch::default();
        let mut files = BucketFiles::new(&self.runs);
        self.all_series()
            .iter()
            .map(|s| s.freeze_ended(open, &mut files, &mut scratch))
            .sum()
    }

    /// [`Self::freeze_ended`] for the series that have moved into a later
    /// bucket, the cheap way: their ended chunks' tails written as they
    /// are, with no decoding or encoding, about a twenty-fifth of a
    /// freeze's time;
    /// [`Self::merge_closed`] merges them into the sealed format later.
    /// Returns how many chunks it closed so.
    pub fn close_ended(&self, open: i64) -> usize {
        let mut bytes = Vec::new();
        let mut files = BucketFiles::new(&self.runs);
        self.all_series()
            .iter()
            .map(|s| s.close_ended(open, &mut files, &mut bytes))
            .sum()
    }

    /// Closes `series`' chunk of `bucket`, which an append has just put a
    /// later bucket's chunk after (see [`AppendOutcome::ended`]): its tail
    /// written to the bucket's run file as it is, under a microsecond,
    /// rather than waiting for the freezer. Every series reaches the next
    /// bucket within a scrape of its end, and each held its ended chunk
    /// whole beside the new one until the freezer reached it: at 2 M series
    /// the process's highest RSS. Returns whether it closed it.
    pub fn close_ended_chunk(&self, series: &MemSeries, bucket: i64) -> bool {
        series.close_ended_now(bucket, &self.runs.file(bucket))
    }

    /// Merges the runs [`Self::close_ended`] wrote in the tail's format
    /// into the sealed format; returns how many chunks it merged.
    pub fn merge_closed(&self) -> usize {
        let mut scratch = Scratch::default();
        let mut files = BucketFiles::new(&self.runs);
        self.all_series()
            .iter()
            .map(|s| s.merge_closed(&mut files, &mut scratch))
            .sum()
    }

    /// Bytes of the frozen runs' files (see `runs.rs`): in the page cache
    /// or on disk, not in the heap.
    pub fn run_file_bytes(&self) -> u64 {
        self.runs.bytes()
    }

    /// Bytes held by the head, an estimate for `/metrics`: the sum of
    /// [`Self::memory`].
    pub fn memory_bytes(&self) -> usize {
        self.memory().total()
    }

    /// Bytes held by the head, by part (estimates: allocator rounding and
    /// hash-table control bytes are approximated).
    pub fn memory(&self) -> HeadMemory {
        let idx = self.index.read();
        let mut m = HeadMemory::default();
        for s in idx.by_id.values() {
            // The series and its `Arc` counts.
            m.series += std::mem::size_of::<MemSeries>() + 16;
            m.labels += s.labels.heap_bytes();
            let st = s.state.lock();
            m.chunks += st.chunks.capacity() * std::mem::size_of::<(i64, HeadChunk)>();
            m.chunks += st.chunks.iter().map(|(_, c)| c.heap_bytes()).sum::<usize>();
            m.extras += st.extras.heap_bytes();
        }
        // Hash tables: a key, a value and a control byte per slot; the
        // B-tree about a key and a value per entry, nodes two-thirds full.
        let slot = |k: usize, v: usize| k + v + 1;
        let ptr = std::mem::size_of::<Arc<MemSeries>>();
        m.index += idx.by_hash.capacity() * slot(8, ptr);
        m.index += idx.collisions.capacity() * slot(8, 24);
        m.index += idx.by_id.heap_bytes();
        m.index += idx.postings.capacity() * slot(16, 32);
        for (name, values) in &idx.postings {
            m.index += name.len() + values.capacity() * slot(16, std::mem::size_of::<IdList>());
            for (value, ids) in values {
                m.index += value.len() + ids.heap_bytes();
            }
        }
        // The process's table of label values (see `labels.rs`).
        m.labels += labels::value_table_bytes();
        m.index += self
            .released
            .read()
            .iter()
            .map(|r| r.heap_bytes())
            .sum::<usize>();
        m
    }
}

/// The head's bytes by part (see [`Head::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadMemory {
    /// The series' own structs.
    pub series: usize,
    /// Their packed labels.
    pub labels: usize,
    /// Open chunks: frozen runs, tails, spilled ranges.
    pub chunks: usize,
    /// Out-of-order and late samples.
    pub extras: usize,
    /// Maps by hash and id, and the postings.
    pub index: usize,
}

impl HeadMemory {
    pub fn total(&self) -> usize {
        self.series + self.labels + self.chunks + self.extras + self.index
    }
}

/// Asks for the cache line at `p`: a hint, which never faults.
#[inline]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        #[allow(unsafe_code)]
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault, whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn find(
    idx: &SeriesIndex,
    hash: u64,
    labels: &(impl LabelPairs + ?Sized),
) -> Option<Arc<MemSeries>> {
    let first = idx.by_hash.get(&hash)?;
    if first.labels.eq_pairs(labels) {
        return Some(Arc::clone(first));
    }
    idx.collisions
        .get(&hash)?
        .iter()
        .find(|s| s.labels.eq_pairs(labels))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &str) -> Vec<Label> {
        vec![Label::new("__name__", "m"), Label::new("k", v)]
    }

    #[test]
    fn fit_moves_a_vec_into_a_new_allocation_of_its_length() {
        // Grown by pushes to more than it holds, as an encoder leaves it.
        let mut v: Vec<u8> = Vec::new();
        for i in 0..300u32 {
            v.push(i as u8);
        }
        assert!(v.capacity() > v.len());
        let (grown, want) = (v.as_ptr(), v.clone());
        fit(&mut v);
        assert_eq!(v, want);
        assert_eq!(v.capacity(), 300);
        // Not shrunk in place: an allocator may keep a block that stays
        // half used, and the fit is for the block's sake.
        assert_ne!(v.as_ptr(), grown);
        // Already exact: left where it is.
        let exact = v.as_ptr();
        fit(&mut v);
        assert_eq!(v.as_ptr(), exact);
        let b = fit_box(want.iter().chain(want.iter()).copied().collect::<Vec<u8>>());
        assert_eq!(b.len(), 600);
        assert_eq!(&b[..300], &want[..]);
    }

    #[test]
    fn staggered_thresholds_spread_consecutive_series_over_half_again() {
        assert_eq!(staggered(0, 7), 0, "0 stays off");
        let mut bins = [0u32; 8];
        for id in 1..=1000 {
            let t = staggered(480, id);
            assert!((480..720).contains(&t), "{t}");
            bins[((t - 480) / 30) as usize] += 1;
        }
        // 1,000 consecutive ids (a target's series) fall evenly, 125 per
        // eighth of the range.
        assert!(bins.iter().all(|&n| (110..=140).contains(&n)), "{bins:?}");
        assert_eq!(staggered(480, 42), staggered(480, 42), "fixed per series");
    }

    #[test]
    fn a_series_with_its_arc_counts_fits_the_112_byte_class() {
        assert!(std::mem::size_of::<MemSeries>() + 16 <= 112);
    }

    #[test]
    fn keys_written_round_to_the_second() {
        let c = Arc::new(AtomicUsize::new(0));
        let s = MemSeries::new(1, SeriesLabels::new(&labels("a")[..]), true, NOT_WRITTEN, c);
        assert_eq!(s.keys_written_ms(), NOT_WRITTEN);
        s.note_keys_written(1_700_000_123_456);
        assert_eq!(s.keys_written_ms(), 1_700_000_123_000);
        s.note_keys_written(1_600_000_000_000);
        assert_eq!(s.keys_written_ms(), 1_700_000_123_000, "never goes back");
        s.note_keys_written(0);
        assert_eq!(s.keys_written_ms(), 1_700_000_123_000);
        let at_zero = MemSeries::new(
            2,
            SeriesLabels::new(&labels("b")[..]),
            true,
            0,
            Arc::new(AtomicUsize::new(0)),
        );
        assert_eq!(at_zero.keys_written_ms(), 0, "written at 0 is written");
    }

    #[test]
    fn same_labels_same_series() {
        let head = Head::new(1, None);
        let (a, new_a) = head.get_or_create(&labels("x"));
        let (b, new_b) = head.get_or_create(&labels("x"));
        let (c, _) = head.get_or_create(&labels("y"));
        assert!(new_a && !new_b);
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, c.id);
    }

    #[test]
    fn hash_collisions_are_told_apart() {
        // Force two label sets into one hash bucket.
        let head = Head::new(1, None);
        let c = Arc::new(AtomicUsize::new(0));
        let s1 = Arc::new(MemSeries::new(
            1,
            SeriesLabels::new(&labels("a")[..]),
            true,
            0,
            Arc::clone(&c),
        ));
        let s2 = Arc::new(MemSeries::new(
            2,
            SeriesLabels::new(&labels("b")[..]),
            true,
            0,
            c,
        ));
        {
            let mut idx = head.index.write();
            idx.insert(42, s1);
            idx.insert(42, s2);
        }
        let idx = head.index.read();
        assert_eq!(find(&idx, 42, &labels("b")).map(|s| s.id), Some(2));
        assert_eq!(find(&idx, 42, &labels("a")).map(|s| s.id), Some(1));
        assert!(find(&idx, 42, &labels("c")).is_none());
    }

    fn append_one(s: &MemSeries, t: i64) {
        let out = s.append(
            &[(t, 1.0)],
            &AppendPolicy::strict(0, 3_600_000),
            |_, _, _| {},
        );
        assert_eq!(out.appended, 1, "{out:?}");
    }

    #[test]
    fn a_seal_drops_idle_series_from_maps_and_postings() {
        let head = Head::new(1, None);
        let hour = 3_600_000;
        let (a, _) = head.get_or_create(&labels("a"));
        let (b, _) = head.get_or_create(&labels("b"));
        let (c, _) = head.get_or_create(&labels("c"));
        append_one(&a, 10);
        append_one(&b, 10);
        append_one(&b, hour + 10);
        append_one(&c, hour + 20);
        // A colliding series beside `a`, first under the hash.
        let hash = labels_hash(&labels("a"));
        let active = Arc::new(AtomicUsize::new(0));
        let d = Arc::new(MemSeries::new(
            99,
            SeriesLabels::new(&labels("d")[..]),
            true,
            0,
            active,
        ));
        head.index.write().insert(hash, Arc::clone(&d));
        append_one(&d, hour + 40);
        assert_eq!(head.mark_sealed(0), 1, "only a goes");
        assert_eq!(head.num_series(), 3);
        assert!(head.get(&labels("a")).is_none());
        assert_eq!(head.select_ids(&[]), vec![b.id, c.id, 99]);
        let by_k = |v: &str| {
            head.select_ids(&[
                strata_codec::Matcher::new(strata_codec::MatchOp::Equal, "k", v).unwrap(),
            ])
        };
        assert!(by_k("a").is_empty());
        assert_eq!(by_k("b"), vec![b.id]);
        {
            let idx = head.index.read();
            assert!(!idx.postings.get("k").unwrap().contains_key("a"));
            // The colliding series took a's place under the hash.
            assert_eq!(idx.by_hash.get(&hash).map(|s| s.id), Some(99));
            assert!(!idx.collisions.contains_key(&hash));
        }
        // The cache keeps what was dropped.
        assert_eq!(head.recent().id(hash), Some(a.id));
        assert_eq!(
            head.recent().labels(a.id).map(|l| l.to_labels()),
            Some(labels("a"))
        );

        // A write that resolved `a` before the seal finds it dropped, and
        // puts it back as it was.
        let out = a.append(
            &[(hour + 30, 2.0)],
            &AppendPolicy::strict(1, hour),
            |_, _, _| {},
        );
        assert!(out.series_dropped && out.appended == 0);
        let live = head.revive(&a);
        assert!(Arc::ptr_eq(&live, &a));
        append_one(&live, hour + 30);
        assert_eq!(head.get(&labels("a")).map(|s| s.id), Some(a.id));
        assert_eq!(by_k("a"), vec![a.id]);
        // Reviving what the head holds again returns the head's.
        let (e, _) = head.get_or_create(&labels("e"));
        assert_eq!(
            head.mark_sealed(1),
            5,
            "e (idle); a, b, c and d (bucket 1 sealed)"
        );
        assert_eq!(head.num_series(), 0);
        let (e2, origin) = head.get_or_create_as(&labels("e"), Some(e.id));
        assert_eq!((e2.id, origin), (e.id, Origin::Returned));
        assert!(Arc::ptr_eq(&head.revive(&e), &e2));
    }

    #[test]
    fn an_ended_buckets_short_tail_is_frozen_and_the_open_one_is_not() {
        let head = Head::new(1, None);
        let hour = 3_600_000;
        let policy = AppendPolicy::strict(0, hour);
        let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
            (0..n).map(|i| (from + i * 5_000, (i % 7) as f64)).collect()
        };
        let (s, _) = head.get_or_create(&labels("a"));
        let (short, _) = head.get_or_create(&labels("b"));
        // Bucket 0: 100 samples, frozen as usual, then 10 more in the tail;
        // bucket 1: 10 in the tail.
        assert_eq!(s.append(&at(0, 100), &policy, |_, _, _| {}).appended, 100);
        assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 1);
        assert_eq!(
            s.append(&at(500_000, 10), &policy, |_, _, _| {}).appended,
            10
        );
        assert_eq!(s.append(&at(hour, 10), &policy, |_, _, _| {}).appended, 10);
        // A series with a few samples only: frozen, its chunk would grow.
        assert_eq!(short.append(&at(0, 5), &policy, |_, _, _| {}).appended, 5);
        let bytes = |b: usize| s.state.lock().chunks[b].1.heap_bytes();
        let (ended_before, open_before) = (bytes(0), bytes(1));
        let short_before = short.state.lock().chunks[0].1.heap_bytes();

        // Below the freeze threshold, nothing freezes.
        assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 0);
        // While bucket 0 is the open one by the clock, a series with
        // samples of bucket 1 has its bucket 0 chunk frozen and closed: it
        // takes no more samples in order. One without stays open.
        assert_eq!(head.freeze_ended(0), 1, "a has moved on to bucket 1");
        assert!(bytes(0) < ended_before, "{} -> {}", ended_before, bytes(0));
        assert_eq!(bytes(0), 0, "closed: one run inline, no box, no tail");
        assert_eq!(bytes(1), open_before, "the open bucket's tail stays");
        assert_eq!(short.state.lock().chunks[0].1.heap_bytes(), short_before);
        assert_eq!(head.freeze_ended(0), 0, "nothing left to freeze");
        // Once bucket 0 is over by the clock, the short one is closed too
        // (it has no runs: its few samples stay in the tail).
        assert_eq!(head.freeze_ended(1), 0);
        assert_eq!(short.state.lock().chunks[0].1.heap_bytes(), short_before);

        // Every sample reads back.
        let want = [at(0, 100), at(500_000, 10)].concat();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        s.state.lock().chunks[0]
            .1
            .decode_into(&mut ts, &mut vs)
            .unwrap();
        assert_eq!(ts, want.iter().map(|p| p.0).collect::<Vec<_>>());
        assert_eq!(vs, want.iter().map(|p| p.1).collect::<Vec<_>>());
    }

    #[test]
    fn a_moved_series_ended_chunk_is_closed_as_it_is_then_merged() {
        let head = Head::new(1, None);
        let hour = 3_600_000;
        let policy = AppendPolicy::strict(0, hour);
        let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
            (0..n)
                .map(|i| (from + i * 5_000, (i % 7) as f64 * 1.25))
                .collect()
        };
        let (s, _) = head.get_or_create(&labels("a"));
        let (stays, _) = head.get_or_create(&labels("b"));
        for x in [&s, &stays] {
            assert_eq!(x.append(&at(0, 100), &policy, |_, _, _| {}).appended, 100);
        }
        assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 2);
        for x in [&s, &stays] {
            assert_eq!(
                x.append(&at(500_000, 10), &policy, |_, _, _| {}).appended,
                10
            );
        }
        assert_eq!(s.append(&at(hour, 3), &policy, |_, _, _| {}).appended, 3);
        let bytes = |x: &MemSeries, b: usize| x.state.lock().chunks[b].1.heap_bytes();
        let (ended_before, stays_before) = (bytes(&s, 0), bytes(&stays, 0));
        let open_before = bytes(&s, 1);

        // Only the series with samples of bucket 1 is closed.
        assert_eq!(head.close_ended(0), 1);
        assert_eq!(bytes(&stays, 0), stays_before, "b has not moved on");
        assert_eq!(bytes(&s, 1), open_before, "the open bucket's tail stays");
        assert!(
            bytes(&s, 0) < ended_before,
            "{ended_before} -> {}",
            bytes(&s, 0)
        );
        assert_eq!(head.close_ended(0), 0, "nothing left to close");
        let read = |x: &MemSeries| {
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            x.state.lock().chunks[0]
                .1
                .decode_into(&mut ts, &mut vs)
                .unwrap();
            ts.into_iter().zip(vs).collect::<Vec<_>>()
        };
        let want = [at(0, 100), at(500_000, 10)].concat();
        assert_eq!(read(&s), want);

        // The merge makes the two runs one, in the sealed format: no
        // heap beyond the entry.
        assert_eq!(head.merge_closed(), 1);
        assert_eq!(bytes(&s, 0), 0, "closed: one run inline, no box, no tail");
        assert_eq!(read(&s), want);
        assert_eq!(head.merge_closed(), 0);
        assert_eq!(head.freeze_ended(0), 0, "nothing left to freeze");
    }

    #[test]
    fn an_append_that_opens_a_later_bucket_names_the_ended_one_for_the_writer_to_close() {
        let head = Head::new(1, None);
        let hour = 3_600_000;
        let policy = AppendPolicy::strict(0, hour);
        let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
            (0..n).map(|i| (from + i * 5_000, i as f64 * 0.5)).collect()
        };
        let (s, _) = head.get_or_create(&labels("a"));
        let first = s.append(&at(0, 100), &policy, |_, _, _| {});
        assert_eq!(first.ended, None, "the first chunk ends none");
        assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 1);
        assert_eq!(
            s.append(&at(500_000, 10), &policy, |_, _, _| {}).ended,
            None
        );
        let next = s.append(&at(hour, 2), &policy, |_, _, _| {});
        assert_eq!(next.ended, Some(0));
        assert_eq!(
            s.append(&at(hour + 10_000, 1), &policy, |_, _, _| {}).ended,
            None
        );

        let before = s.state.lock().chunks[0].1.heap_bytes();
        assert!(head.close_ended_chunk(&s, 0));
        assert!(s.state.lock().chunks[0].1.heap_bytes() < before);
        assert!(!head.close_ended_chunk(&s, 0), "closed already");
        assert!(!head.close_ended_chunk(&s, 7), "no such chunk");
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        s.state.lock().chunks[0]
            .1
            .decode_into(&mut ts, &mut vs)
            .unwrap();
        let want = [at(0, 100), at(500_000, 10)].concat();
        assert_eq!(ts.into_iter().zip(vs).collect::<Vec<_>>(), want);
        assert_eq!(head.merge_closed(), 1);

        // A series without frozen runs keeps its few samples in the tail.
        let (short, _) = head.get_or_create(&labels("b"));
        short.append(&at(0, 3), &policy, |_, _, _| {});
        let next = short.append(&at(hour, 1), &policy, |_, _, _| {});
        assert_eq!(next.ended, Some(0));
        assert!(!head.close_ended_chunk(&short, 0));
    }

    #[test]
    fn get_many_agrees_with_get() {
        let head = Head::new(1, None);
        let known: Vec<_> = (0..40).map(|i| labels(&format!("k{i}"))).collect();
        for l in &known {
            head.get_or_create(l);
        }
        let asked: Vec<_> = (0..60)
            .map(|i| labels(&format!("k{}", i * 7 % 80)))
            .collect();
        let got = head.get_many(asked.iter().map(|l| &l[..]));
        assert_eq!(got.len(), asked.len());
        for (l, g) in asked.iter().zip(&got) {
            assert_eq!(g.as_ref().map(|s| s.id), head.get(l).map(|s| s.id));
        }
        assert!(got.iter().any(Option::is_none) && got.iter().any(Option::is_some));
    }

    #[test]
    fn a_replay_skips_spilled_samples_in_order_and_keeps_the_rest() {
        let head = Head::new(1, None);
        let hour = 3_600_000;
        let (s, _) = head.get_or_create(&labels("a"));
        // Bucket 1's samples up to 1h + 300 s were spilled before a crash.
        s.restore_spilled(1, vec![(hour, hour + 300_000)], 21);
        let policy = AppendPolicy {
            late_from: Some(0),
            replay: true,
            ..AppendPolicy::strict(0, hour)
        };
        // The log, in the order it was written: bucket 0's end, bucket
        // 1's spilled samples, one of them retried (kept beside the chunk
        // when first written, as no segment could be checked), then newer.
        let mut log: Vec<(i64, f64)> = vec![(hour - 30_000, 1.0), (hour - 15_000, 2.0)];
        log.extend((0..=20).map(|i| (hour + i * 15_000, f64::from(i as u32))));
        log.push((hour + 150_000, 10.0));
        log.extend((21..=24).map(|i| (hour + i * 15_000, f64::from(i as u32))));
        let out = s.append(&log, &policy, |_, _, _| {});
        // Bucket 0's two in order into a chunk before bucket 1's, bucket
        // 1's four after the segment, and the retry beside the chunk; the
        // 21 spilled ones skipped.
        assert_eq!((out.appended, out.extra, out.rejected), (7, 1, 0));
        let st = s.state.lock();
        let chunks: Vec<(i64, u32, u32)> = st
            .chunks
            .iter()
            .map(|(b, c)| (*b, c.len(), c.spilled_len()))
            .collect();
        assert_eq!(chunks, vec![(0, 2, 0), (1, 4, 21)]);
        assert_eq!(st.last_t, hour + 24 * 15_000);
        drop(st);
        // After the replay the last spilled sample is not newer: no change.
        s.raise_last(hour + 300_000, 20.0);
        assert_eq!(s.state.lock().last_t, hour + 24 * 15_000);
        // With nothing replayed after the segment, it is the last sample.
        let (r, _) = head.get_or_create(&labels("r"));
        r.restore_spilled(1, vec![(hour, hour + 300_000)], 21);
        r.raise_last(hour + 300_000, 20.0);
        let st = r.state.lock();
        assert_eq!(
            (st.last_t, st.last_v_bits),
            (hour + 300_000, 20f64.to_bits())
        );
    }

    #[test]
    fn get_many_looks_past_a_colliding_first_series() {
        let head = Head::new(1, None);
        let c = Arc::new(AtomicUsize::new(0));
        let hash = labels_hash(&labels("b"));
        let first = MemSeries::new(
            1,
            SeriesLabels::new(&labels("a")[..]),
            true,
            0,
            Arc::clone(&c),
        );
        let second = MemSeries::new(2, SeriesLabels::new(&labels("b")[..]), true, 0, c);
        {
            let mut idx = head.index.write();
            idx.insert(hash, Arc::new(first));
            idx.insert(hash, Arc::new(second));
        }
        let got = head.get_many([labels("b")].iter().map(|l| &l[..]));
        assert_eq!(got[0].as_ref().map(|s| s.id), Some(2));
    }
}
