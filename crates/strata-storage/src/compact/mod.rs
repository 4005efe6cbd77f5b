//! Compaction of sealed buckets into blocks: as buckets of a block
//! (`storage.block_duration`, a day by default) are sealed, each series'
//! samples of them are written once more as parts of the block, one per
//! quarter of it, and the block's postings as one set, under the block's
//! own keys (`B`, `P`, `K`: `docs/format.md`). A series' parts are one
//! value, written again with each new quarter. A week of hourly buckets
//! is then 7 keys per series instead of 168, and a read decodes only the
//! parts its range meets.
//!
//! ```text
//!  buckets [from, upto) sealed ─▶ per series a part per quarter (late
//!      segments folded in), with the parts the block held, in the one
//!      value at `B | start | series` + `P | start | …` postings
//!      ─▶ `Mcompacted` says blocks hold every bucket before upto (the
//!      switch)
//!  `compaction_delete_delay` after the last switch ─▶ the buckets' `C`,
//!      `I`, `J` keys deleted
//! ```
//!
//! A read takes the compaction state once and reads each bucket from its
//! block or from the bucket itself, never both, so it sees no gap and no
//! double. The buckets' keys outlive the switch by
//! `storage.compaction_delete_delay`, longer than any query and any
//! reader's lag, so a read that took the state just before a switch still
//! finds them. Late samples of compacted buckets are
//! written as late segments of their block and folded into it like a
//! bucket's. A crash before the switch leaves block keys nothing reads;
//! the next pass writes the block again from the buckets.
//!
//! By seam: the pass (this file), `block` (a block's postings and parts
//! written), `held` (what a block holds of a series before an extension),
//! `delete` (the buckets' keys deleted after the switch), `write` (what a
//! pass counts, and its write batches).

use std::time::Duration;

use crate::error::StorageError;
use crate::keys;
use crate::shared::Shared;
use crate::state::compacted::Compacted;
use crate::stats::add;
use crate::storage::Storage;

mod block;
mod delete;
mod held;
mod write;

use block::compact_block;
use delete::delete_buckets;
pub use write::CompactPass;

/// How often the writer looks for blocks to compact.
pub(crate) const COMPACT_INTERVAL: Duration = Duration::from_secs(60);

/// Writes `state` (durably) and takes it as the current one.
async fn store(state: Compacted, inner: &Shared, db: &slatedb::Db) -> Result<(), StorageError> {
    db.put(keys::COMPACTED, state.encode())
        .await?
        .await_durable()
        .await?;
    inner.note_compacted(state);
    Ok(())
}

/// Reads the compaction state (the default when nothing was compacted).
pub(crate) async fn read_compacted(
    backend: &crate::backend::Backend,
) -> Result<Compacted, StorageError> {
    match backend.get(keys::COMPACTED).await? {
        Some(v) => Compacted::decode(&v),
        None => Ok(Compacted::default()),
    }
}

/// Compacts every block whose buckets are all sealed, then deletes the
/// keys of buckets blocks replaced at least `compaction_delete_delay` ago
/// (at once with `delete_now`). Nothing on a reader, or with compaction off.
pub(crate) async fn compact(
    storage: &Storage,
    delete_now: bool,
) -> Result<CompactPass, StorageError> {
    let inner = &storage.shared;
    let mut pass = CompactPass::default();
    let n = inner.settings.block_buckets();
    let (Some(db), Some(sealed)) = (inner.backend.writer(), inner.head.sealed_through()) else {
        return Ok(pass);
    };
    if n <= 1 {
        return Ok(pass);
    }
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
    // A block not yet whole is extended once this many more of its
    // buckets are sealed: a day's block holds the day so far in steps of
    // six hours, so reads of the last day take few buckets too.
    let step = (n / 4).max(1);
    loop {
        // Late samples wait meanwhile: none is written to a bucket the
        // block is being built from, and after the switch they go to the
        // block. Taken before the oldest bucket with data is looked for:
        // a late segment written between the look and the switch would
        // land in a stretch the switch steps over, read from a block that
        // never holds it.
        let writing = writer.late.lock.lock().await;
        let state = inner.compacted();
        // The oldest bucket with data not yet in a block: empty stretches
        // (a gap in the history) are stepped over.
        let Some(next) = first_bucket_from(inner, state.through).await? else {
            break;
        };
        let start = next.div_euclid(n).saturating_mul(n);
        // The block may hold its first buckets already (`through` within
        // it): it is extended from there.
        let from = state.through.max(start);
        let upto = sealed.saturating_add(1).min(start + n);
        if upto <= next || (upto < start + n && upto - from < step) {
            break;
        }
        let started = std::time::Instant::now();
        let block = compact_block(storage, db, start, from, upto).await?;
        let switched = Compacted {
            through: upto,
            deleted_through: state.deleted_through,
            switched_ms: inner.clock.now_ms(),
        };
        store(switched, inner, db).await?;
        drop(writing);
        pass.add(&block);
        add(&inner.stats.blocks_compacted, 1);
        add(&inner.stats.compacted_bytes, block.bytes);
        tracing::info!(
            block = start,
            buckets = upto - from,
            whole = upto == start + n,
            series = block.series,
            samples = block.samples,
            bytes = block.bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "compacted sealed buckets into a block"
        );
    }
    let state = inner.compacted();
    let delay =
        i64::try_from(inner.settings.compaction_delete_delay.as_millis()).unwrap_or(i64::MAX);
    let quiet = inner.clock.now_ms().saturating_sub(state.switched_ms) >= delay;
    if state.deleted_through < state.through && (quiet || delete_now) {
        let _writing = writer.late.lock.lock().await;
        pass.keys_deleted = delete_buckets(inner, db, state.deleted_through, state.through).await?;
        add(&inner.stats.compaction_deleted_keys, pass.keys_deleted);
        let deleted = Compacted {
            deleted_through: state.through,
            ..state
        };
        store(deleted, inner, db).await?;
        tracing::info!(
            keys = pass.keys_deleted,
            "deleted the keys of buckets compacted into blocks"
        );
    }
    // Their space comes back once SlateDB merges their tombstones with
    // them.
    pass.reclaim = crate::reclaim::check(inner, delete_now).await?;
    Ok(pass)
}

/// The first bucket at or after `from` with a chunk or segment key.
async fn first_bucket_from(inner: &Shared, from: i64) -> Result<Option<i64>, StorageError> {
    let start = keys::chunk_prefix(from);
    let mut it = inner.backend.scan(start..vec![keys::CHUNK + 1]).await?;
    Ok(it.next().await?.and_then(|kv| keys::span_start(&kv.key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let c = Compacted {
            through: 48,
            deleted_through: 24,
            switched_ms: 1_700_000_000_000,
        };
        assert_eq!(Compacted::decode(&c.encode()).ok(), Some(c));
        assert!(Compacted::decode(&c.encode()[..24]).is_err());
        let mut other = c.encode();
        other[0] = 2;
        assert!(Compacted::decode(&other).is_err());
    }
}
