//! The write coordinator: applies write requests to the head in one ordered
//! stream and appends one log record per group of requests to SlateDB.
//!
//! Callers resolve series in parallel (on their own tasks) and send the
//! resolved request here; the coordinator drains whatever is queued (group
//! commit), applies it, writes one `L` record plus the `S` keys of series
//! logged for the first time, and answers each request with the outcome and
//! the SlateDB write handle (awaited by the caller for Durable).
//!
//! A group is flushed in steps: a batch a failed write left written first,
//! the group applied to the head (`apply.rs`), its counts, its log write,
//! the answers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use slatedb::config::{PutOptions, Ttl};
use slatedb::{WriteBatch, WriteHandle};
use strata_codec::histogram::{chunks_of, encode_chunk_list, HistogramSample};
use strata_codec::{Exemplar, LogRecord, LogRecordEncoder};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::StorageError;
use crate::head::{MemSeries, Rejection};
use crate::keys;
use crate::sealer::{self, SealJob};
use crate::shared::Shared;
use crate::stats::add;

mod apply;

use apply::{apply_group, Buckets};

/// One resolved series of a write request.
pub struct ResolvedSeries {
    pub series: Arc<MemSeries>,
    /// Its samples: a range of the request's samples, which travel to the
    /// coordinator in one buffer. The decoder's per-series vectors are
    /// freed by the request's own thread, where freeing is cheap.
    pub samples: std::ops::Range<usize>,
    /// Its exemplars, usually none.
    pub exemplars: Vec<Exemplar>,
    /// Its native histogram samples, usually none.
    pub histograms: Vec<(i64, HistogramSample)>,
}

/// A write request as the coordinator queues it.
pub(crate) struct Queued {
    series: Vec<ResolvedSeries>,
    samples: Vec<(i64, f64)>,
    new_series: usize,
    reply: oneshot::Sender<Reply>,
}

/// What became of one write request's samples.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct WriteOutcome {
    pub appended: usize,
    pub duplicates: usize,
    pub rejected: usize,
    /// The first rejected sample: its series and why.
    pub first_rejection: Option<(String, Rejection)>,
    pub new_series: usize,
    /// Exemplars stored (a retry's, already held, count too).
    pub exemplars: usize,
    /// Exemplars not stored: older than the out-of-order window (from now,
    /// or from the series' newest), or with the store turned off
    /// (`max_exemplars` 0).
    pub exemplars_refused: usize,
    /// Native histogram samples stored (a retry's duplicates count too);
    /// those refused count in `rejected`, as float samples do.
    pub histograms: usize,
}

pub(crate) type Reply = Result<(WriteOutcome, Option<WriteHandle>), StorageError>;

pub(crate) enum Command {
    Write {
        series: Vec<ResolvedSeries>,
        samples: Vec<(i64, f64)>,
        new_series: usize,
        reply: oneshot::Sender<Reply>,
    },
    /// Seal every due bucket now and answer when done (tests, shutdown).
    SealNow(oneshot::Sender<Result<(), StorageError>>),
    /// Finish what is queued before this, then stop.
    Shutdown(oneshot::Sender<()>),
}

/// A seal task, its bucket and the bucket's first log seq.
pub(crate) type SealUnderWay = (JoinHandle<Result<(), StorageError>>, i64, u64);

/// State owned by the coordinator task alone.
pub(crate) struct Coordinator {
    pub(crate) inner: Arc<Shared>,
    db: slatedb::Db,
    pub(crate) next_seq: u64,
    /// First log seq that carries a sample of each unsealed bucket.
    pub(crate) open_buckets: BTreeMap<i64, u64>,
    /// Buckets up to this one take no more samples (sealed or sealing).
    pub(crate) frozen_through: i64,
    /// The seal under way: its task, bucket and the bucket's first log seq
    /// (to put the bucket back if the seal fails).
    pub(crate) sealing: Option<SealUnderWay>,
    /// Log records from here on have not been deleted by a seal.
    log_kept_from: u64,
    /// Set to make a paced seal under way finish at full speed (shutdown,
    /// explicit seals).
    hurry: Arc<AtomicBool>,
    /// Signalled when a seal finishes, so the next due bucket (a backlog)
    /// starts at once instead of at the next check.
    seal_done: Arc<tokio::sync::Notify>,
    record: LogRecord,
    /// Compresses log records (none if zstd could not be set up: records
    /// are then written as they are).
    encoder: Option<LogRecordEncoder>,
    encoded: Vec<u8>,
    /// A batch already applied to the head whose write to SlateDB failed:
    /// it is written again before anything else, so every sample in the
    /// head reaches the log (a retried request finds its samples as
    /// duplicates and must not be answered before they are logged).
    unlogged: Option<WriteBatch>,
    /// The handle of the last log write, for requests that add nothing new
    /// (all duplicates) but ask for Durable.
    last_handle: Option<WriteHandle>,
}

