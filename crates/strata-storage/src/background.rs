//! Work a database does beside requests, each on a thread of low priority:
//! the head freezer (and, on a writer, the spill pass), the writer's late
//! pass, and the runtime SlateDB's compactions run on.

use std::sync::Arc;

use crate::shared::Shared;
use crate::storage::Storage;
use crate::worker::{idle, lower_priority};
use crate::{compact, head, late, spill};

/// How often the head's chunk tails are looked at for freezing and
/// spilling.
const FREEZE_INTERVAL: std::time::Duration =
    std::time::Duration::from_millis(FREEZE_INTERVAL_MS as u64);

/// [`FREEZE_INTERVAL`] in milliseconds.
const FREEZE_INTERVAL_MS: i64 = 30_000;

/// How long after a bucket's end a pass runs, whatever the interval. It
/// first closes the ended chunks of the series a scrape has taken into the
/// next bucket (see `Head::close_ended`), sweeping again every
/// [`ENDED_SWEEP_EVERY`] while sweeps find more: until it does, each
/// series holds its ended chunk whole, tail and box, beside the new one.
/// At 2 M series that was 200 MiB more heap at the bucket's end, the
/// process's highest RSS, while a pass 10 s after the end, tails first,
/// reached the ended chunks 15 to 40 s after it.
const AFTER_BUCKET_END_MS: i64 = 1_000;

/// How often the pass after a bucket's end sweeps for series newly moved
/// into the next bucket.
const ENDED_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long the sweeps go on while they find nothing to close: the first
/// scrape of the next bucket may not have come yet.
const ENDED_SWEEPS_AT_LEAST: std::time::Duration = std::time::Duration::from_secs(5);

