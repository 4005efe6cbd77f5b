//! Recovery: rebuild the head from the checkpoint, the forward index and
//! the log records after the checkpoint.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use slatedb::Db;
use strata_codec::LogRecord;

use crate::error::StorageError;
use crate::head::{Head, MemSeries, NONE_SEALED};
use crate::keys;
use crate::settings::StorageSettings;
use crate::values;

pub(crate) struct Recovered {
    pub head: Head,
    pub next_seq: u64,
    pub open_buckets: BTreeMap<i64, u64>,
    pub frozen_through: i64,
    pub samples_replayed: usize,
}

pub(crate) async fn read_checkpoint(db: &Db) -> Result<values::Checkpoint, StorageError> {
    match db.get(keys::CHECKPOINT).await? {
        Some(v) => values::decode_checkpoint(&v),
        None => Ok(values::Checkpoint::default()),
    }
}

/// Loads every `S` key into `head`.
pub(crate) async fn load_series(db: &Db, head: &Head) -> Result<usize, StorageError> {
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

pub(crate) async fn recover(
    db: &Db,
    settings: &StorageSettings,
) -> Result<Recovered, StorageError> {
    let started = std::time::Instant::now();
    let cp = read_checkpoint(db).await?;
    let head = Head::new(cp.next_series_id, cp.sealed_through);
    let n_series = load_series(db, &head).await?;
    let sealed_through = cp.sealed_through.unwrap_or(NONE_SEALED);
    let first_open = sealed_through.saturating_add(1);
    let bucket_ms = settings.bucket_ms();

    let mut by_id: FxHashMap<u64, Arc<MemSeries>> = FxHashMap::default();
    let mut open_buckets = BTreeMap::new();
    let mut next_seq = cp.next_log_seq.max(cp.replay_from);
    let mut replayed = 0usize;
    let mut records = 0usize;
    let mut it = db
        .scan(keys::log_key(cp.replay_from).to_vec()..vec![keys::LOG + 1])
        .await?;
    while let Some(kv) = it.next().await? {
        let Some(seq) = keys::log_seq(&kv.key) else {
            continue;
        };
        let record = match LogRecord::decode(&kv.value) {
            Ok(r) => r,
            Err(e) => {
                // A record that does not decode cannot be replayed; say so
                // loudly and keep the rest.
                tracing::error!(seq, error = %e, "skipping corrupt log record");
                continue;
            }
        };
        records += 1;
        next_seq = next_seq.max(seq + 1);
        for ns in record.new_series {
            let s = head.insert_recovered(ns.id, ns.labels, 0);
            by_id.insert(ns.id, s);
        }
        let mut run_start = 0;
        let samples = &record.samples;
        let mut buf: Vec<(i64, f64)> = Vec::new();
        while run_start < samples.len() {
            let id = samples.get(run_start).map_or(0, |s| s.series);
            let run_end = samples
                .get(run_start..)
                .and_then(|rest| rest.iter().position(|s| s.series != id))
                .map_or(samples.len(), |p| run_start + p);
            buf.clear();
            buf.extend(
                samples
                    .get(run_start..run_end)
                    .unwrap_or_default()
                    .iter()
                    .map(|s| (s.t, s.v)),
            );
            run_start = run_end;
            let series = match by_id.get(&id) {
                Some(s) => Arc::clone(s),
                None => match head.series_by_id(id) {
                    Some(s) => {
                        by_id.insert(id, Arc::clone(&s));
                        s
                    }
                    None => {
                        tracing::error!(seq, series = id, "log record names an unknown series");
                        continue;
                    }
                },
            };
            let mut last_bucket = None;
            let out = series.append(&buf, first_open, bucket_ms, |_, _, b| {
                if last_bucket != Some(b) {
                    last_bucket = Some(b);
                    open_buckets.entry(b).or_insert(seq);
                }
            });
            replayed += out.appended;
        }
    }
    let elapsed = started.elapsed();
    tracing::info!(
        series = n_series,
        records,
        samples = replayed,
        elapsed_ms = elapsed.as_millis() as u64,
        sealed_through = ?cp.sealed_through,
        "recovered head from the log"
    );
    Ok(Recovered {
        head,
        next_seq,
        open_buckets,
        frozen_through: sealed_through,
        samples_replayed: replayed,
    })
}
