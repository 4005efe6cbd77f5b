//! The reader node's log follower: polls the writer's log into the local
//! head, drops buckets from the head once the writer's checkpoint says
//! they are sealed, and reads the writer's deletions again every
//! [`TOMBSTONE_POLL`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::ScanKind;
use crate::compact::read_compacted;
use crate::head::NONE_SEALED;
use crate::recovery::{read_checkpoint, LogFollower};
use crate::shared::Shared;
use crate::stats::add;
use crate::tombstones::TOMBSTONE_POLL;

pub(crate) async fn follow(
    inner: Arc<Shared>,
    mut follower: LogFollower,
    poll: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    // The deletions were read at open.
    let mut deletions_read = std::time::Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        // What the poll reads was in the log when it began.
        let began_ms = inner.clock.now_ms();
        let result = async {
            // Seal first: samples of a sealed bucket are then skipped, and
            // its chunks are read from the store.
            let cp = read_checkpoint(&inner.backend).await?;
            if let Some(b) = cp.sealed_through {
                if inner.head.sealed_through().is_none_or(|s| s < b) {
                    inner.head.mark_sealed(b);
                    follower.sealed(b);
                }
            }
            inner.note_compacted(read_compacted(&inner.backend).await?);
            if deletions_read.elapsed() >= TOMBSTONE_POLL {
                crate::tombstones::load(&inner).await?;
                deletions_read = std::time::Instant::now();
            }
            let sealed = inner.head.sealed_through().unwrap_or(NONE_SEALED);
            follower
                .catch_up(&inner.backend, &inner.head, sealed, ScanKind::Short)
                .await
        }
        .await;
        match result {
            Ok(n) => {
                add(&inner.stats.samples_appended, n);
                if let Some(reader) = inner.reading() {
                    reader.followed_ms.store(began_ms, Ordering::Relaxed);
                }
                if failing {
                    tracing::info!("following the writer's log again");
                    failing = false;
                }
            }
            Err(e) => {
                inner.stats.write_errors.fetch_add(1, Ordering::Relaxed);
                if !failing {
                    tracing::warn!(error = %e, "cannot follow the writer's log; retrying");
                    failing = true;
                }
            }
        }
    }
}