/// Starts the background pass that freezes long head-chunk tails into the
/// compact sealed format (see `head::HeadChunk`) and, on a writer, spills
/// long frozen runs to the store (see `spill`), on a thread of low
/// priority, until the storage is dropped.
pub(crate) fn start_freezer(
    inner: &Arc<Shared>,
    replayed: bool,
    stopped: std::sync::mpsc::Receiver<()>,
) {
    let weak = Arc::downgrade(inner);
    let runtime = tokio::runtime::Handle::try_current().ok();
    let started = std::thread::Builder::new()
        .name("strata-freezer".into())
        .spawn(move || {
            lower_priority();
            // After a replay the first pass runs at once: a head just
            // replayed from the log is all Gorilla chunks.
            if !replayed && !wait(&stopped, next_pass(&weak)) {
                return;
            }
            loop {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let started = std::time::Instant::now();
                // Buckets that ended a pass ago or more: their last scrape's
                // samples are in.
                let open = |inner: &Shared| {
                    inner
                        .clock
                        .now_ms()
                        .saturating_sub(FREEZE_INTERVAL_MS)
                        .div_euclid(inner.settings.bucket_ms())
                };
                let mut ended = 0;
                let mut merged = 0;
                if just_after_end(inner.clock.now_ms(), inner.settings.bucket_ms()) {
                    // A writer closes them as they come (see
                    // `Head::close_ended_chunk`); the sweeps find the rest,
                    // and all of a reader's.
                    loop {
                        let closed = inner.head.close_ended(open(&inner));
                        ended += closed;
                        let done = closed == 0
                            && (ended > 0 || started.elapsed() >= ENDED_SWEEPS_AT_LEAST);
                        if done || started.elapsed() >= FREEZE_INTERVAL {
                            break;
                        }
                        if !wait(&stopped, ENDED_SWEEP_EVERY) {
                            return;
                        }
                    }
                    // The chunks closed so, merged into the sealed format
                    // before their seal reads them.
                    merged = inner.head.merge_closed();
                }
                let frozen = inner.head.freeze_tails(head::FREEZE_MIN_SAMPLES);
                let tails_ms = started.elapsed().as_millis() as u64;
                ended += inner.head.freeze_ended(open(&inner));
                tracing::debug!(
                    frozen,
                    ended,
                    merged,
                    tails_ms,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "froze head chunk tails"
                );
                if let Some(runtime) = &runtime {
                    match spill::spill_pass(&inner, runtime) {
                        Ok(pass) if pass.segments > 0 => tracing::debug!(
                            segments = pass.segments,
                            bytes = pass.bytes,
                            "spilled head segments"
                        ),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(
                            error = %e,
                            "cannot spill head segments; they stay in memory"
                        ),
                    }
                }
                drop(inner);
                idle();
                if !wait(&stopped, next_pass(&weak)) {
                    return;
                }
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start the head freezer; the head stays in Gorilla chunks");
    }
}

/// How long the freezer waits for its next pass: [`FREEZE_INTERVAL`], or
/// less to run [`AFTER_BUCKET_END_MS`] after the next bucket's end.
fn next_pass(weak: &std::sync::Weak<Shared>) -> std::time::Duration {
    let Some(inner) = weak.upgrade() else {
        return std::time::Duration::ZERO;
    };
    until_next_pass(inner.clock.now_ms(), inner.settings.bucket_ms())
}

/// Whether `now_ms` is within [`FREEZE_INTERVAL`] after a bucket's end:
/// the pass then sweeps for ended chunks first.
fn just_after_end(now_ms: i64, bucket_ms: i64) -> bool {
    bucket_ms > FREEZE_INTERVAL_MS && now_ms.rem_euclid(bucket_ms) < FREEZE_INTERVAL_MS
}

/// [`next_pass`] at `now_ms`, with buckets of `bucket_ms`.
fn until_next_pass(now_ms: i64, bucket_ms: i64) -> std::time::Duration {
    let bucket_ms = bucket_ms.max(1);
    // The pass after this bucket's end, or after the next one's if that
    // one is past.
    let mut at = now_ms.div_euclid(bucket_ms).saturating_mul(bucket_ms) + AFTER_BUCKET_END_MS;
    if at <= now_ms {
        at = at.saturating_add(bucket_ms);
    }
    let wait = u64::try_from(at.saturating_sub(now_ms)).unwrap_or(u64::MAX);
    FREEZE_INTERVAL.min(std::time::Duration::from_millis(wait))
}

/// Waits `interval` on `stopped`: false once its sender (held by the
/// shared state) is gone, so a closed database's thread ends at once.
fn wait(stopped: &std::sync::mpsc::Receiver<()>, interval: std::time::Duration) -> bool {
    !matches!(
        stopped.recv_timeout(interval),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
    )
}

/// Starts the writer's late pass: writes the head's late samples (of sealed
/// buckets) to the store every [`late::LATE_INTERVAL`] while it holds any,
/// at once when it holds many, and folds quiet buckets' late segments into
/// their chunks every [`late::FOLD_INTERVAL`], and compacts sealed buckets
/// into blocks every [`compact::COMPACT_INTERVAL`]; on a thread of low
/// priority, until the storage is dropped.
pub(crate) fn start_late_pass(inner: &Arc<Shared>) {
    if inner.backend.writer().is_none() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(inner);
    let Some(state) = inner.writing().map(|w| Arc::clone(&w.late)) else {
        return;
    };
    let started = std::thread::Builder::new()
        .name("strata-late".into())
        .spawn(move || {
            lower_priority();
            let mut last_fold = std::time::Instant::now();
            let mut last_compact = std::time::Instant::now();
            loop {
                idle();
                state.wait(late::LATE_INTERVAL);
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let Some(db) = inner.backend.writer() else {
                    return;
                };
                if inner.head.extra_samples() > 0 {
                    if let Err(e) = runtime.block_on(late::flush(&inner, db)) {
                        tracing::warn!(error = %e, "cannot write late samples; they stay in memory");
                    }
                }
                if last_compact.elapsed() >= compact::COMPACT_INTERVAL {
                    last_compact = std::time::Instant::now();
                    let view = Storage::view(Arc::clone(&inner));
                    if let Err(e) = runtime.block_on(compact::compact(&view, false)) {
                        tracing::warn!(error = %e, "cannot compact sealed buckets into a block; will retry");
                    }
                }
                if last_fold.elapsed() >= late::FOLD_INTERVAL {
                    last_fold = std::time::Instant::now();
                    let view = Storage::view(Arc::clone(&inner));
                    if let Err(e) = runtime.block_on(late::fold(&view, false)) {
                        tracing::warn!(error = %e, "cannot fold late segments; will retry");
                    }
                }
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start the late pass; late samples stay in memory until a seal");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_freezer_runs_soon_after_a_buckets_end() {
        let minute = 60_000;
        let bucket = 15 * minute;
        let secs = |d: std::time::Duration| d.as_millis() as i64;
        // Mid-bucket: the usual interval.
        assert_eq!(secs(until_next_pass(5 * minute, bucket)), 30_000);
        // 20 s before the end: 1 s after it.
        assert_eq!(secs(until_next_pass(bucket - 20_000, bucket)), 21_000);
        // 5 s before the end: 1 s after it, not 30.
        assert_eq!(secs(until_next_pass(bucket - 5_000, bucket)), 6_000);
        // Half a second after the end: half a second on.
        assert_eq!(secs(until_next_pass(bucket + 500, bucket)), 500);
        // Just past the pass after the end: the interval again.
        assert_eq!(secs(until_next_pass(bucket + 1_000, bucket)), 30_000);
        // Buckets shorter than the interval: after each one's end.
        assert_eq!(secs(until_next_pass(12_000, 20_000)), 9_000);
    }

    #[test]
    fn the_pass_after_a_buckets_end_sweeps_for_ended_chunks_first() {
        let bucket = 15 * 60_000;
        assert!(just_after_end(bucket + 1_000, bucket));
        assert!(just_after_end(3 * bucket + 29_000, bucket));
        assert!(!just_after_end(bucket + 30_000, bucket));
        assert!(!just_after_end(bucket - 1_000, bucket));
        // Buckets no longer than the interval: every pass is after an end.
        assert!(!just_after_end(1_000, 20_000));
    }
}
