//! The sealer: turns one bucket of the head into sealed chunks (`C`) and
//! postings (`I`), writes the series-index keys (`S`, `H`) of series new to
//! the store and refreshes those about to expire,
//! records the checkpoint (`M`) recovery starts from, and deletes the log
//! records the checkpoint no longer needs.
//!
//! A bucket of a million series is gigabytes of chunks and minutes of CPU
//! (decode, then re-encode in the sealed format). Written at once it would
//! take a core from ingest and fill SlateDB's write buffer until SlateDB
//! holds every write back, the coordinator's included. So the encoding runs
//! on a thread of its own at a lower scheduling priority, and its batches
//! are written one at a time, each waiting for its WAL flush, spread over
//! `seal_spread`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slatedb::WriteBatch;
use strata_codec::LabelPairs;
use tokio::sync::mpsc;

use crate::error::StorageError;
use crate::head::MemSeries;
use crate::keys;
use crate::packed_batch::Batch;
use crate::series_index::Held;
use crate::shared::Shared;
use crate::stats::add;
use crate::values::{self, Checkpoint};

/// Keys per SlateDB write batch while sealing: about 2 MB of chunks for
/// hour buckets at 2 s scrapes.
const KEYS_PER_BATCH: usize = 1024;

/// Batches the encoding thread may run ahead of the writes.
const BATCHES_AHEAD: usize = 2;

/// Longest pause between two batches of a paced seal, so a request to
/// hurry is seen soon.
const HURRY_CHECK: Duration = Duration::from_millis(500);

pub(crate) struct SealJob {
    pub bucket: i64,
    pub replay_from: u64,
    pub next_log_seq: u64,
    /// Log records from here up to `replay_from` are deleted once the
    /// checkpoint is written: every sample in them is sealed.
    pub delete_log_from: u64,
    /// Once set, the writes go at full speed instead of being spread over
    /// `seal_spread` (shutdown, explicit seals).
    pub hurry: Arc<AtomicBool>,
}

/// One batch from the encoding thread, and how many series it completes.
struct Encoded {
    batch: WriteBatch,
    series_done: usize,
    /// Series whose `S` and `H` keys the batch writes, at `now`.
    indexed: Vec<Arc<MemSeries>>,
    now: i64,
    /// Series whose chunk of the bucket the batch writes: the head lets
    /// their chunks go once it is durable (see `head/released.rs`).
    stored: Vec<Arc<MemSeries>>,
}

/// Sizes of what a seal wrote.
#[derive(Default)]
struct Written {
    series: usize,
    chunk_bytes: usize,
    index_bytes: usize,
}

pub(crate) async fn seal(
    inner: Arc<Shared>,
    db: slatedb::Db,
    job: SealJob,
) -> Result<(), StorageError> {
    let started = Instant::now();
    let bucket = job.bucket;
    {
        // No segment of the bucket is spilled after this: the chunk keys
        // written below list every segment there is.
        let _spilling = inner
            .writing()
            .ok_or(StorageError::ReadOnly)?
            .spill_lock
            .lock()
            .await;
        inner.head.begin_seal(bucket);
    }
    let series = inner.head.all_series();
    let total = series.len().max(1);
    let spread = inner.settings.effective_seal_spread();

    let (tx, mut rx) = mpsc::channel::<Encoded>(BATCHES_AHEAD);
    let encoder = {
        let inner = Arc::clone(&inner);
        crate::worker::run_on_worker(move || encode_bucket(&inner, bucket, &series, &tx))
            .map_err(|e| StorageError::Unavailable(format!("cannot start the sealer: {e}")))?
    };

    let mut done = 0usize;
    let mut failed = None;
    while let Some(encoded) = rx.recv().await {
        // Not ahead of the schedule: the batch after series `done` of
        // `total` starts `spread * done / total` after the start, so the
        // work is spread and the last batch ends the seal (a bucket of one
        // batch is sealed at once).
        let due = spread.mul_f64(done as f64 / total as f64);
        while !job.hurry.load(Ordering::Relaxed) {
            match due.checked_sub(started.elapsed()) {
                Some(wait) if !wait.is_zero() => tokio::time::sleep(wait.min(HURRY_CHECK)).await,
                _ => break,
            }
        }
        inner.room_for_background(&job.hurry).await;
        if let Err(e) = write_durably(&db, encoded.batch).await {
            failed = Some(e);
            break;
        }
        crate::series_index::written(&encoded.indexed, encoded.now);
        inner.head.release_sealed(bucket, &encoded.stored);
        done += encoded.series_done;
    }
    // Dropping the receiver stops an encoder that is still running.
    drop(rx);
    let written = encoder
        .await
        .map_err(|_| StorageError::Unavailable("sealer: the encoding thread is gone".into()))?
        .map_err(|_| StorageError::Unavailable("the sealer's encoding panicked".into()))??;
    if let Some(e) = failed {
        return Err(e);
    }

    let exemplars = write_exemplars(&inner, &db, bucket).await?;

    // Late samples of older buckets logged before this seal began are
    // written before the checkpoint lets their log records go.
    crate::late::flush(&inner, &db).await?;
    let checkpoint = Checkpoint {
        sealed_through: Some(bucket),
        replay_from: job.replay_from,
        next_series_id: inner.head.next_series_id(),
        next_log_seq: job.next_log_seq,
    };
    let mut batch = WriteBatch::new();
    batch.put(keys::CHECKPOINT, values::encode_checkpoint(&checkpoint));
    write_durably(&db, batch).await?;
    let dropped = {
        let inner = Arc::clone(&inner);
        tokio::task::spawn_blocking(move || inner.head.mark_sealed(bucket))
            .await
            .map_err(|e| StorageError::Unavailable(format!("sealer: {e}")))?
    };
    let deleted = delete_log(&db, job.delete_log_from, job.replay_from).await?;

    let stats = &inner.stats;
    add(&stats.buckets_sealed, 1);
    add(&stats.sealed_chunk_bytes, written.chunk_bytes);
    add(&stats.sealed_index_bytes, written.index_bytes);
    stats.seal_duration.observe(started.elapsed());
    tracing::info!(
        bucket,
        series = written.series,
        chunk_bytes = written.chunk_bytes,
        index_bytes = written.index_bytes,
        log_records_deleted = deleted,
        series_dropped = dropped,
        exemplars,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "sealed bucket"
    );
    Ok(())
}

