//! Recovery and log following: rebuild the head from the checkpoint, the
//! forward index and the log records after the checkpoint. The writer does
//! this once at open; a reader node keeps doing it to stay fresh.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use rustc_hash::{FxHashMap, FxHashSet};
use strata_codec::LogRecord;

use crate::backend::{Backend, ScanKind};
use crate::error::StorageError;
use crate::head::{AppendPolicy, Head, MemSeries, NONE_SEALED, NOT_WRITTEN};
use crate::keys;
use crate::settings::StorageSettings;
use crate::values;

pub(crate) struct Recovered {
    pub head: Head,
    pub follower: LogFollower,
    pub frozen_through: i64,
    pub samples_replayed: usize,
    /// The checkpoint's first log record to replay; older ones are due for
    /// deletion.
    pub replay_from: u64,
}

pub(crate) async fn read_checkpoint(db: &Backend) -> Result<values::Checkpoint, StorageError> {
    match db.get(keys::CHECKPOINT).await? {
        Some(v) => values::decode_checkpoint(&v),
        None => Ok(values::Checkpoint::default()),
    }
}

/// The `M` key that says every `S` key has its `H` key (stores written
/// before the labels index have none until the writer adds them).
const SERIES_HASH_INDEXED: &[u8] = b"Mseries_hash_indexed";

/// Series resolved from their `S` keys at a time.
const SERIES_GETS_AHEAD: usize = 64;

