//! The sealer: turns one bucket of the head into sealed chunks (`C`) and
//! postings (`I`), refreshes forward-index keys (`S`) about to expire, and
//! records the checkpoint (`M`) recovery starts from.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use slatedb::config::{PutOptions, Ttl};
use slatedb::WriteBatch;

use crate::error::StorageError;
use crate::keys;
use crate::stats::add;
use crate::values::{self, Checkpoint};
use crate::Inner;

/// Keys per SlateDB write batch while sealing, so one seal does not build a
/// single huge batch.
const KEYS_PER_BATCH: usize = 4096;

pub(crate) struct SealJob {
    pub bucket: i64,
    pub replay_from: u64,
    pub next_log_seq: u64,
}

pub(crate) async fn seal(
    inner: Arc<Inner>,
    db: slatedb::Db,
    job: SealJob,
) -> Result<(), StorageError> {
    let started = Instant::now();
    let bucket = job.bucket;
    let settings = &inner.settings;
    let bucket_end = bucket
        .saturating_add(1)
        .saturating_mul(settings.bucket_ms());
    let expire = PutOptions {
        ttl: Ttl::ExpireAtMillis(bucket_end.saturating_add(settings.retention_ms())),
    };
    let now = inner.clock.now_ms();
    let refresh_before = now.saturating_sub(settings.retention_ms() / 2);
    let series = inner.head.all_series();

    let mut batch = WriteBatch::new();
    let mut in_batch = 0;
    let mut postings: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    let mut all = Vec::new();
    let (mut chunk_bytes, mut index_bytes) = (0usize, 0usize);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for s in &series {
        let Some(head_chunk) = s.chunk_bytes(bucket) else {
            continue;
        };
        // Sealed chunks are re-encoded in the compact sealed format; the
        // head's Gorilla chunk only had to be appendable.
        ts.clear();
        vs.clear();
        strata_codec::decode_into(&head_chunk, &mut ts, &mut vs)?;
        let mut bytes = Vec::with_capacity(head_chunk.len());
        strata_codec::encode_sealed(&ts, &vs, &mut bytes);
        chunk_bytes += bytes.len();
        batch.put_with_options(keys::chunk_key(bucket, s.id), bytes, &expire);
        all.push(s.id);
        for l in s.labels.iter() {
            postings
                .entry((l.name.as_str(), l.value.as_str()))
                .or_default()
                .push(s.id);
        }
        if s.series_key_written_ms.load(Ordering::Relaxed) < refresh_before {
            let v = values::encode_series(now, &s.labels);
            index_bytes += v.len();
            batch.put_with_options(keys::series_key(s.id), v, &inner.series_ttl());
            s.series_key_written_ms.store(now, Ordering::Relaxed);
        }
        in_batch += 1;
        if in_batch >= KEYS_PER_BATCH {
            db.write(std::mem::take(&mut batch)).await?;
            in_batch = 0;
        }
    }
    let n_series = all.len();
    let all_value = values::encode_postings(&all);
    index_bytes += all_value.len();
    batch.put_with_options(keys::all_postings_key(bucket), all_value, &expire);
    for ((name, value), ids) in &postings {
        let v = values::encode_postings(ids);
        index_bytes += v.len();
        batch.put_with_options(keys::postings_key(bucket, name, value), v, &expire);
        in_batch += 1;
        if in_batch >= KEYS_PER_BATCH {
            db.write(std::mem::take(&mut batch)).await?;
            in_batch = 0;
        }
    }
    let checkpoint = Checkpoint {
        sealed_through: Some(bucket),
        replay_from: job.replay_from,
        next_series_id: inner.head.next_series_id(),
        next_log_seq: job.next_log_seq,
    };
    batch.put(keys::CHECKPOINT, values::encode_checkpoint(&checkpoint));
    db.write(batch).await?;
    inner.head.mark_sealed(bucket);

    let stats = &inner.stats;
    add(&stats.buckets_sealed, 1);
    add(&stats.sealed_chunk_bytes, chunk_bytes);
    add(&stats.sealed_index_bytes, index_bytes);
    stats.seal_duration.observe(started.elapsed());
    tracing::info!(
        bucket,
        series = n_series,
        chunk_bytes,
        index_bytes,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "sealed bucket"
    );
    Ok(())
}
