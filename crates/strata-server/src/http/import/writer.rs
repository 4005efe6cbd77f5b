//! The batches written as they come, each through the remote-write checks
//! and the tenant's limits, with the counts of the import.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::Response;
use strata_storage::{Durability, StorageError, WriteLimits};
use strata_write::DecodedWrite;
use tokio::sync::mpsc;

use super::parse::Batch;
use super::{MAX_QUOTED, PROGRESS_EVERY};
use crate::http::write::storage_error;
use crate::ingest::{check_series, ingest_series};
use crate::state::AppState;
use crate::tenants::Tenant;

/// Counts of one import, kept by the writer.
pub(super) struct Tally {
    pub(super) started: Instant,
    pub(super) samples: u64,
    pub(super) written: u64,
    pub(super) rejected: u64,
    pub(super) rejections: Vec<String>,
    next_progress: u64,
}

impl Tally {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            samples: 0,
            written: 0,
            rejected: 0,
            rejections: Vec::new(),
            next_progress: PROGRESS_EVERY,
        }
    }

    pub(super) fn rate(&self) -> u64 {
        let secs = self.started.elapsed().as_secs_f64();
        if secs > 0.0 {
            (self.samples as f64 / secs) as u64
        } else {
            0
        }
    }

    fn quote(&mut self, msg: String) {
        if self.rejections.len() < MAX_QUOTED {
            self.rejections.push(msg);
        }
    }
}

/// Waits until the tenant's ingest-rate budget has `n` samples, taking
/// them in pieces no larger than its burst.
async fn pace(state: &AppState, tenant: &Tenant, n: usize) {
    let limits = state.tenants.limits(tenant);
    if limits.ingest_rate_limit == 0 {
        return;
    }
    let burst = match limits.ingest_burst {
        0 => limits.ingest_rate_limit,
        b => b,
    };
    let piece_max = usize::try_from(burst).unwrap_or(usize::MAX).max(1);
    let mut left = n;
    let mut told = false;
    while left > 0 {
        let piece = left.min(piece_max);
        match state.tenants.take(tenant, piece) {
            Ok(()) => left -= piece,
            Err((wait, rate)) => {
                if !told {
                    tracing::info!(
                        tenant = state.tenants.name(tenant),
                        rate,
                        "import paced by the tenant's ingest rate limit"
                    );
                    told = true;
                }
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
    }
}

/// Writes batches as they come; answers the response that stopped the
/// import, if one did.
pub(super) async fn write_batches(
    state: &AppState,
    storage: &Arc<strata_storage::Writer>,
    tenant: &Tenant,
    durability: Durability,
    write_limits: WriteLimits,
    mut rx: mpsc::Receiver<Batch>,
    tally: &mut Tally,
) -> Option<(StorageError, Response)> {
    while let Some(batch) = rx.recv().await {
        let n = batch.samples;
        tally.samples += n as u64;
        state
            .metrics
            .samples_received
            .fetch_add(n as u64, Ordering::Relaxed);
        pace(state, tenant, n).await;
        let mut decoded = DecodedWrite {
            series: batch.series,
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        };
        check_series(&mut decoded, &state.series_limits, tenant, storage.now_ms());
        for r in &decoded.rejected {
            tally.rejected += r.samples as u64;
            tally.quote(r.to_string());
        }
        let series = ingest_series(decoded.series);
        let outcome = match storage.write_with(series, durability, write_limits).await {
            Ok(o) => o,
            Err(e) => {
                let resp = storage_error(&e);
                return Some((e, resp));
            }
        };
        tally.written += (outcome.appended + outcome.duplicates) as u64;
        tally.rejected += outcome.rejected as u64;
        if let Some((series, why)) = &outcome.first_rejection {
            tally.quote(format!(
                "series {series}: {why} ({} samples of this batch rejected)",
                outcome.rejected
            ));
        }
        if tally.samples >= tally.next_progress {
            tally.next_progress = (tally.samples / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
            tracing::info!(
                tenant = state.tenants.name(tenant),
                samples = tally.samples,
                written = tally.written,
                rejected = tally.rejected,
                samples_per_sec = tally.rate(),
                "import progress"
            );
        }
    }
    None
}