impl Coordinator {
    pub(crate) fn new(
        inner: Arc<Shared>,
        db: slatedb::Db,
        next_seq: u64,
        open_buckets: BTreeMap<i64, u64>,
        frozen_through: i64,
        replay_from: u64,
    ) -> Self {
        Self {
            inner,
            db,
            next_seq,
            open_buckets,
            frozen_through,
            sealing: None,
            log_kept_from: replay_from,
            hurry: Arc::new(AtomicBool::new(false)),
            seal_done: Arc::new(tokio::sync::Notify::new()),
            record: LogRecord::default(),
            encoder: LogRecordEncoder::new()
                .inspect_err(|e| tracing::warn!(error = %e, "log records are written uncompressed"))
                .ok(),
            encoded: Vec::new(),
            unlogged: None,
            last_handle: None,
        }
    }

    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
        let mut tick = tokio::time::interval(self.inner.settings.seal_check_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let max_group = self.inner.settings.max_group_commit;
        let mut group = Vec::with_capacity(max_group);
        let mut shutdown = None;
        let seal_done = Arc::clone(&self.seal_done);
        while shutdown.is_none() {
            tokio::select! {
                biased;
                cmd = rx.recv() => {
                    let Some(cmd) = cmd else { break };
                    let mut next = Some(cmd);
                    while let Some(cmd) = next.take() {
                        match cmd {
                            Command::Write { series, samples, new_series, reply } => {
                                group.push(Queued { series, samples, new_series, reply });
                            }
                            Command::SealNow(done) => {
                                self.flush_group(&mut group).await;
                                let r = self.seal_due(true).await;
                                let _ = done.send(r);
                            }
                            Command::Shutdown(done) => {
                                shutdown = Some(done);
                                break;
                            }
                        }
                        if group.len() < max_group {
                            next = rx.try_recv().ok();
                        }
                    }
                    self.flush_group(&mut group).await;
                }
                _ = tick.tick() => {
                    if let Err(e) = self.seal_due(false).await {
                        tracing::warn!(error = %e, "sealing failed; will retry");
                    }
                }
                _ = seal_done.notified() => {
                    if let Err(e) = self.seal_due(false).await {
                        tracing::warn!(error = %e, "sealing failed; will retry");
                    }
                }
            }
        }
        if let Some((job, _, _)) = self.sealing.take() {
            self.hurry.store(true, Ordering::Relaxed);
            let _ = job.await;
        }
        if let Some(done) = shutdown {
            let _ = done.send(());
        }
    }

    /// Applies a group of write requests to the head, logs them as one
    /// record and answers each. A batch a failed log write left is written
    /// first; if it fails again, the group is answered with its error and
    /// not applied.
    async fn flush_group(&mut self, group: &mut Vec<Queued>) {
        if group.is_empty() {
            return;
        }
        if let Err(e) = self.write_unlogged().await {
            for q in group.drain(..) {
                let _ = q.reply.send(Err(e.clone()));
            }
            return;
        }
        let applying = std::time::Instant::now();
        let (outcomes, buckets) =
            apply_group(&self.inner, &mut self.record, self.frozen_through, group);
        self.count_applied(&outcomes, applying);
        let result = if self.record.samples.is_empty()
            && self.record.exemplars.is_empty()
            && self.record.histograms.is_empty()
        {
            Ok(self.last_handle.clone())
        } else {
            self.log(buckets).await
        };
        for (q, out) in group.drain(..).zip(outcomes) {
            let r = match &result {
                Ok(h) => Ok((out, h.clone())),
                Err(e) => Err(e.clone()),
            };
            let _ = q.reply.send(r);
        }
    }

    /// Writes the batch a failed log write left, if any (see `unlogged`);
    /// on failure it is kept for the next group.
    async fn write_unlogged(&mut self) -> Result<(), StorageError> {
        let Some(pending) = self.unlogged.take() else {
            return Ok(());
        };
        match self.timed_write(pending.clone()).await {
            Ok(h) => {
                self.last_handle = Some(h);
                Ok(())
            }
            Err(e) => {
                add(&self.inner.stats.write_errors, 1);
                self.unlogged = Some(pending);
                Err(self.inner.note_fenced(StorageError::from(e)))
            }
        }
    }

    /// Counts a group's apply time (from `applying`) and what became of
    /// its samples and histograms.
    fn count_applied(&self, outcomes: &[WriteOutcome], applying: std::time::Instant) {
        let stats = &self.inner.stats;
        stats.group_apply.observe(applying.elapsed());
        let appended: usize = outcomes.iter().map(|o| o.appended).sum();
        add(&stats.histograms_appended, self.record.histograms.len());
        add(&stats.samples_appended, appended);
        add(
            &stats.samples_duplicate,
            outcomes.iter().map(|o| o.duplicates).sum(),
        );
        add(
            &stats.samples_rejected,
            outcomes.iter().map(|o| o.rejected).sum(),
        );
    }

