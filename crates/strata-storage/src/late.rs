//! Late samples: samples of buckets already sealed (a sender's backlog
//! after an outage, backfilled or imported history, out-of-order samples
//! beside spilled segments).
//!
//! ```text
//!  coordinator: logged like every sample, kept in the head beside the chunks
//!  late pass:   head ─▶ `C | bucket | series | first | last | seq` late segment
//!               + `J | bucket | series` marker ─▶ freed from the head
//!  reads:       a sealed bucket's chunk, then its late segments merged in
//!               (a later write wins a timestamp held twice)
//!  fold:        chunk + late segments ─▶ one chunk; postings of series that
//!               joined late; late segments, spilled segments and `J` deleted
//! ```
//!
//! The late pass runs every few seconds while the head holds late samples,
//! and at once when it holds many (a backfill); the seal runs it before its
//! checkpoint lets the log records go. A bucket is folded once no late
//! segment has been written to it for a while, so reads go back to one
//! chunk per series and bucket, and its bytes to the in-order figure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use slatedb::WriteBatch;
use strata_codec::LabelPairs;

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys::{self, Span};
use crate::packed_batch::Batch;
use crate::series_index::Held;
use crate::shared::Shared;
use crate::stats::add;
use crate::storage::Storage;
use crate::values;

/// Series handled per write batch of the late pass and the fold.
const SERIES_PER_BATCH: usize = 1024;

/// Up to this many postings keys a fold reads one by one; more, it scans
/// the bucket's postings once.
const POSTINGS_GETS_UP_TO: usize = 256;

/// How often the late pass looks at the head while it holds late samples.
pub(crate) const LATE_INTERVAL: Duration = Duration::from_secs(2);

/// Late samples in the head above which writes wait for the late pass:
/// the head's memory stays bounded however fast history is sent.
pub(crate) const LATE_MAX_SAMPLES: usize = 8 << 20;

/// A bucket is folded once no late segment was written to it for this
/// long: a backfill writing one bucket in many requests is folded once.
pub(crate) const FOLD_QUIET: Duration = Duration::from_secs(30);

/// How often the background pass looks for buckets to fold.
pub(crate) const FOLD_INTERVAL: Duration = Duration::from_secs(30);

/// What one late pass wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatePass {
    pub segments: usize,
    pub samples: usize,
    pub bytes: usize,
}

/// What one fold did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldPass {
    pub buckets: usize,
    pub series: usize,
    /// Series that joined their bucket late, added to its postings.
    pub joined: usize,
    /// Late and spilled segment keys deleted.
    pub segments_deleted: usize,
}

/// Writes the head's late samples of sealed buckets as late segments and
/// frees them. Nothing on a reader.
pub(crate) async fn flush(inner: &Shared, db: &slatedb::Db) -> Result<LatePass, StorageError> {
    let mut pass = LatePass::default();
    let Some(sealed) = inner.head.sealed_through() else {
        return Ok(pass);
    };
    if inner.head.extra_samples() == 0 {
        return Ok(pass);
    }
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
    let _writing = writer.late.lock.lock().await;
    let series = inner.head.all_series();
    let now = inner.clock.now_ms();
    // Under the lock, so compaction does not move meanwhile: samples of a
    // bucket a block holds go to the block.
    let through = inner.compacted().through;
    for part in series.chunks(SERIES_PER_BATCH * 4) {
        let mut batch = Batch::new();
        let mut taken = Vec::new();
        let mut indexed = Vec::new();
        let mut buckets = Vec::new();
        for s in part {
            if !s.has_late(sealed) {
                continue;
            }
            // A series whose first data in the store is late (history
            // imported into sealed buckets) gets its labels there now, and
            // its `H` key if it holds nothing newer: the head may drop it.
            let held = Held::after(s, sealed);
            crate::series_index::put_if_due(inner, &mut batch, s, now, held, &mut indexed);
            for (bucket, ts, vs) in s.take_late(sealed) {
                let (Some(&first), Some(&last)) = (ts.first(), ts.last()) else {
                    continue;
                };
                let mut bytes = Vec::new();
                strata_codec::encode_sealed(&ts, &vs, &mut bytes);
                let span = inner.span_of(bucket, through);
                let ttl = inner.span_ttl(span);
                pass.segments += 1;
                pass.samples += ts.len();
                pass.bytes += bytes.len();
                batch.put_with_options(
                    keys::late_segment_key(span, s.id, first, last, writer.late.next_seq()),
                    bytes,
                    &ttl,
                );
                batch.put_with_options(keys::late_key(span, s.id), [], &ttl);
                if !buckets.contains(&span) {
                    buckets.push(span);
                }
            }
            taken.push(Arc::clone(s));
        }
        if taken.is_empty() {
            continue;
        }
        // Durable before the head lets go: a seal may delete the log
        // records holding these samples right after.
        let batch = batch.into_write_batch();
        let written = async { db.write(batch).await?.await_durable().await };
        if let Err(e) = written.await {
            add(&inner.stats.late_errors, 1);
            return Err(inner.note_fenced(e.into()));
        }
        crate::series_index::written(&indexed, now);
        let freed: usize = taken.iter().map(|s| s.late_written()).sum();
        inner.head.extra_freed(freed);
        let mut at = writer.late.written.lock();
        for b in buckets {
            at.insert(b, now);
        }
    }
    add(&inner.stats.late_segments, pass.segments);
    add(&inner.stats.late_samples, pass.samples);
    Ok(pass)
}

