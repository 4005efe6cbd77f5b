//! The writer's handle: the coordinator's queue, writes under limits and
//! durability, seals, spills, late passes, flush and close. Reads go
//! through the [`Storage`] it derefs to.

use std::ops::Deref;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_codec::LabelPairs;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::compact::{self, CompactPass};
use crate::coordinator::{Command, ResolvedSeries, WriteOutcome};
use crate::error::StorageError;
use crate::head::{self, Origin, Rejection};
use crate::late::{self, FoldPass, LatePass};
use crate::shared::Shared;
use crate::slatedb_options::GarbageTarget;
use crate::spill::{self, SpillPass};
use crate::storage::Storage;
use crate::write::{Durability, IngestSeries, WriteLimits};
use crate::{metadata, series_index, stats, stored};
use strata_codec::render::render_labels;

/// The one process that writes a database: series samples go through its
/// coordinator into the head and SlateDB's log; its sealer turns buckets
/// into chunks. A newer writer on the same path fences it.
pub struct Writer {
    storage: Arc<Storage>,
    shared: Arc<Shared>,
    /// The coordinator's queue.
    tx: mpsc::Sender<Command>,
    /// The coordinator's task, until close.
    task: Mutex<Option<JoinHandle<()>>>,
    /// Where garbage is collected once more after a clean close.
    collect_on_close: GarbageTarget,
}

impl Deref for Writer {
    type Target = Storage;

    fn deref(&self) -> &Storage {
        &self.storage
    }
}

impl Writer {
    pub(crate) fn new(
        storage: Arc<Storage>,
        tx: mpsc::Sender<Command>,
        task: JoinHandle<()>,
        collect_on_close: GarbageTarget,
    ) -> Self {
        let shared = Arc::clone(&storage.shared);
        Self {
            storage,
            shared,
            tx,
            task: Mutex::new(Some(task)),
            collect_on_close,
        }
    }

    /// The read handle of this database, to share with queries.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Deletes the samples in `[mint, maxt]` (ms, inclusive) of every
    /// series all `matchers` match, as Prometheus' `delete_series`: from
    /// the moment this returns no read on this writer returns them, the
    /// head's, sealed buckets' and blocks' alike; reader nodes leave them
    /// out from their next look at the deletions (every
    /// [`crate::TOMBSTONE_POLL`]). Durable before it returns.
    pub async fn delete_series(
        &self,
        matchers: &[strata_codec::Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<(), StorageError> {
        let tombstone = crate::state::tombstones::Tombstone {
            matchers: matchers.to_vec(),
            mint,
            maxt,
        };
        crate::tombstones::store(&self.shared, tombstone).await
    }

    fn db(&self) -> Result<&slatedb::Db, StorageError> {
        self.shared.backend.writer().ok_or(StorageError::ReadOnly)
    }

    /// Writes series samples and answers at the requested durability. The
    /// outcome counts appended, duplicate and rejected samples; rejected
    /// samples do not fail the call.
    ///
    /// Waits at most `write_timeout`, then fails as unavailable: SlateDB
    /// retries a failing object store without end, so a Durable write (or
    /// any write SlateDB holds back) would otherwise wait for the store to
    /// heal. Samples of a write that timed out may still be logged and
    /// become durable; a retry finds them as duplicates.
    pub async fn write<L: LabelPairs + Send + Sync>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
    ) -> Result<WriteOutcome, StorageError> {
        self.write_with(series, durability, WriteLimits::default())
            .await
    }

    /// [`Writer::write`] under `limits`: the samples of series past the
    /// tenant's active-series limit are rejected (counted in the outcome),
    /// the rest written. Limits that need no stored state (labels, future
    /// timestamps) are checked before, in `strata_write::validate`. Bounded by
    /// `write_timeout` as [`Writer::write`] is.
    pub async fn write_with<L: LabelPairs + Send + Sync>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
        limits: WriteLimits,
    ) -> Result<WriteOutcome, StorageError> {
        let limit = self.shared.settings.write_timeout;
        match tokio::time::timeout(limit, self.write_unbounded(series, durability, limits)).await {
            Ok(r) => r,
            Err(_) => {
                stats::add(&self.shared.stats.write_errors, 1);
                let unflushed = self.shared.unflushed_bytes();
                let most = self.shared.settings.max_unflushed_bytes;
                let why = if unflushed >= most {
                    format!(
                        "SlateDB holds writes back while its unflushed writes ({} MiB) are at \
                         storage.max_unflushed_bytes ({} MiB), until a memtable is written \
                         (its level-0 tables wait for its compactor, or the object store is \
                         failing or slow)",
                        unflushed >> 20,
                        most >> 20
                    )
                } else {
                    "the object store is failing or slow".to_owned()
                };
                Err(StorageError::Unavailable(format!(
                    "write not {} within {limit:?}: {why}; its samples may still be written \
                     and become durable",
                    match durability {
                        Durability::Applied => "applied",
                        Durability::Durable => "durable",
                    }
                )))
            }
        }
    }

