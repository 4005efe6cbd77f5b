//! The head itself: the series index, the sealed watermark, the extra
//! samples' count, the recently dropped series and the run files, shared
//! by the coordinator, the sealer and readers. What a seal does to it is
//! in `seal.rs`, its memory by part in `memory.rs`.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use strata_codec::{Label, LabelPairs};

use super::exemplars::ExemplarStore;
use super::hash_filter::HashFilter;
use super::index::{find, labels_hash, prefetch, SeriesIndex};
use super::labels::SeriesLabels;
use super::recent::{self, RecentSeries};
use super::released::Released;
use super::runs::{BucketFiles, RunFiles};
use super::series::{MemSeries, Scratch, NOT_WRITTEN};
use super::NONE_SEALED;

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
    pub(super) index: RwLock<SeriesIndex>,
    next_id: AtomicU64,
    /// Every bucket up to this one is sealed and read from the store.
    pub(super) sealed_through: AtomicI64,
    /// The newest bucket whose seal has begun: its chunks are no longer
    /// spilled.
    pub(super) sealing_through: AtomicI64,
    /// Out-of-order and late samples held beside the chunks.
    extra_samples: AtomicUsize,
    /// Series dropped from the head, for a while: labels by id, id by
    /// label hash.
    pub(super) recent: RecentSeries,
    /// Label hashes more than one series' labels share, with every id
    /// known to share it, so the `H` key written for one lists them all.
    /// A 64-bit hash makes this empty in practice.
    shared_hashes: Mutex<FxHashMap<u64, Vec<u64>>>,
    /// Series dropped from the head so far.
    pub(super) dropped: AtomicU64,
    /// The label hashes the store's `H` keys may hold.
    stored_hashes: HashFilter,
    /// Series whose chunk of a bucket being sealed is written and dropped,
    /// per bucket (see `released.rs`): none or one.
    pub(super) released: RwLock<Vec<Arc<Released>>>,
    /// Exemplars of every series, bounded in all.
    exemplars: ExemplarStore,
    /// Whether any series has had native histograms: reads of a head
    /// without look for none.
    holds_histograms: AtomicBool,
    /// The files the chunks' frozen runs are kept in, one a bucket.
    pub(super) runs: RunFiles,
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
        let active = idx.active_counter(super::tenant_of(labels));
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
        let active = idx.active_counter(super::tenant_of(&labels));
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
    /// compact sealed format (see [`HeadChunk`](super::chunk::HeadChunk));
    /// returns how many. Takes each series' lock in turn, briefly.
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
}