/// Adds the series of `ids` the head does not hold, from their `S` keys;
/// returns those found (a series whose key has expired is gone with its
/// data).
pub(crate) async fn fetch_series(
    db: &Backend,
    head: &Head,
    ids: &[u64],
) -> Result<FxHashSet<u64>, StorageError> {
    let found: Vec<Option<u64>> = futures::stream::iter(ids.iter().copied())
        .map(|id| async move {
            if head.series_by_id(id).is_some() {
                return Ok(Some(id));
            }
            let Some(v) = db.get(&keys::series_key(id)).await? else {
                return Ok::<_, StorageError>(None);
            };
            let (written, labels) = values::decode_series(&v)?;
            head.insert_recovered(id, labels, written);
            Ok(Some(id))
        })
        .buffer_unordered(SERIES_GETS_AHEAD)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// Notes every label hash of the store's labels index (`H` keys) in the
/// head's filter, so a label set whose hash it has never seen skips the
/// store. A store written before the labels index gets one first: an `H`
/// key for every `S` key, once. Returns the hashes noted and whether the
/// index was built.
pub(crate) async fn load_series_hashes(
    db: &slatedb::Db,
    backend: &Backend,
    head: &Head,
    series_ttl: &slatedb::config::PutOptions,
) -> Result<(usize, bool), StorageError> {
    if backend.get(SERIES_HASH_INDEXED).await?.is_some() {
        let mut it = backend
            .scan_as(
                vec![keys::SERIES_HASH]..vec![keys::SERIES_HASH + 1],
                ScanKind::Bulk,
            )
            .await?;
        let mut n = 0;
        while let Some(kv) = it.next().await? {
            if let Some(hash) = keys::series_hash(&kv.key) {
                head.note_stored_hash(hash);
                n += 1;
            }
        }
        return Ok((n, false));
    }
    let mut by_hash: FxHashMap<u64, Vec<u64>> = FxHashMap::default();
    let mut it = backend
        .scan_as(vec![keys::SERIES]..vec![keys::SERIES + 1], ScanKind::Bulk)
        .await?;
    while let Some(kv) = it.next().await? {
        let Some(id) = keys::series_id(&kv.key) else {
            continue;
        };
        let (_, labels) = values::decode_series(&kv.value)?;
        by_hash
            .entry(crate::head::labels_hash(&labels[..]))
            .or_default()
            .push(id);
    }
    let n = by_hash.len();
    let mut batch = slatedb::WriteBatch::new();
    for (i, (hash, mut ids)) in by_hash.into_iter().enumerate() {
        ids.sort_unstable();
        batch.put_with_options(
            keys::series_hash_key(hash),
            values::encode_postings(&ids),
            series_ttl,
        );
        head.note_stored_hash(hash);
        if i % 4096 == 4095 {
            db.write(std::mem::take(&mut batch)).await?;
        }
    }
    batch.put(SERIES_HASH_INDEXED, []);
    db.write(batch).await?.await_durable().await?;
    Ok((n, true))
}

/// Records decoded before they are applied together, so the work can be
/// split over threads. A write batch holds one sample of each of its
/// series, so a series appears about once per scrape's worth of records:
/// batches of many records let [`apply_partition`] append several samples
/// per series lookup (about 1 M samples, 30 to 60 MB, at 2 000 per record).
const RECORDS_PER_APPLY: usize = 512;

/// Applies log records to a head in sequence order, from `next_seq` on.
///
/// Samples of different series are independent, so a batch of records is
/// applied by one thread per core, each taking the series whose id falls
/// in its partition and visiting them in log order.
pub(crate) struct LogFollower {
    /// The next log sequence number to read.
    pub next_seq: u64,
    /// First log seq that carries a sample of each unsealed bucket.
    pub open_buckets: BTreeMap<i64, u64>,
    /// One series cache per partition.
    partitions: Vec<FxHashMap<u64, Arc<MemSeries>>>,
    bucket_ms: i64,
    /// Whether samples of sealed buckets are kept (a writer) or skipped (a
    /// reader node).
    keep_late: bool,
}

/// What one partition applied: samples, and the first seq per bucket.
struct PartitionResult {
    applied: usize,
    extra: usize,
    open_buckets: BTreeMap<i64, u64>,
    /// Series the head does not hold, their samples left out.
    unknown: Vec<u64>,
}

impl LogFollower {
    pub(crate) fn new(next_seq: u64, bucket_ms: i64, keep_late: bool) -> Self {
        let threads = strata_codec::threads::available().clamp(1, 8);
        Self {
            next_seq,
            open_buckets: BTreeMap::new(),
            partitions: (0..threads).map(|_| FxHashMap::default()).collect(),
            bucket_ms,
            keep_late,
        }
    }

    /// Reads every log record from `next_seq` to the end and applies the
    /// samples of buckets after `sealed_through`. Returns samples applied.
    pub(crate) async fn catch_up(
        &mut self,
        db: &Backend,
        head: &Head,
        sealed_through: i64,
    ) -> Result<usize, StorageError> {
        let first_open = sealed_through.saturating_add(1);
        // Every logged sample was accepted when it was written. Late ones
        // (sealed buckets) are kept by a writer, which may not have
        // written them to the store yet, and skipped by a reader node,
        // which reads them from the store once the writer has.
        let policy = AppendPolicy {
            first_open,
            bucket_ms: self.bucket_ms,
            late_from: Some(i64::MIN),
            keep_late: self.keep_late,
            replay: true,
        };
        let mut applied = 0usize;
        let mut it = db
            .scan(keys::log_key(self.next_seq).to_vec()..vec![keys::LOG + 1])
            .await?;
        let mut pending: Vec<(u64, LogRecord)> = Vec::with_capacity(RECORDS_PER_APPLY);
        while let Some(kv) = it.next().await? {
            let Some(seq) = keys::log_seq(&kv.key) else {
                continue;
            };
            self.next_seq = self.next_seq.max(seq + 1);
            let mut record = match LogRecord::decode(&kv.value) {
                Ok(r) => r,
                Err(e) => {
                    // A record that does not decode cannot be replayed; say
                    // so loudly and keep the rest.
                    tracing::error!(seq, error = %e, "skipping corrupt log record");
                    continue;
                }
            };
            // New series first, so every partition finds them.
            for ns in std::mem::take(&mut record.new_series) {
                head.insert_recovered(ns.id, ns.labels, NOT_WRITTEN);
            }
            // Exemplars of unsealed buckets (those of sealed ones are in
            // the store: the seal's, or late ones written with their
            // record), each keeping its record until its bucket is sealed.
            for e in std::mem::take(&mut record.exemplars) {
                let b = e.exemplar.t.div_euclid(self.bucket_ms);
                if b >= first_open {
                    head.exemplars().add(e.series, &e.exemplar, i64::MAX);
                    let first_seq = self.open_buckets.entry(b).or_insert(seq);
                    *first_seq = (*first_seq).min(seq);
                }
            }
            pending.push((seq, record));
            if pending.len() >= RECORDS_PER_APPLY {
                applied += self.apply_all(&pending, db, head, &policy).await?;
                applied += self.apply_histograms(&pending, db, head, &policy).await?;
                pending.clear();
            }
        }
        applied += self.apply_all(&pending, db, head, &policy).await?;
        applied += self.apply_histograms(&pending, db, head, &policy).await?;
        Ok(applied)
    }

    /// Applies the native histograms of `records` of unsealed buckets
    /// (those of sealed ones are in the store: the seal's, or late ones
    /// written with their record), after their records' float samples.
    async fn apply_histograms(
        &mut self,
        records: &[(u64, LogRecord)],
        db: &Backend,
        head: &Head,
        policy: &AppendPolicy,
    ) -> Result<usize, StorageError> {
        let policy = AppendPolicy {
            keep_late: false,
            ..*policy
        };
        let mut ids: Vec<u64> = records
            .iter()
            .flat_map(|(_, r)| r.histograms.iter().map(|h| h.series))
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        ids.sort_unstable();
        ids.dedup();
        fetch_series(db, head, &ids).await?;
        let mut applied = 0;
        for (seq, record) in records {
            for h in &record.histograms {
                let Some(s) = head.series_by_id(h.series) else {
                    continue;
                };
                let sample = [(h.t, h.h.clone())];
                let out = s.append_histograms(&sample, &policy, |_, _, b| {
                    let first_seq = self.open_buckets.entry(b).or_insert(*seq);
                    *first_seq = (*first_seq).min(*seq);
                });
                applied += out.appended;
            }
        }
        if applied > 0 {
            head.note_histograms();
        }
        Ok(applied)
    }

    /// Applies `records`. Series the head does not hold (its labels were
    /// logged before the checkpoint, or the head dropped it) are read from
    /// their `S` keys, then their samples applied.
    async fn apply_all(
        &mut self,
        records: &[(u64, LogRecord)],
        db: &Backend,
        head: &Head,
        policy: &AppendPolicy,
    ) -> Result<usize, StorageError> {
        let (mut applied, unknown) = self.apply(records, head, policy, None);
        if !unknown.is_empty() {
            let found = fetch_series(db, head, &unknown).await?;
            if found.len() < unknown.len() {
                tracing::error!(
                    series = unknown.len() - found.len(),
                    "log records name series without labels in the store; their samples are skipped"
                );
            }
            applied += self.apply(records, head, policy, Some(&found)).0;
        }
        Ok(applied)
    }

    /// Applies the samples of `records` (of the series in `only`, if
    /// given); returns how many, and the ids of series the head does not
    /// hold, whose samples were left out.
    fn apply(
        &mut self,
        records: &[(u64, LogRecord)],
        head: &Head,
        policy: &AppendPolicy,
        only: Option<&FxHashSet<u64>>,
    ) -> (usize, Vec<u64>) {
        if records.is_empty() {
            return (0, Vec::new());
        }
        let parts = self.partitions.len();
        let results: Vec<PartitionResult> = if parts == 1 {
            self.partitions
                .iter_mut()
                .map(|cache| apply_partition(records, head, policy, (0, 1), only, cache))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .partitions
                    .iter_mut()
                    .enumerate()
                    .map(|(p, cache)| {
                        scope.spawn(move || {
                            apply_partition(records, head, policy, (p, parts), only, cache)
                        })
                    })
                    .collect();
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            })
        };
        let mut applied = 0;
        let mut unknown = Vec::new();
        for r in results {
            applied += r.applied;
            unknown.extend(r.unknown);
            head.extra_added(r.extra);
            for (b, seq) in r.open_buckets {
                let e = self.open_buckets.entry(b).or_insert(seq);
                *e = (*e).min(seq);
            }
        }
        (applied, unknown)
    }

    /// Forgets buckets up to `bucket` (sealed), and the series it has
    /// looked up: the head may have dropped them.
    pub(crate) fn sealed(&mut self, bucket: i64) {
        self.open_buckets.retain(|&b, _| b > bucket);
        for cache in &mut self.partitions {
            *cache = FxHashMap::default();
        }
    }
}