/// Writes the head's exemplars of `bucket` to its `E` keys, before the
/// checkpoint lets the log records that carry them go; returns how many.
async fn write_exemplars(
    inner: &Shared,
    db: &slatedb::Db,
    bucket: i64,
) -> Result<usize, StorageError> {
    let bucket_ms = inner.settings.bucket_ms();
    let start = bucket.saturating_mul(bucket_ms);
    let end = start.saturating_add(bucket_ms - 1);
    let mut by_series: Vec<(u64, Vec<strata_codec::Exemplar>)> = inner
        .head
        .exemplars()
        .select(start, end, |_| true)
        .into_iter()
        .collect();
    by_series.sort_unstable_by_key(|(id, _)| *id);
    let expire = inner.span_ttl(bucket);
    let mut written = 0;
    for part in by_series.chunks(KEYS_PER_BATCH) {
        let mut batch = WriteBatch::new();
        for (id, list) in part {
            let mut value = Vec::new();
            strata_codec::encode_exemplars(list, &mut value);
            batch.put_with_options(keys::exemplar_key(bucket, *id), value, &expire);
            written += list.len();
        }
        write_durably(db, batch).await?;
    }
    Ok(written)
}

/// Writes `batch` and waits until its WAL is in the object store, so a seal
/// never has more than a batch or two in SlateDB's write buffer.
async fn write_durably(db: &slatedb::Db, batch: WriteBatch) -> Result<(), StorageError> {
    db.write(batch).await?.await_durable().await?;
    Ok(())
}

/// Deletes the log records `from..to`; the checkpoint replays from `to`.
/// A crash before they are gone leaves them to their TTL.
async fn delete_log(db: &slatedb::Db, from: u64, to: u64) -> Result<u64, StorageError> {
    let mut seq = from;
    while seq < to {
        let end = to.min(seq.saturating_add(KEYS_PER_BATCH as u64 * 4));
        let mut batch = WriteBatch::new();
        for s in seq..end {
            batch.delete(keys::log_key(s));
        }
        write_durably(db, batch).await?;
        seq = end;
    }
    Ok(to.saturating_sub(from))
}

