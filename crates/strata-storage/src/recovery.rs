//! Recovery and log following: rebuild the head from the checkpoint, the
//! forward index and the log records after the checkpoint. The writer does
//! this once at open; a reader node keeps doing it to stay fresh.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use strata_codec::LogRecord;

use crate::backend::Backend;
use crate::error::StorageError;
use crate::head::{Head, MemSeries, NONE_SEALED};
use crate::keys;
use crate::settings::StorageSettings;
use crate::values;

pub(crate) struct Recovered {
    pub head: Head,
    pub follower: LogFollower,
    pub frozen_through: i64,
    pub samples_replayed: usize,
}

pub(crate) async fn read_checkpoint(db: &Backend) -> Result<values::Checkpoint, StorageError> {
    match db.get(keys::CHECKPOINT).await? {
        Some(v) => values::decode_checkpoint(&v),
        None => Ok(values::Checkpoint::default()),
    }
}

/// Loads every `S` key into `head`.
pub(crate) async fn load_series(db: &Backend, head: &Head) -> Result<usize, StorageError> {
    let mut it = db.scan(vec![keys::SERIES]..vec![keys::SERIES + 1]).await?;
    let mut n = 0;
    while let Some(kv) = it.next().await? {
        let Some(id) = keys::series_id(&kv.key) else {
            continue;
        };
        let (written, labels) = values::decode_series(&kv.value)?;
        head.insert_recovered(id, labels, written);
        n += 1;
    }
    Ok(n)
}

/// Applies log records to a head in sequence order, from `next_seq` on.
pub(crate) struct LogFollower {
    /// The next log sequence number to read.
    pub next_seq: u64,
    /// First log seq that carries a sample of each unsealed bucket.
    pub open_buckets: BTreeMap<i64, u64>,
    by_id: FxHashMap<u64, Arc<MemSeries>>,
    bucket_ms: i64,
}

impl LogFollower {
    pub(crate) fn new(next_seq: u64, bucket_ms: i64) -> Self {
        Self {
            next_seq,
            open_buckets: BTreeMap::new(),
            by_id: FxHashMap::default(),
            bucket_ms,
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
        let mut applied = 0usize;
        let mut it = db
            .scan(keys::log_key(self.next_seq).to_vec()..vec![keys::LOG + 1])
            .await?;
        let mut buf: Vec<(i64, f64)> = Vec::new();
        while let Some(kv) = it.next().await? {
            let Some(seq) = keys::log_seq(&kv.key) else {
                continue;
            };
            self.next_seq = self.next_seq.max(seq + 1);
            let record = match LogRecord::decode(&kv.value) {
                Ok(r) => r,
                Err(e) => {
                    // A record that does not decode cannot be replayed; say
                    // so loudly and keep the rest.
                    tracing::error!(seq, error = %e, "skipping corrupt log record");
                    continue;
                }
            };
            for ns in record.new_series {
                let s = head.insert_recovered(ns.id, ns.labels, 0);
                self.by_id.insert(ns.id, s);
            }
            let samples = &record.samples;
            let mut start = 0;
            while let Some(first) = samples.get(start) {
                let id = first.series;
                let end = samples
                    .get(start..)
                    .and_then(|rest| rest.iter().position(|s| s.series != id))
                    .map_or(samples.len(), |p| start + p);
                buf.clear();
                buf.extend(
                    samples
                        .get(start..end)
                        .unwrap_or_default()
                        .iter()
                        .map(|s| (s.t, s.v)),
                );
                start = end;
                let series = match self.by_id.get(&id) {
                    Some(s) => Arc::clone(s),
                    None => match head.series_by_id(id) {
                        Some(s) => {
                            self.by_id.insert(id, Arc::clone(&s));
                            s
                        }
                        None => {
                            tracing::error!(seq, series = id, "log record names an unknown series");
                            continue;
                        }
                    },
                };
                let open_buckets = &mut self.open_buckets;
                let mut last_bucket = None;
                let out = series.append(&buf, first_open, self.bucket_ms, |_, _, b| {
                    if last_bucket != Some(b) {
                        last_bucket = Some(b);
                        open_buckets.entry(b).or_insert(seq);
                    }
                });
                applied += out.appended;
            }
        }
        Ok(applied)
    }

    /// Forgets buckets up to `bucket` (sealed).
    pub(crate) fn sealed(&mut self, bucket: i64) {
        self.open_buckets.retain(|&b, _| b > bucket);
    }
}

pub(crate) async fn recover(
    db: &Backend,
    settings: &StorageSettings,
) -> Result<Recovered, StorageError> {
    let started = std::time::Instant::now();
    let cp = read_checkpoint(db).await?;
    let head = Head::new(cp.next_series_id, cp.sealed_through);
    let n_series = load_series(db, &head).await?;
    let sealed_through = cp.sealed_through.unwrap_or(NONE_SEALED);
    let mut follower = LogFollower::new(cp.replay_from, settings.bucket_ms());
    let replayed = follower.catch_up(db, &head, sealed_through).await?;
    follower.next_seq = follower.next_seq.max(cp.next_log_seq);
    let elapsed = started.elapsed();
    tracing::info!(
        series = n_series,
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
    })
}