/// A sample of a batch bound for one partition, with the index of its
/// record in the batch.
struct Pending {
    series: u64,
    record: u32,
    t: i64,
    v: f64,
}

/// Applies the samples of the series in partition `part` of `parts`, each
/// series' in log order.
///
/// A write batch carries one sample of many series, so applying records
/// one after the other visits every series once per record, with its
/// chunk long out of cache. The partition's samples are grouped by series
/// first (a stable sort keeps each series' samples in log order), so one
/// lookup and one lock serve all of a series' samples in the batch.
fn apply_partition(
    records: &[(u64, LogRecord)],
    head: &Head,
    policy: &AppendPolicy,
    (part, parts): (usize, usize),
    only: Option<&FxHashSet<u64>>,
    cache: &mut FxHashMap<u64, Arc<MemSeries>>,
) -> PartitionResult {
    let mut result = PartitionResult {
        applied: 0,
        extra: 0,
        open_buckets: BTreeMap::new(),
        unknown: Vec::new(),
    };
    let mut mine = partition_samples(records, part, parts);
    mine.sort_by_key(|p| p.series);
    let seq_of = |p: &Pending| records.get(p.record as usize).map_or(0, |r| r.0);
    let mut buf: Vec<(i64, f64)> = Vec::new();
    for run in mine.chunk_by(|a, b| a.series == b.series) {
        let Some(first) = run.first() else {
            continue;
        };
        let id = first.series;
        if only.is_some_and(|o| !o.contains(&id)) {
            continue;
        }
        let series = match cache.get(&id) {
            Some(s) => s,
            None => match head.series_by_id(id) {
                Some(s) => cache.entry(id).or_insert(s),
                None => {
                    result.unknown.push(id);
                    continue;
                }
            },
        };
        buf.clear();
        buf.extend(run.iter().map(|p| (p.t, p.v)));
        // Appended samples come in run order, each the first sample with
        // its timestamp after the previous appended one, so a cursor over
        // the run finds each one's record.
        let open_buckets = &mut result.open_buckets;
        let mut cursor = run.iter();
        let mut last_bucket = None;
        let mut note = |t: i64, _: f64, b: i64| {
            let seq = cursor.find(|p| p.t == t).map_or(0, seq_of);
            if b >= policy.first_open && last_bucket != Some(b) {
                last_bucket = Some(b);
                let first_seq = open_buckets.entry(b).or_insert(seq);
                *first_seq = (*first_seq).min(seq);
            }
        };
        let mut out = series.append(&buf, policy, &mut note);
        if out.series_dropped {
            let live = head.revive(series);
            out = live.append(&buf, policy, &mut note);
            cache.insert(id, live);
        }
        result.applied += out.appended;
        result.extra += out.extra;
    }
    result
}