/// Encodes the bucket's chunks and postings into batches for the writer
/// side, on the sealer thread. Stops early, without error, if the writer
/// side has gone (its write failed).
fn encode_bucket(
    inner: &Shared,
    bucket: i64,
    series: &[Arc<MemSeries>],
    tx: &mpsc::Sender<Encoded>,
) -> Result<Written, StorageError> {
    let expire = inner.span_ttl(bucket);
    let now = inner.clock.now_ms();
    // Series an earlier run of this seal released (it failed after): this
    // run releases only series it has passed, so the set as it is now will
    // do.
    let released = inner.head.released_set(bucket);

    let mut written = Written::default();
    let mut batch = Batch::new();
    let mut in_batch = 0;
    let mut series_done = 0;
    // Ascending ids (`series` is in id order), held as deltas.
    let mut postings: BTreeMap<(&str, &str), values::PostingsBuilder> = BTreeMap::new();
    let mut all = values::PostingsBuilder::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let mut indexed = Vec::new();
    let mut stored = Vec::new();
    let send = |batch: &mut Batch,
                series_done: &mut usize,
                indexed: &mut Vec<Arc<MemSeries>>,
                stored: &mut Vec<Arc<MemSeries>>| {
        let encoded = Encoded {
            batch: std::mem::take(batch).into_write_batch(),
            series_done: std::mem::take(series_done),
            indexed: std::mem::take(indexed),
            now,
            stored: std::mem::take(stored),
        };
        tx.blocking_send(encoded).is_ok()
    };
    for s in series {
        series_done += 1;
        // Native histograms stay in the head until the checkpoint: written
        // by every run of the seal.
        let histograms = s.seal_histograms(bucket);
        let mut listed = false;
        // Whether this run writes data of the series.
        let mut writes = false;
        if let Some(h) = histograms {
            written.chunk_bytes += h.len();
            batch.put_with_options(keys::histogram_key(bucket, s.id), h, &expire);
            listed = true;
            writes = true;
            in_batch += 1;
        }
        if released.as_ref().is_some_and(|r| r.contains(s.id)) {
            // Written by an earlier run of this seal, which failed after:
            // the store holds the chunk, the head no longer does.
            listed = true;
        } else if let Some(chunk) = seal_chunk(inner, bucket, s, &mut batch, &mut ts, &mut vs)? {
            written.chunk_bytes += chunk;
            stored.push(Arc::clone(s));
            listed = true;
            writes = true;
            in_batch += 1;
        }
        if !listed {
            continue;
        }
        if writes {
            // The series' labels reach the store with its first data there
            // (and are refreshed before they expire): once the bucket is
            // sealed, the head may drop the series and its log records go.
            // It is found by its labels in the store once it holds nothing
            // newer (`series_index`).
            let held = Held::after(s, bucket);
            written.index_bytes +=
                crate::series_index::put_if_due(inner, &mut batch, s, now, held, &mut indexed);
        }
        all.push(s.id);
        written.series += 1;
        for (name, value) in s.labels.pairs() {
            postings.entry((name, value)).or_default().push(s.id);
        }
        if in_batch >= KEYS_PER_BATCH {
            if !send(&mut batch, &mut series_done, &mut indexed, &mut stored) {
                return Ok(written);
            }
            in_batch = 0;
        }
    }
    let all_value = all.finish();
    written.index_bytes += all_value.len();
    batch.put_with_options(keys::all_postings_key(bucket), all_value, &expire);
    for ((name, value), ids) in &postings {
        let v = ids.finish();
        written.index_bytes += v.len();
        batch.put_with_options(keys::postings_key(bucket, name, value), v, &expire);
        in_batch += 1;
        if in_batch >= KEYS_PER_BATCH {
            if !send(&mut batch, &mut series_done, &mut indexed, &mut stored) {
                return Ok(written);
            }
            in_batch = 0;
        }
    }
    send(&mut batch, &mut series_done, &mut indexed, &mut stored);
    Ok(written)
}

/// Puts the series' sealed chunk of `bucket` in `batch`: one per series and
/// bucket, from the head chunk's frozen run and tail; after segments the
/// head spilled, a chunk key listing them with the rest. Returns the bytes
/// written, `None` when the series has no floats in the bucket.
fn seal_chunk(
    inner: &Shared,
    bucket: i64,
    s: &MemSeries,
    batch: &mut Batch,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<Option<usize>, StorageError> {
    let expire = inner.span_ttl(bucket);
    ts.clear();
    vs.clear();
    let Some(taken) = s.seal_samples(bucket, ts, vs)? else {
        return Ok(None);
    };
    let mut written = 0;
    let spilled = taken.spilled;
    if let (Some(&first), Some(&last)) = (taken.late.0.first(), taken.late.0.last()) {
        // Out-of-order samples beside spilled segments, which they may
        // fall between: a late segment, folded in later.
        let mut late = Vec::new();
        strata_codec::encode_sealed(&taken.late.0, &taken.late.1, &mut late);
        written += late.len();
        let seq = inner
            .writing()
            .ok_or(StorageError::ReadOnly)?
            .late
            .next_seq();
        batch.put_with_options(
            keys::late_segment_key(bucket, s.id, first, last, seq),
            late,
            &expire,
        );
        batch.put_with_options(keys::late_key(bucket, s.id), [], &expire);
    }
    let mut bytes = Vec::new();
    if !ts.is_empty() {
        strata_codec::encode_sealed(ts, vs, &mut bytes);
    }
    if !spilled.is_empty() {
        bytes = values::encode_segmented(&spilled, &bytes);
    } else if bytes.is_empty() {
        return Ok(None);
    }
    written += bytes.len();
    batch.put_with_options(keys::chunk_key(bucket, s.id), bytes, &expire);
    Ok(Some(written))
}
