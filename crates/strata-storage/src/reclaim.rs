//! Giving back the space of data the writer deleted or overwrote.
//!
//! SlateDB drops a deleted key's value only when one merge takes the value
//! and its tombstone together, and the tombstone only in a merge into its
//! oldest sorted run. Its size-tiered scheduler merges runs of like size,
//! four or more at a time, so the hourly chunks a day's block replaced can
//! sit beside their tombstones in runs nothing merges for days, and for
//! good once writes stop (after a history import, the store stays about
//! twice its size).
//!
//! The writer counts the bytes it deletes or overwrites (the chunks,
//! segments and postings of buckets compacted into blocks, a block's
//! previous chunks when it is extended, chunks and segments a fold
//! rewrote). Once they reach a third of what SlateDB's tables hold, it
//! asks SlateDB's compactor for one merge of every L0 table and sorted run
//! into the oldest run, as RocksDB's universal compaction does on size
//! amplification. At most one such merge is asked for at a time.

use std::sync::atomic::Ordering;

use slatedb::compactor::{CompactionSpec, CompactionStatus, SourceId};
use slatedb::config::{FlushOptions, FlushType};

use crate::error::StorageError;
use crate::shared::Shared;
use crate::stats::add;

/// A merge is asked for once the counted bytes reach this share of the
/// tables' bytes.
const SHARE: u64 = 3;

/// Below this, counted bytes never ask for a merge: a small store has
/// little to give back.
const MIN_BYTES: u64 = 4 << 20;

/// What one check did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReclaimStep {
    /// Nothing to do: too little counted, or a single run.
    #[default]
    Idle,
    /// The merge asked for before is still running.
    Waiting,
    /// A merge of this many tables and runs was asked for.
    Asked(usize),
}

/// Asks for a merge of every table and run if the counted bytes call for
/// one (`force`: if anything is counted at all) and none is running.
pub(crate) async fn check(inner: &Shared, force: bool) -> Result<ReclaimStep, StorageError> {
    let Some(db) = inner.backend.writer() else {
        return Ok(ReclaimStep::Idle);
    };
    let Some(reclaim) = inner.writing().map(|w| &w.reclaim) else {
        return Ok(ReclaimStep::Idle);
    };
    let mut asked = reclaim.asked.lock().await;
    if let Some((merge, counted)) = asked.as_ref() {
        let now = reclaim.admin.read_compaction(merge.id(), None).await?;
        match now.map(|c| c.status()) {
            Some(CompactionStatus::Failed) => {
                // Rejected (the scheduler took one of its sources first)
                // or failed: asked again at a later check.
                reclaim.note(*counted as usize);
                add(&inner.stats.reclaim_merges_failed, 1);
                tracing::warn!("SlateDB did not run the merge asked for; will ask again");
            }
            Some(CompactionStatus::Completed) | None => {
                add(&inner.stats.reclaim_merges_done, 1);
                tracing::info!("SlateDB merged every table and run");
            }
            Some(_) => return Ok(ReclaimStep::Waiting),
        }
        *asked = None;
    }
    if force {
        flush_memtable(db).await?;
    }
    let dead = reclaim.dead.load(Ordering::Relaxed);
    let manifest = db.manifest();
    let (runs, l0) = (manifest.compacted(), manifest.l0());
    if !due(dead, bytes_of(&manifest), force) || runs.len() + l0.len() < 2 {
        return Ok(ReclaimStep::Idle);
    }
    if !force {
        flush_memtable(db).await?;
    }
    let manifest = db.manifest();
    let (runs, l0) = (manifest.compacted(), manifest.l0());
    // Into the oldest run; with none yet, into a first one.
    let destination = runs.iter().map(|r| r.id).min().unwrap_or(0);
    // Newest first, as SlateDB orders a tree: L0 tables, then runs.
    let sources: Vec<SourceId> = l0
        .iter()
        .map(|t| SourceId::SstView(t.id))
        .chain(runs.iter().map(|r| SourceId::SortedRun(r.id)))
        .collect();
    let n = sources.len();
    let merge = reclaim
        .admin
        .submit_compaction(CompactionSpec::new(sources, destination))
        .await?;
    reclaim.dead.fetch_sub(dead, Ordering::Relaxed);
    add(&inner.stats.reclaim_merges_asked, 1);
    tracing::info!(
        tables = n,
        counted_bytes = dead,
        table_bytes = bytes_of(&manifest),
        "asked SlateDB to merge every table and run, to give back deleted data's space"
    );
    *asked = Some((merge, dead));
    Ok(ReclaimStep::Asked(n))
}

/// Whether `dead` counted bytes call for a merge of tables holding `total`.
fn due(dead: u64, total: u64, force: bool) -> bool {
    if force {
        dead > 0
    } else {
        dead >= MIN_BYTES && dead.saturating_mul(SHARE) >= total
    }
}

/// Bytes of SlateDB's L0 tables and sorted runs, as its manifest says.
pub(crate) fn table_bytes(db: &slatedb::Db) -> u64 {
    bytes_of(&db.manifest())
}

/// Bytes of the L0 tables and sorted runs `manifest` lists.
fn bytes_of(manifest: &slatedb::VersionedManifest) -> u64 {
    manifest
        .compacted()
        .iter()
        .map(|r| r.estimate_size())
        .chain(manifest.l0().iter().map(|t| t.estimate_size()))
        .sum()
}

/// Writes the memtable to an L0 table (here, so a merge takes the
/// tombstones in it with the values they delete).
pub(crate) async fn flush_memtable(db: &slatedb::Db) -> Result<(), StorageError> {
    db.flush_with_options(FlushOptions {
        flush_type: FlushType::MemTable,
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_is_due_once_a_third_is_counted() {
        assert!(!due(0, 0, false));
        assert!(!due(MIN_BYTES - 1, 0, false), "too little to give back");
        assert!(due(MIN_BYTES, 3 * MIN_BYTES, false));
        assert!(!due(MIN_BYTES, 3 * MIN_BYTES + 1, false));
        assert!(due(100 << 20, 300 << 20, false));
        assert!(!due(99 << 20, 300 << 20, false));
        assert!(due(1, u64::MAX, true), "asked for");
        assert!(!due(0, 0, true), "nothing counted");
    }
}
