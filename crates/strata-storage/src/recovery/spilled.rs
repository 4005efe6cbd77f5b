//! Segments the head spilled in unsealed buckets, given back to their
//! series before the replay so it skips the samples they hold.

use super::series::fetch_series;
use crate::backend::{Backend, ScanKind};
use crate::error::StorageError;
use crate::head::Head;
use crate::keys;

/// What [`restore_spilled`] found.
#[derive(Default)]
pub(super) struct Spilled {
    pub(super) buckets: std::collections::BTreeSet<i64>,
    pub(super) segments: usize,
    /// Each series' last spilled sample: the series' last sample after the
    /// replay if none replayed is newer.
    pub(super) ends: Vec<SpilledEnd>,
}

/// A series, and the time and value of its last spilled sample.
type SpilledEnd = (std::sync::Arc<crate::head::MemSeries>, i64, f64);

/// The segments of one series and bucket, and the last one's value.
struct SegmentRun {
    bucket: i64,
    id: u64,
    segments: Vec<(i64, i64)>,
    samples: u32,
    last: bytes::Bytes,
}

fn segment_len(value: &[u8]) -> u32 {
    u32::try_from(strata_codec::chunk_len_hint(value)).unwrap_or(u32::MAX)
}

/// Runs of segments resolved and restored at a time.
const RUNS_PER_BATCH: usize = 1024;

/// Gives each series the segments its head spilled in buckets after
/// `sealed_through`, so the replay skips the samples they hold. Series the
/// head does not hold yet are read from their `S` keys.
pub(super) async fn restore_spilled(
    db: &Backend,
    head: &Head,
    sealed_through: i64,
) -> Result<Spilled, StorageError> {
    let mut found = Spilled::default();
    let from = keys::chunk_prefix(sealed_through.saturating_add(1));
    let mut it = db
        .scan_as(from..vec![keys::CHUNK + 1], ScanKind::Bulk)
        .await?;
    let mut runs: Vec<SegmentRun> = Vec::new();
    while let Some(kv) = it.next().await? {
        let Some((bucket, id, first, last)) = keys::segment_parts(&kv.key) else {
            continue;
        };
        found.buckets.insert(bucket);
        found.segments += 1;
        match runs.last_mut() {
            Some(r) if r.bucket == bucket && r.id == id => {
                r.segments.push((first, last));
                r.samples = r.samples.saturating_add(segment_len(&kv.value));
                r.last = kv.value;
            }
            _ => {
                if runs.len() >= RUNS_PER_BATCH {
                    restore_runs(db, head, std::mem::take(&mut runs), &mut found.ends).await?;
                }
                runs.push(SegmentRun {
                    bucket,
                    id,
                    segments: vec![(first, last)],
                    samples: segment_len(&kv.value),
                    last: kv.value,
                });
            }
        }
    }
    restore_runs(db, head, runs, &mut found.ends).await?;
    Ok(found)
}

/// Gives each run's series its segments; notes the last spilled sample of
/// each in `ends`.
async fn restore_runs(
    db: &Backend,
    head: &Head,
    runs: Vec<SegmentRun>,
    ends: &mut Vec<SpilledEnd>,
) -> Result<(), StorageError> {
    let mut ids: Vec<u64> = runs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    fetch_series(db, head, &ids).await?;
    for run in runs {
        let SegmentRun {
            bucket,
            id,
            segments,
            samples,
            last,
        } = run;
        let Some(series) = head.series_by_id(id) else {
            tracing::error!(bucket, series = id, "spilled segment of an unknown series");
            continue;
        };
        let last_t = segments.last().map_or(i64::MAX, |s| s.1);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        strata_codec::decode_chunk_range_into(&last, last_t, last_t, &mut ts, &mut vs)?;
        series.restore_spilled(bucket, segments, samples);
        ends.push((series, last_t, vs.last().copied().unwrap_or(0.0)));
    }
    Ok(())
}
