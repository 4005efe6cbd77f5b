//! The state one open database shares between its handles ([`Storage`],
//! [`Writer`]) and its background work (coordinator, sealer, spill, late
//! pass, log follower).
//!
//! [`Storage`]: crate::storage::Storage
//! [`Writer`]: crate::writer::Writer

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use slatedb::config::{PutOptions, Ttl};
use slatedb_common::metrics::{DefaultMetricsRecorder, MetricValue};

use crate::error::StorageError;
use crate::instrumented::ObjectStoreCounters;
use crate::keys::Span;
use crate::settings::StorageSettings;
use crate::state::compacted::Compacted;
use crate::state::role::{ReaderState, Role, WriterState};
use crate::stats::StorageStats;
use crate::{backend, cache, head};
use strata_codec::clock::Clock;

pub(crate) struct Shared {
    pub(crate) backend: backend::Backend,
    pub(crate) head: head::Head,
    pub(crate) settings: StorageSettings,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) stats: StorageStats,
    pub(crate) object_store: Arc<ObjectStoreCounters>,
    pub(crate) slatedb_metrics: Arc<DefaultMetricsRecorder>,
    /// SlateDB's in-memory block cache, to report how full it is.
    pub(crate) memory_cache: cache::MemoryCache,
    /// Which sealed buckets compacted blocks hold (`compact/`).
    pub(crate) compacted: parking_lot::RwLock<Compacted>,
    /// Deletions every read leaves out (`delete_series`).
    pub(crate) tombstones: crate::state::tombstones::Tombstones,
    /// What only a writer, or only a reader node, keeps.
    pub(crate) role: Role,
    /// Dropped with this state, which ends the freezer's wait at once.
    pub(crate) _freezer_stop: std::sync::mpsc::Sender<()>,
}

impl Shared {
    /// Records that this writer was fenced, if that is what `e` says, and
    /// hands `e` back.
    pub(crate) fn note_fenced(&self, e: StorageError) -> StorageError {
        let newly = |w: &WriterState| !w.fenced.swap(true, Ordering::AcqRel);
        if matches!(e, StorageError::Fenced(_)) && self.writing().is_some_and(newly) {
            tracing::error!("this writer has been fenced by a newer writer on the same path");
        }
        e
    }

    /// The expiry of a bucket's or block's sealed data (chunks, segments,
    /// postings): its end plus the retention, so the whole span expires at
    /// once.
    pub(crate) fn span_ttl(&self, span: impl Into<crate::keys::Span>) -> PutOptions {
        let end = self
            .span_buckets(span.into())
            .1
            .saturating_mul(self.settings.bucket_ms());
        PutOptions {
            ttl: Ttl::ExpireAtMillis(end.saturating_add(self.settings.retention_ms())),
        }
    }

    pub(crate) fn series_ttl(&self) -> PutOptions {
        PutOptions {
            ttl: Ttl::ExpireAfterMillis(
                u64::try_from(self.settings.retention_ms()).unwrap_or(u64::MAX),
            ),
        }
    }
}

/// The compaction state, and where sealed samples are read from under it.
impl Shared {
    pub(crate) fn compacted(&self) -> Compacted {
        *self.compacted.read()
    }

    /// Takes a newer compaction state (a reader node following the
    /// writer's); an older one is ignored.
    pub(crate) fn note_compacted(&self, state: Compacted) {
        let mut c = self.compacted.write();
        if state.through >= c.through {
            *c = state;
        }
    }

    /// Where the sealed samples of `bucket` are read from, given the
    /// compaction state's `through`.
    pub(crate) fn span_of(&self, bucket: i64, through: i64) -> Span {
        if bucket < through {
            let n = self.settings.block_buckets();
            Span::Block(bucket.div_euclid(n).saturating_mul(n))
        } else {
            Span::Bucket(bucket)
        }
    }

    /// The buckets a span holds, `[first, end)`.
    pub(crate) fn span_buckets(&self, span: Span) -> (i64, i64) {
        match span {
            Span::Bucket(b) => (b, b.saturating_add(1)),
            Span::Block(b) => (b, b.saturating_add(self.settings.block_buckets())),
        }
    }

    /// The spans of sealed buckets `first..=last`, in time order, each with
    /// the first bucket after what is read of it (a block not yet whole
    /// holds the buckets before `through` only), but for those past the
    /// retention (their end plus the retention has passed): a block is
    /// kept or dropped whole, as its keys expire together.
    pub(crate) fn spans(&self, first: i64, last: i64) -> Vec<(Span, i64)> {
        let through = self.compacted().through;
        let bucket_ms = self.settings.bucket_ms();
        let expired_before = self
            .clock
            .now_ms()
            .saturating_sub(self.settings.retention_ms());
        let mut out = Vec::new();
        let mut b = first;
        while b <= last {
            let span = self.span_of(b, through);
            let end = self.span_buckets(span).1;
            let read_end = end.min(through.max(b + 1));
            if end.saturating_mul(bucket_ms) > expired_before {
                out.push((span, read_end));
            }
            b = read_end;
        }
        out
    }
}

impl Shared {
    /// Whether a newer writer fenced this one.
    pub(crate) fn is_fenced(&self) -> bool {
        self.writing()
            .is_some_and(|w| w.fenced.load(Ordering::Acquire))
    }