    /// Writes the group's log record under the next seq, in one batch with
    /// the late exemplars and histograms of `buckets`, and notes the seq as
    /// the first of each bucket it opened. The handle of the write, or its
    /// error: the samples are in the head already, so a failed batch
    /// (labels of new series included) is kept to be written first next
    /// time.
    async fn log(&mut self, buckets: Buckets) -> Result<Option<WriteHandle>, StorageError> {
        let seq = self.next_seq;
        let stats = &self.inner.stats;
        let mut batch = WriteBatch::new();
        self.encoded.clear();
        match &mut self.encoder {
            Some(encoder) => encoder.encode(&self.record, &mut self.encoded),
            None => self.record.encode(&mut self.encoded),
        }
        add(&stats.log_bytes, self.encoded.len());
        add(&stats.log_records, 1);
        let ttl = PutOptions {
            ttl: Ttl::ExpireAfterMillis(
                u64::try_from(self.inner.settings.log_retention.as_millis()).unwrap_or(u64::MAX),
            ),
        };
        batch.put_with_options(keys::log_key(seq), &self.encoded, &ttl);
        for ((bucket, series), list) in &buckets.late_exemplars {
            let mut value = Vec::new();
            strata_codec::encode_exemplars(list, &mut value);
            batch.put_with_options(
                keys::late_exemplar_key(*bucket, *series, seq),
                value,
                &self.inner.span_ttl(*bucket),
            );
        }
        for ((bucket, series), mut list) in buckets.late_histograms {
            list.sort_by_key(|(t, _)| *t);
            list.dedup_by_key(|(t, _)| *t);
            let mut value = Vec::new();
            // Validated on the way in: every sample fits some chunk.
            encode_chunk_list(&chunks_of(&list).unwrap_or_default(), &mut value);
            batch.put_with_options(
                keys::late_histogram_key(bucket, series, seq),
                value,
                &self.inner.span_ttl(bucket),
            );
        }
        self.next_seq += 1;
        for b in buckets.touched {
            self.open_buckets.entry(b).or_insert(seq);
        }
        match self.timed_write(batch.clone()).await {
            Ok(h) => {
                self.last_handle = Some(h.clone());
                Ok(Some(h))
            }
            Err(e) => {
                add(&stats.write_errors, 1);
                self.unlogged = Some(batch);
                Err(self.inner.note_fenced(StorageError::from(e)))
            }
        }
    }

    /// One log write to SlateDB, timed for `/metrics`.
    async fn timed_write(&self, batch: WriteBatch) -> Result<WriteHandle, slatedb::Error> {
        let started = std::time::Instant::now();
        let r = self.db.write(batch).await;
        self.inner.stats.log_write.observe(started.elapsed());
        r
    }

    /// Starts sealing the oldest due bucket, unless a seal is under way.
    /// With `wait`, seals every due bucket before returning.
    async fn seal_due(&mut self, wait: bool) -> Result<(), StorageError> {
        if wait {
            self.hurry.store(true, Ordering::Relaxed);
        }
        loop {
            if let Some((job, _, _)) = &self.sealing {
                if !job.is_finished() && !wait {
                    // Another bucket came due while this one is spread:
                    // no quiet time is left to spread it over.
                    let due_through = self.inner.settings.due_through(self.inner.clock.now_ms());
                    if self
                        .open_buckets
                        .keys()
                        .next()
                        .is_some_and(|&next| next <= due_through)
                    {
                        self.hurry.store(true, Ordering::Relaxed);
                    }
                    return Ok(());
                }
            }
            if let Some((job, bucket, first_seq)) = self.sealing.take() {
                let failed = match job.await {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(e) => Some(StorageError::Unavailable(format!("seal task: {e}"))),
                };
                if let Some(e) = failed {
                    add(&self.inner.stats.seal_errors, 1);
                    self.open_buckets.insert(bucket, first_seq);
                    return Err(e);
                }
            }
            let Some((&bucket, &first_seq)) = self.open_buckets.iter().next() else {
                return Ok(());
            };
            let due_through = self.inner.settings.due_through(self.inner.clock.now_ms());
            if bucket > due_through {
                return Ok(());
            }
            self.open_buckets.remove(&bucket);
            self.frozen_through = self.frozen_through.max(bucket);
            // Pacing spreads the seal of the bucket that just closed over
            // the quiet time before the next one does. With more buckets
            // already due (a backlog after downtime, or backfilled history)
            // there is no such time: paced, each would take the spread and
            // a day of backlog more than a week.
            let backlog = self
                .open_buckets
                .keys()
                .next()
                .is_some_and(|&next| next <= due_through);
            let replay_from = self
                .open_buckets
                .values()
                .copied()
                .min()
                .unwrap_or(self.next_seq);
            let job = SealJob {
                bucket,
                replay_from,
                next_log_seq: self.next_seq,
                delete_log_from: self.log_kept_from,
                hurry: Arc::clone(&self.hurry),
            };
            self.hurry.store(wait || backlog, Ordering::Relaxed);
            self.log_kept_from = self.log_kept_from.max(replay_from);
            let inner = Arc::clone(&self.inner);
            let (db, done) = (self.db.clone(), Arc::clone(&self.seal_done));
            self.sealing = Some((
                tokio::spawn(async move {
                    let sealed = sealer::seal(inner, db, job).await;
                    done.notify_one();
                    sealed
                }),
                bucket,
                first_seq,
            ));
            if !wait {
                return Ok(());
            }
        }
    }
}
