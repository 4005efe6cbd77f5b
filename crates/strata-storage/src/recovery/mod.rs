//! Recovery and log following: rebuild the head from the checkpoint, the
//! forward index and the log records after the checkpoint. The writer does
//! this once at open; a reader node keeps doing it to stay fresh.
//!
//! By seam: the open's recovery (this file), `series` (series and their
//! label hashes read from the store), `follower` (log records applied in
//! order), `partition` (one thread's share of a batch of records),
//! `spilled` (the segments the head spilled, given back to its series).

use crate::backend::{Backend, ScanKind};
use crate::error::StorageError;
use crate::head::{Head, NONE_SEALED};
use crate::keys;
use crate::settings::StorageSettings;
use crate::values;

mod follower;
mod partition;
mod series;
mod spilled;

pub(crate) use follower::LogFollower;
pub(crate) use series::load_series_hashes;
use spilled::restore_spilled;

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
    let replayed = follower
        .catch_up(db, &head, sealed_through, ScanKind::Bulk)
        .await?;
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