/// The samples of `records` whose series falls in partition `part`.
fn partition_samples(records: &[(u64, LogRecord)], part: usize, parts: usize) -> Vec<Pending> {
    let mut mine = Vec::new();
    for (i, (_, record)) in records.iter().enumerate() {
        mine.extend(
            record
                .samples
                .iter()
                .filter(|s| (s.series % parts as u64) as usize == part)
                .map(|s| Pending {
                    series: s.series,
                    record: i as u32,
                    t: s.t,
                    v: s.v,
                }),
        );
    }
    mine
}

/// What [`restore_spilled`] found.
#[derive(Default)]
struct Spilled {
    buckets: std::collections::BTreeSet<i64>,
    segments: usize,
    /// Each series' last spilled sample: the series' last sample after the
    /// replay if none replayed is newer.
    ends: Vec<SpilledEnd>,
}

/// A series, and the time and value of its last spilled sample.
type SpilledEnd = (std::sync::Arc<crate::head::MemSeries>, i64, f64);

/// The segments of one series and bucket, and the last one's value.
struct SegmentRun {
    bucket: i64,
    id: u64,
    segments: Vec<(i64, i64)>,
    samples: u32,
    last: bytes::Bytes,
}

fn segment_len(value: &[u8]) -> u32 {
    u32::try_from(strata_codec::chunk_len_hint(value)).unwrap_or(u32::MAX)
}

/// Runs of segments resolved and restored at a time.
const RUNS_PER_BATCH: usize = 1024;

