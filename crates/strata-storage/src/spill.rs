//! The spill pass: writes the head's long frozen runs to the store as
//! segments of their open bucket and frees them, so a writer's head holds
//! at most `spill_min_samples` (staggered: up to half again, see
//! `head::staggered`) compact samples per series (plus the
//! Gorilla tail) however wide a bucket is. Without it the head grows by a
//! whole bucket's samples, gigabytes an hour at a few hundred thousand
//! samples a second, and drops them all at the seal.
//!
//! A segment is written (visible to reads) before the head drops its
//! samples, and a read takes the segments a series had at the time it read
//! the series' memory, so every sample is always found once. The seal of a
//! bucket writes the series' chunk key last, listing its segments; from
//! then on reads find them through it. The samples stay in the log until
//! the bucket is sealed: after a crash, recovery finds the segments and
//! replays only the samples after them.

use std::sync::Arc;

use crate::error::StorageError;
use crate::head::{MemSeries, Spill};
use crate::keys;
use crate::packed_batch::Batch;
use crate::series_index::Held;
use crate::shared::{Shared, NO_HURRY};
use crate::stats::add;

/// Series looked at per write batch; the spill lock is held for one batch.
const SERIES_PER_BATCH: usize = 4096;

/// What one spill pass wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillPass {
    pub segments: usize,
    pub bytes: usize,
}

/// Spills every chunk of a bucket whose seal is not yet due whose frozen
/// parts hold at least `spill_min_samples` samples (staggered per series).
/// Runs on a plain thread (the freezer's), blocking on `runtime` for the
/// writes. Nothing on a reader, or with spilling off.
pub(crate) fn spill_pass(
    inner: &Shared,
    runtime: &tokio::runtime::Handle,
) -> Result<SpillPass, StorageError> {
    let mut pass = SpillPass::default();
    let min_samples = inner.settings.spill_min_samples;
    let (Some(db), Some(writer)) = (inner.backend.writer(), inner.writing()) else {
        return Ok(pass);
    };
    if min_samples == 0 {
        return Ok(pass);
    }
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let series = inner.head.all_series();
    for part in series.chunks(SERIES_PER_BATCH) {
        // The sealer takes this lock to mark a bucket as being sealed, so
        // no segment of it is written once its seal has begun.
        let _sealing = writer.spill_lock.blocking_lock();
        // Buckets whose seal is due are left to it: it writes them whole
        // soon (a backlog of due buckets can wait a while for its turn),
        // and a bucket sealed from segments takes a read per segment.
        let now = inner.clock.now_ms();
        let after = inner
            .head
            .sealing_through()
            .max(inner.settings.due_through(now));
        let mut spills: Vec<(&Arc<MemSeries>, i64, Spill)> = Vec::new();
        let mut indexed = Vec::new();
        let mut batch = Batch::new();
        for s in part {
            let taken = s.take_spills(after, min_samples, &mut ts, &mut vs);
            if !taken.is_empty() {
                // Labels with the series' first data in the store: recovery
                // gives segments to their series from the `S` keys.
                crate::series_index::put_if_due(
                    inner,
                    &mut batch,
                    s,
                    now,
                    Held::Stays,
                    &mut indexed,
                );
            }
            for (bucket, spill) in taken {
                batch.put_with_options(
                    keys::segment_key(bucket, s.id, spill.first_t, spill.last_t),
                    &spill.bytes,
                    &inner.span_ttl(bucket),
                );
                spills.push((s, bucket, spill));
            }
        }
        if spills.is_empty() {
            continue;
        }
        // Spilled samples take more memory in a memtable than in the head:
        // they wait while the memtables are full.
        runtime.block_on(inner.room_for_background(&NO_HURRY));
        if let Err(e) = runtime.block_on(db.write(batch.into_write_batch())) {
            add(&inner.stats.spill_errors, 1);
            return Err(inner.note_fenced(e.into()));
        }
        crate::series_index::written(&indexed, now);
        for (s, bucket, spill) in &spills {
            s.spilled(*bucket, spill);
            pass.segments += 1;
            pass.bytes += spill.bytes.len();
        }
    }
    add(&inner.stats.segments_spilled, pass.segments);
    add(&inner.stats.spilled_bytes, pass.bytes);
    Ok(pass)
}