    async fn write_unbounded<L: LabelPairs + Send + Sync>(
        &self,
        series: Vec<IngestSeries<L>>,
        durability: Durability,
        limits: WriteLimits,
    ) -> Result<WriteOutcome, StorageError> {
        if self.shared.is_fenced() {
            return Err(StorageError::Fenced(
                "a newer writer holds this path".into(),
            ));
        }
        let head = &self.shared.head;
        let mut refused = WriteOutcome::default();
        let mut refuse = |labels: &L, n: usize, why: Rejection| {
            refused.rejected += n;
            if refused.first_rejection.is_none() {
                refused.first_rejection = Some((render_labels(&labels.to_labels()), why));
            }
        };
        // Series this request activates, per tenant, on top of the count.
        let mut activated: rustc_hash::FxHashMap<String, usize> = Default::default();
        let mut new_series = 0;
        let mut kept: Vec<IngestSeries<L>> = series
            .into_iter()
            .filter(|s| {
                !s.samples.is_empty() || !s.exemplars.is_empty() || !s.histograms.is_empty()
            })
            .collect();
        let known = head.get_many(kept.iter().map(|s| &s.labels));
        // Label sets the head does not hold: the store may know them (a
        // series dropped from the head that comes back keeps its id).
        let unknown: Vec<&L> = kept
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(s, _)| &s.labels)
            .collect();
        let mut stored = series_index::stored_ids(&self.shared, &unknown)
            .await?
            .into_iter();
        drop(unknown);
        let mut returned = 0;
        let mut resolved = Vec::with_capacity(kept.len());
        let mut fresh = Vec::with_capacity(kept.len());
        let mut samples = Vec::with_capacity(kept.iter().map(|s| s.samples.len()).sum());
        for (s, known) in kept.iter_mut().zip(known) {
            let stored_id = if known.is_none() {
                stored.next().flatten()
            } else {
                None
            };
            let limit = limits.max_active_series;
            if limit > 0 && !known.as_ref().is_some_and(|m| m.is_active()) {
                let tenant = head::tenant_of(&s.labels);
                let extra = activated.entry(tenant.to_owned()).or_default();
                if head.active_series(tenant) + *extra >= limit {
                    let n = s.samples.len() + s.histograms.len();
                    refuse(&s.labels, n, Rejection::ActiveSeriesLimit { limit });
                    continue;
                }
                *extra += 1;
            }
            let (m, origin) = match known {
                Some(m) => (m, Origin::Head),
                None => head.get_or_create_as(&s.labels, stored_id),
            };
            new_series += usize::from(origin == Origin::New);
            returned += usize::from(origin == Origin::Returned);
            // A new series has nothing stored to compare late samples with.
            fresh.push(origin == Origin::New);
            let at = samples.len();
            samples.extend_from_slice(&s.samples);
            resolved.push(ResolvedSeries {
                series: m,
                samples: at..samples.len(),
                exemplars: std::mem::take(&mut s.exemplars),
                histograms: std::mem::take(&mut s.histograms),
            });
        }
        drop(kept);
        let bucket_ms = self.shared.settings.bucket_ms();
        if let (Some(sealed), Some(_)) =
            (head.sealed_through(), self.shared.settings.late_window_ms())
        {
            let sealed_end = sealed.saturating_add(1).saturating_mul(bucket_ms);
            if samples.iter().any(|&(t, _)| t < sealed_end) {
                let (series, kept) = stored::drop_stored(
                    &self.storage,
                    resolved,
                    &fresh,
                    samples,
                    sealed_end,
                    &mut refused,
                )
                .await?;
                resolved = series;
                samples = kept;
                // Late samples wait while the head holds many: the late
                // pass writes them out (bounded by write_timeout).
                while head.extra_samples() > late::LATE_MAX_SAMPLES {
                    if let Some(writer) = self.shared.writing() {
                        writer.late.note_added(head.extra_samples());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
        stats::add(&self.shared.stats.series_created, new_series);
        stats::add(&self.shared.stats.series_returned, returned);
        stats::add(&self.shared.stats.samples_rejected, refused.rejected);
        stats::add(&self.shared.stats.samples_duplicate, refused.duplicates);
        let tx = &self.tx;
        let (reply, rx) = oneshot::channel();
        tx.send(Command::Write {
            series: resolved,
            samples,
            new_series,
            reply,
        })
        .await
        .map_err(|_| StorageError::Closed)?;
        let (mut outcome, handle) = rx
            .await
            .map_err(|_| StorageError::Closed)?
            .map_err(|e| self.shared.note_fenced(e))?;
        outcome.rejected += refused.rejected;
        outcome.duplicates += refused.duplicates;
        if refused.first_rejection.is_some() {
            outcome.first_rejection = refused.first_rejection;
        }
        if durability == Durability::Durable {
            if let Some(h) = handle {
                let started = std::time::Instant::now();
                h.await_durable()
                    .await
                    .map_err(|e| self.shared.note_fenced(StorageError::from(e)))?;
                self.shared.stats.durable_wait.observe(started.elapsed());
            }
        }
        Ok(outcome)
    }

    /// Seals every bucket that is due now, and waits for it.
    pub async fn seal_due_now(&self) -> Result<(), StorageError> {
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Command::SealNow(done))
            .await
            .map_err(|_| StorageError::Closed)?;
        rx.await.map_err(|_| StorageError::Closed)?
    }

    /// Runs the head's background pass now: freezes chunk tails, then (on
    /// a writer) spills long frozen runs to the store and frees them.
    pub async fn freeze_and_spill_now(&self) -> Result<SpillPass, StorageError> {
        let inner = Arc::clone(&self.shared);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            inner.head.freeze_tails(head::FREEZE_MIN_SAMPLES);
            spill::spill_pass(&inner, &runtime)
        })
        .await
        .map_err(|e| StorageError::Unavailable(format!("spill pass: {e}")))?
    }