/// Folds the late segments of sealed buckets into their chunks: every
/// bucket with late segments when `all`, else those no late segment was
/// written to for [`FOLD_QUIET`].
pub(crate) async fn fold(storage: &Storage, all: bool) -> Result<FoldPass, StorageError> {
    let inner = &storage.shared;
    let mut pass = FoldPass::default();
    let (Some(db), Some(writer), Some(sealed)) = (
        inner.backend.writer(),
        inner.writing(),
        inner.head.sealed_through(),
    ) else {
        return Ok(pass);
    };
    let mut pending: BTreeMap<Span, Vec<u64>> = BTreeMap::new();
    for tag in [keys::LATE, keys::BLOCK_LATE] {
        let mut it = inner.backend.scan(vec![tag]..vec![tag + 1]).await?;
        while let Some(kv) = it.next().await? {
            if let Some((span, id)) = keys::late_key_parts(&kv.key) {
                pending.entry(span).or_default().push(id);
            }
        }
    }
    let now = inner.clock.now_ms();
    let quiet = i64::try_from(FOLD_QUIET.as_millis()).unwrap_or(i64::MAX);
    for (span, ids) in pending {
        if span.start() > sealed {
            continue;
        }
        let recent = writer
            .late
            .written
            .lock()
            .get(&span)
            .is_some_and(|&at| now.saturating_sub(at) < quiet);
        if recent && !all {
            continue;
        }
        let _writing = writer.late.lock.lock().await;
        if matches!(span, Span::Bucket(b) if b < inner.compacted().through) {
            // A block holds the bucket now, these late segments included;
            // its keys are deleted with the bucket's.
            continue;
        }
        let started = std::time::Instant::now();
        let folded = fold_bucket(storage, db, span, &ids).await?;
        writer.late.written.lock().remove(&span);
        pass.buckets += 1;
        pass.series += folded.series;
        pass.joined += folded.joined;
        pass.segments_deleted += folded.segments_deleted;
        tracing::info!(
            span = ?span,
            series = folded.series,
            joined = folded.joined,
            segments_deleted = folded.segments_deleted,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "folded late segments into the bucket's chunks"
        );
    }
    add(&inner.stats.buckets_folded, pass.buckets);
    Ok(pass)
}