    /// What only a writer keeps; `None` on a reader node.
    pub(crate) fn writing(&self) -> Option<&WriterState> {
        match &self.role {
            Role::Writer(w) => Some(w),
            Role::Reader(_) => None,
        }
    }

    /// What only a reader node keeps; `None` on a writer.
    pub(crate) fn reading(&self) -> Option<&ReaderState> {
        match &self.role {
            Role::Reader(r) => Some(r),
            Role::Writer(_) => None,
        }
    }

    /// SlateDB's writes not yet in a level-0 table (its memtables and WAL
    /// buffer), as SlateDB estimated them at its last write: the figure
    /// `storage.max_unflushed_bytes` limits.
    pub(crate) fn unflushed_bytes(&self) -> u64 {
        let metrics = self.slatedb_metrics.snapshot();
        let value = metrics
            .by_name(UNFLUSHED_METRIC)
            .first()
            .map_or(0, |m| match m.value {
                MetricValue::Gauge(v) | MetricValue::UpDownCounter(v) => v,
                _ => 0,
            });
        u64::try_from(value).unwrap_or(0)
    }

    /// Holds a background write (a seal's, a spill's or a compaction's
    /// batch) back while SlateDB's unflushed writes are a memtable's worth
    /// (`storage.memtable_bytes`) or more, for at most [`BACKGROUND_WAIT`];
    /// returns at once when `hurry` is set.
    ///
    /// A memtable's entries take about twice the bytes SlateDB counts (a
    /// skip-list node beside each key and value), and a seal or a
    /// compaction writes a million small keys at 1 M series: left to fill
    /// up to half `storage.max_unflushed_bytes`, they held a memtable
    /// being written and another one full beside it, the writer's highest
    /// memory. Waiting at one memtable, background work fills the next
    /// only once the one before is in a level-0 table.
    ///
    /// SlateDB holds every write back at `storage.max_unflushed_bytes`, the
    /// coordinator's log records included. Behind an ingest backlog its
    /// level-0 tables wait for its compactor and the memtables fill: at
    /// 2 M series on two cores they reached 768 MiB by its count, 1.5 GiB
    /// of heap. Background work yields first, so ingest meets the limit
    /// only when it alone fills the memtables; the head keeps what the seal
    /// has not written yet, in its compact form, meanwhile. The wait is
    /// bounded so a seal always moves on.
    pub(crate) async fn room_for_background(&self, hurry: &AtomicBool) {
        let high = self
            .settings
            .memtable_bytes
            .min(self.settings.max_unflushed_bytes / 2);
        let waited = wait_below(|| self.unflushed_bytes(), high, hurry, BACKGROUND_WAIT).await;
        if !waited.is_zero() {
            self.stats.background_wait.observe(waited);
        }
    }
}

/// Waits while `level()` is at `high` or more, until `hurry` is set or
/// `most` has passed; how long it waited.
async fn wait_below(
    level: impl Fn() -> u64,
    high: u64,
    hurry: &AtomicBool,
    most: std::time::Duration,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    while !hurry.load(Ordering::Relaxed) && level() >= high && started.elapsed() < most {
        tokio::time::sleep(BACKGROUND_POLL).await;
    }
    started.elapsed()
}

/// SlateDB's gauge of its unflushed writes.
const UNFLUSHED_METRIC: &str = "slatedb.db.total_mem_size_bytes";

/// For [`Shared::room_for_background`] from work that never hurries (a
/// spill, a compaction): it can wait.
pub(crate) static NO_HURRY: AtomicBool = AtomicBool::new(false);

/// Longest a background batch waits for SlateDB's memtables to drain.
const BACKGROUND_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How often a waiting background batch looks again.
const BACKGROUND_POLL: std::time::Duration = std::time::Duration::from_millis(20);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    use super::wait_below;

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_background_write_waits_until_the_level_falls_below_high() {
        let hurry = AtomicBool::new(false);
        // Below high: one look, no wait.
        let looks = AtomicU64::new(0);
        wait_below(
            || {
                looks.fetch_add(1, Ordering::Relaxed);
                10
            },
            50,
            &hurry,
            LONG,
        )
        .await;
        assert_eq!(looks.load(Ordering::Relaxed), 1);
        // At high and falling by 10 a look: it looks until the level is
        // below high, and no longer.
        let level = AtomicU64::new(100);
        let waited = wait_below(|| level.fetch_sub(10, Ordering::Relaxed), 50, &hurry, LONG).await;
        assert_eq!(
            level.load(Ordering::Relaxed),
            30,
            "100..=50 at high, 40 below"
        );
        assert!(waited < LONG);
    }

    #[tokio::test]
    async fn a_background_write_waits_at_most_the_bound_and_not_when_hurried() {
        let hurry = AtomicBool::new(false);
        let most = Duration::from_millis(120);
        let looks = AtomicU64::new(0);
        let waited = wait_below(
            || {
                looks.fetch_add(1, Ordering::Relaxed);
                100
            },
            50,
            &hurry,
            most,
        )
        .await;
        assert!(waited >= most, "{waited:?}");
        assert!(looks.load(Ordering::Relaxed) > 1);
        // Hurried: not even a look.
        hurry.store(true, Ordering::Relaxed);
        let looks = AtomicU64::new(0);
        wait_below(
            || {
                looks.fetch_add(1, Ordering::Relaxed);
                100
            },
            50,
            &hurry,
            LONG,
        )
        .await;
        assert_eq!(looks.load(Ordering::Relaxed), 0);
    }
}
