//! A write's samples of sealed buckets checked against what the store
//! already holds: a sender re-sending its backlog, or an import run twice,
//! writes nothing twice.

use futures::{StreamExt, TryStreamExt};

use strata_codec::render::render_labels;

use crate::coordinator::{ResolvedSeries, WriteOutcome};
use crate::error::StorageError;
use crate::head::Rejection;
use crate::keys::{self, Span};
use crate::storage::Storage;
use crate::values;

/// Timestamps and values of one series, ascending.
type Samples = (Vec<i64>, Vec<f64>);

/// Takes out of a write the samples of sealed buckets (before
/// `sealed_end`) that the store already holds: the same value is a
/// duplicate (a sender re-sending its backlog, an import run twice),
/// another value a conflict. Reads the series' stored samples of each
/// such bucket, on the request's own task; series new to the head have
/// none.
pub(crate) async fn drop_stored(
    storage: &Storage,
    series: Vec<ResolvedSeries>,
    fresh: &[bool],
    samples: Vec<(i64, f64)>,
    sealed_end: i64,
    refused: &mut WriteOutcome,
) -> Result<(Vec<ResolvedSeries>, Vec<(i64, f64)>), StorageError> {
    let bucket_ms = storage.shared.settings.bucket_ms();
    let through = storage.shared.compacted().through;
    let span_of = |t: i64| storage.shared.span_of(t.div_euclid(bucket_ms), through);
    // (series index, bucket or block) of every stored span to look at.
    let mut wanted: Vec<(usize, Span)> = Vec::new();
    for (i, rs) in series.iter().enumerate() {
        if fresh.get(i).copied().unwrap_or(true) {
            continue;
        }
        let mut last = None;
        for &(t, _) in samples.get(rs.samples.clone()).unwrap_or_default() {
            let b = span_of(t);
            if t < sealed_end && last != Some(b) {
                last = Some(b);
                wanted.push((i, b));
            }
        }
    }
    wanted.sort_unstable();
    wanted.dedup();
    // A series holds data in a sealed bucket only if the bucket's
    // postings or late markers list it: one read per bucket instead of
    // one per series finds that history sent for the first time (a
    // backfill, an import) has nothing to compare with.
    let mut buckets: Vec<Span> = wanted.iter().map(|&(_, b)| b).collect();
    buckets.sort_unstable();
    buckets.dedup();
    let listed: Vec<(Span, Vec<u64>)> = futures::stream::iter(buckets)
        .map(|b| async move {
            let mut ids = storage.late_ids(b).await?;
            if let Some(v) = storage
                .shared
                .backend
                .get(&keys::all_postings_key(b))
                .await?
            {
                values::decode_postings(&v, &mut ids)?;
            }
            ids.sort_unstable();
            Ok::<_, StorageError>((b, ids))
        })
        .buffered(8)
        .try_collect()
        .await?;
    let listed: rustc_hash::FxHashMap<Span, Vec<u64>> = listed.into_iter().collect();
    wanted.retain(|&(i, b)| {
        let id = series.get(i).map_or(0, |rs| rs.series.id);
        listed
            .get(&b)
            .is_some_and(|ids| ids.binary_search(&id).is_ok())
    });
    let stored: Vec<((usize, Span), Option<Samples>)> = futures::stream::iter(wanted)
        .map(|(i, b)| {
            let id = series.get(i).map_or(0, |rs| rs.series.id);
            async move {
                let got = match storage.series_bucket(b, id).await? {
                    Some(sb) => Some(sb.samples(i64::MIN, i64::MAX)?),
                    None => None,
                };
                Ok::<_, StorageError>(((i, b), got))
            }
        })
        .buffered(16)
        .try_collect()
        .await?;
    if stored.iter().all(|(_, got)| got.is_none()) {
        return Ok((series, samples));
    }
    let stored: rustc_hash::FxHashMap<(usize, Span), Samples> = stored
        .into_iter()
        .filter_map(|(k, got)| Some((k, got?)))
        .collect();
    let mut kept = Vec::with_capacity(samples.len());
    let mut out = Vec::with_capacity(series.len());
    for (i, rs) in series.into_iter().enumerate() {
        let at = kept.len();
        for &(t, v) in samples.get(rs.samples.clone()).unwrap_or_default() {
            let held = stored
                .get(&(i, span_of(t)))
                .and_then(|(ts, vs)| vs.get(ts.binary_search(&t).ok()?).copied());
            match held {
                None => kept.push((t, v)),
                Some(h) if h.to_bits() == v.to_bits() => refused.duplicates += 1,
                Some(h) => {
                    refused.rejected += 1;
                    if refused.first_rejection.is_none() {
                        refused.first_rejection = Some((
                            render_labels(&rs.series.labels),
                            Rejection::Conflicting {
                                t,
                                value: v,
                                existing: h,
                            },
                        ));
                    }
                }
            }
        }
        if kept.len() > at || !rs.exemplars.is_empty() || !rs.histograms.is_empty() {
            out.push(ResolvedSeries {
                series: rs.series,
                samples: at..kept.len(),
                exemplars: rs.exemplars,
                histograms: rs.histograms,
            });
        }
    }
    Ok((out, kept))
}