/// Folds the late segments of `ids` in sealed `bucket`. Postings first (a
/// series that joined late is found through its `J` key until then), then
/// per batch of series their new chunks with their old segments and `J`
/// keys deleted in the same batch, so a read sees a series before or after
/// its fold, never half of it.
async fn fold_bucket(
    storage: &Storage,
    db: &slatedb::Db,
    bucket: Span,
    ids: &[u64],
) -> Result<FoldPass, StorageError> {
    let inner = &storage.shared;
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
    let ttl = inner.span_ttl(bucket);
    let mut pass = FoldPass::default();

    let mut all = Vec::new();
    if let Some(v) = inner.backend.get(&keys::all_postings_key(bucket)).await? {
        values::decode_postings(&v, &mut all)?;
    }
    let joined: Vec<u64> = ids
        .iter()
        .copied()
        .filter(|id| all.binary_search(id).is_err())
        .collect();
    if !joined.is_empty() {
        let mut lists: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
        for &id in &joined {
            let Some(labels) = storage.labels_of(id).await? else {
                tracing::error!(span = ?bucket, series = id, "late segment of an unknown series");
                continue;
            };
            for (name, value) in labels.pairs() {
                lists
                    .entry((name.to_owned(), value.to_owned()))
                    .or_default()
                    .push(id);
            }
        }
        // The postings they join: a few read one by one, many by one scan
        // of the bucket's postings.
        let mut stored: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
        if lists.len() > POSTINGS_GETS_UP_TO {
            let prefix = keys::postings_bucket_prefix(bucket);
            let end = keys::prefix_end(&prefix);
            let mut it = inner.backend.scan_as(prefix..end, ScanKind::Bulk).await?;
            while let Some(kv) = it.next().await? {
                let Some((name, value)) = keys::postings_name_value(&kv.key) else {
                    continue;
                };
                let pair = (name.to_owned(), value.to_owned());
                if lists.contains_key(&pair) {
                    let mut have = Vec::new();
                    values::decode_postings(&kv.value, &mut have)?;
                    stored.insert(pair, have);
                }
            }
        } else {
            for (name, value) in lists.keys() {
                let key = keys::postings_key(bucket, name, value);
                if let Some(v) = inner.backend.get(&key).await? {
                    let mut have = Vec::new();
                    values::decode_postings(&v, &mut have)?;
                    stored.insert((name.clone(), value.clone()), have);
                }
            }
        }
        let mut batch = WriteBatch::new();
        for ((name, value), mut add_ids) in lists {
            let key = keys::postings_key(bucket, &name, &value);
            let mut have = stored.remove(&(name, value)).unwrap_or_default();
            have.append(&mut add_ids);
            have.sort_unstable();
            have.dedup();
            batch.put_with_options(key, values::encode_postings(&have), &ttl);
        }
        all.extend(&joined);
        all.sort_unstable();
        all.dedup();
        batch.put_with_options(
            keys::all_postings_key(bucket),
            values::encode_postings(&all),
            &ttl,
        );
        db.write(batch).await?.await_durable().await?;
        pass.joined = joined.len();
    }

    let mut ids = ids.to_vec();
    ids.sort_unstable();
    for part in ids.chunks(SERIES_PER_BATCH) {
        let mut batch = WriteBatch::new();
        for &id in part {
            batch.delete(keys::late_key(bucket, id));
        }
        for sb in storage.series_buckets(bucket, part, ScanKind::Bulk).await? {
            let id = sb.id;
            let (ts, vs) = sb.samples(i64::MIN, i64::MAX)?;
            writer.reclaim.note(sb.stored_bytes());
            let mut bytes = Vec::new();
            strata_codec::encode_sealed(&ts, &vs, &mut bytes);
            batch.put_with_options(keys::chunk_key(bucket, id), bytes, &ttl);
            pass.segments_deleted += sb.delete_segments(bucket, &mut batch);
            pass.series += 1;
        }
        db.write(batch).await?.await_durable().await?;
    }
    Ok(pass)
}

/// The keys of one sealed bucket, by kind: what a fold leaves is one chunk
/// key per series and nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BucketLayout {
    pub chunk_keys: usize,
    pub spilled_segments: usize,
    pub late_segments: usize,
    /// Series marked as having late segments not yet folded.
    pub late_series: usize,
    /// Bytes of every chunk and segment value.
    pub bytes: usize,
}

impl Storage {
    /// Counts the keys of `bucket` by kind (a full scan of the bucket).
    pub async fn bucket_layout(&self, bucket: i64) -> Result<BucketLayout, StorageError> {
        let mut layout = BucketLayout::default();
        let prefix = keys::chunk_prefix(bucket);
        let end = keys::prefix_end(&prefix);
        let mut it = self.shared.backend.scan(prefix..end).await?;
        while let Some(kv) = it.next().await? {
            layout.bytes += kv.value.len();
            match kv.key.len() {
                keys::CHUNK_KEY_LEN => layout.chunk_keys += 1,
                keys::SEGMENT_KEY_LEN => layout.spilled_segments += 1,
                keys::LATE_SEGMENT_KEY_LEN => layout.late_segments += 1,
                _ => {}
            }
        }
        layout.late_series = self.late_ids(Span::Bucket(bucket)).await?.len();
        Ok(layout)
    }
}