/// Gives each series the segments its head spilled in buckets after
/// `sealed_through`, so the replay skips the samples they hold. Series the
/// head does not hold yet are read from their `S` keys.
async fn restore_spilled(
    db: &Backend,
    head: &Head,
    sealed_through: i64,
) -> Result<Spilled, StorageError> {
    let mut found = Spilled::default();
    let from = keys::chunk_prefix(sealed_through.saturating_add(1));
    let mut it = db
        .scan_as(from..vec![keys::CHUNK + 1], ScanKind::Bulk)
        .await?;
    let mut runs: Vec<SegmentRun> = Vec::new();
    while let Some(kv) = it.next().await? {
        let Some((bucket, id, first, last)) = keys::segment_parts(&kv.key) else {
            continue;
        };
        found.buckets.insert(bucket);
        found.segments += 1;
        match runs.last_mut() {
            Some(r) if r.bucket == bucket && r.id == id => {
                r.segments.push((first, last));
                r.samples = r.samples.saturating_add(segment_len(&kv.value));
                r.last = kv.value;
            }
            _ => {
                if runs.len() >= RUNS_PER_BATCH {
                    restore_runs(db, head, std::mem::take(&mut runs), &mut found.ends).await?;
                }
                runs.push(SegmentRun {
                    bucket,
                    id,
                    segments: vec![(first, last)],
                    samples: segment_len(&kv.value),
                    last: kv.value,
                });
            }
        }
    }
    restore_runs(db, head, runs, &mut found.ends).await?;
    Ok(found)
}

/// Gives each run's series its segments; notes the last spilled sample of
/// each in `ends`.
async fn restore_runs(
    db: &Backend,
    head: &Head,
    runs: Vec<SegmentRun>,
    ends: &mut Vec<SpilledEnd>,
) -> Result<(), StorageError> {
    let mut ids: Vec<u64> = runs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    fetch_series(db, head, &ids).await?;
    for run in runs {
        let SegmentRun {
            bucket,
            id,
            segments,
            samples,
            last,
        } = run;
        let Some(series) = head.series_by_id(id) else {
            tracing::error!(bucket, series = id, "spilled segment of an unknown series");
            continue;
        };
        let last_t = segments.last().map_or(i64::MAX, |s| s.1);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        strata_codec::decode_chunk_range_into(&last, last_t, last_t, &mut ts, &mut vs)?;
        series.restore_spilled(bucket, segments, samples);
        ends.push((series, last_t, vs.last().copied().unwrap_or(0.0)));
    }
    Ok(())
}

pub(crate) async fn recover(
    db: &Backend,
    settings: &StorageSettings,
) -> Result<Recovered, StorageError> {
    let writer = db.writer().is_some();
    let started = std::time::Instant::now();
    let cp = read_checkpoint(db).await?;
    let head = Head::new(cp.next_series_id, cp.sealed_through);
    head.exemplars().set_capacity(settings.max_exemplars);
    let sealed_through = cp.sealed_through.unwrap_or(NONE_SEALED);
    let spilled = restore_spilled(db, &head, sealed_through).await?;
    let mut follower = LogFollower::new(cp.replay_from, settings.bucket_ms(), writer);
    let replayed = follower.catch_up(db, &head, sealed_through).await?;
    // Spilled samples the log no longer held (or held only in part) are
    // still the series' newest if nothing replayed came after them.
    for (series, t, v) in &spilled.ends {
        series.raise_last(*t, *v);
    }
    follower.next_seq = follower.next_seq.max(cp.next_log_seq);
    // Series whose replayed samples were all spilled or sealed.
    head.drop_all_idle();
    let n_series = head.num_series();
    // A bucket with spilled segments is open even if none of its samples
    // is replayed; its log stays until it is sealed.
    for bucket in spilled.buckets {
        follower.open_buckets.insert(bucket, cp.replay_from);
    }
    let elapsed = started.elapsed();
    tracing::info!(
        series = n_series,
        spilled_segments = spilled.segments,
        samples = replayed,
        next_log_seq = follower.next_seq,
        elapsed_ms = elapsed.as_millis() as u64,
        sealed_through = ?cp.sealed_through,
        "recovered head from the log"
    );
    Ok(Recovered {
        head,
        follower,
        frozen_through: sealed_through,
        samples_replayed: replayed,
        replay_from: cp.replay_from,
    })
}