    /// Flushes SlateDB's WAL to the object store now.
    pub async fn flush(&self) -> Result<(), StorageError> {
        Ok(self.db()?.flush().await?)
    }

    /// Writes SlateDB's memtable out as a level-0 table now, as it does by
    /// itself once the memtable holds `storage.memtable_bytes`.
    pub async fn flush_memtable_now(&self) -> Result<(), StorageError> {
        crate::reclaim::flush_memtable(self.db()?).await
    }

    /// Writes the head's late samples (of sealed buckets) to the store now
    /// as late segments, and frees them.
    pub async fn flush_late_now(&self) -> Result<LatePass, StorageError> {
        late::flush(&self.shared, self.db()?).await
    }

    /// Folds the late segments of every sealed bucket into its chunks now.
    pub async fn fold_late_now(&self) -> Result<FoldPass, StorageError> {
        late::fold(&self.storage, true).await
    }

    /// Compacts every block whose buckets are all sealed now, and deletes
    /// the replaced buckets' keys at once when `delete_now` (else only
    /// once the last switch is `compaction_delete_delay` old, as the
    /// background pass does: reads that began before it may still need
    /// them).
    pub async fn compact_now(&self, delete_now: bool) -> Result<CompactPass, StorageError> {
        compact::compact(&self.storage, delete_now).await
    }

    /// Asks SlateDB to merge every table and run now if anything deleted
    /// or overwritten since the last such merge is counted (compaction asks
    /// by itself once that is a third of the tables' bytes); or says the
    /// merge asked for before is still running.
    pub async fn reclaim_now(&self) -> Result<crate::reclaim::ReclaimStep, StorageError> {
        crate::reclaim::check(&self.shared, true).await
    }

    /// SlateDB's writes not yet in a level-0 table (memtables and WAL
    /// buffer), by its estimate as of its last write: what
    /// `storage.max_unflushed_bytes` limits.
    pub fn unflushed_bytes(&self) -> u64 {
        self.shared.unflushed_bytes()
    }

    /// Bytes of SlateDB's tables (L0 and sorted runs), as its manifest
    /// says: what the store holds but for the log not yet in a table.
    pub fn table_bytes(&self) -> Result<u64, StorageError> {
        Ok(crate::reclaim::table_bytes(self.db()?))
    }

    /// Which buckets compacted blocks hold: every bucket before the one
    /// returned (`None` before the first block).
    pub fn compacted_through(&self) -> Option<i64> {
        let through = self.storage.shared.compacted().through;
        (through != crate::state::compacted::NONE_COMPACTED).then_some(through)
    }

    /// Stores metric metadata for `tenant` (`""` without tenants); only
    /// metrics whose entries changed are written. Returns how many were.
    pub async fn record_metadata(
        &self,
        tenant: &str,
        entries: &[(String, metadata::MetadataEntry)],
    ) -> Result<usize, StorageError> {
        metadata::record(&self.shared, tenant, entries).await
    }

    /// Requests waiting in the coordinator's queue.
    pub fn queue_depth(&self) -> usize {
        self.shared.settings.queue_capacity - self.tx.capacity()
    }

    /// Stops taking writes, finishes queued ones and any seal under way,
    /// then flushes and closes SlateDB.
    pub async fn close(&self) -> Result<(), StorageError> {
        let handle = self.task.lock().take();
        if let Some(handle) = handle {
            let (done, rx) = oneshot::channel();
            if self.tx.send(Command::Shutdown(done)).await.is_ok() {
                let _ = rx.await;
            }
            let _ = handle.await;
        }
        if self.shared.is_fenced() {
            return Ok(());
        }
        // The log would replay them too; written now, the next start has
        // less to replay.
        if let Err(e) = late::flush(&self.shared, self.db()?).await {
            tracing::warn!(error = %e, "cannot write late samples at close; the log keeps them");
        }
        self.shared.backend.close().await?;
        self.collect_on_close.collect_now().await;
        Ok(())
    }
}
