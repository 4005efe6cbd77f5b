//! The log follower: records read in sequence order and applied to the
//! head, a batch at a time over one thread per partition.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use strata_codec::LogRecord;

use super::partition::{apply_partition, PartitionResult};
use super::series::fetch_series;
use crate::backend::{Backend, ScanKind};
use crate::error::StorageError;
use crate::head::{AppendPolicy, Head, MemSeries, NOT_WRITTEN};
use crate::keys;

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
    /// `kind` is how the log is read: `Bulk` for a recovery's whole log
    /// (on S3 a block at a time, one after another, takes minutes), `Short`
    /// for a follower's few new records.
    pub(crate) async fn catch_up(
        &mut self,
        db: &Backend,
        head: &Head,
        sealed_through: i64,
        kind: ScanKind,
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
            .scan_as(
                keys::log_key(self.next_seq).to_vec()..vec![keys::LOG + 1],
                kind,
            )
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
