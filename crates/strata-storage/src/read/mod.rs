//! The read API for the query layer: series selection by matchers, samples
//! over head plus sealed chunks, label names and values.
//!
//! A read takes the head's `sealed_through` first, reads unsealed buckets
//! from the head, then re-reads it: buckets sealed in between are read from
//! the store (their chunks were written before `sealed_through` moved).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use strata_codec::labels::sort_key;
use strata_codec::{Label, Matcher, Series, SeriesMap};

use crate::error::StorageError;
use crate::head::NONE_SEALED;
use crate::keys::Span;
use crate::state::tombstones::{self, Tombstone};
use crate::storage::Storage;

mod decode;
mod head;
mod sealed;

use decode::{decode_jobs, insert_stored, task_failed, DecodeJob, Samples, SealedPart};
pub(crate) use sealed::FoundKeys;

/// `map` after the deletions `deleted` have cut each series: `map` itself
/// when there are none.
fn with_deletions(deleted: Arc<[Tombstone]>, map: Option<&SeriesMap>) -> Option<SeriesMap> {
    if deleted.is_empty() {
        return map.cloned();
    }
    let then = map.cloned();
    Some(Arc::new(move |series| {
        let kept = tombstones::apply(&deleted, series)?;
        match &then {
            Some(map) => map(kept),
            None => Some(kept),
        }
    }))
}

/// Sealed buckets read at once by one select.
const BUCKET_FETCH_CONCURRENCY: usize = 8;

impl Storage {
    /// Every series matching all matchers with samples in [mint, maxt]
    /// (inclusive, ms), samples cut to that range and ascending.
    pub async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, StorageError> {
        self.select_mapped(matchers, mint, maxt, None).await
    }

    /// [`Self::select`], each series passed through `map` as soon as it is
    /// read (on the thread that decoded it), so only what `map` keeps is
    /// held: sorted by labels after `map`.
    pub async fn select_mapped(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        map: Option<&SeriesMap>,
    ) -> Result<Vec<Series>, StorageError> {
        if mint > maxt {
            return Ok(Vec::new());
        }
        let map = with_deletions(self.shared.tombstones.get(), map);
        let map = map.as_ref();
        let head = &self.shared.head;
        let bucket_ms = self.shared.settings.bucket_ms();
        let sealed_before = head.sealed_through().unwrap_or(NONE_SEALED);

        // Head part first, then anything sealed meanwhile from the store.
        let reads = head.read_ranges(matchers, sealed_before, bucket_ms, mint, maxt);
        let sealed_after = head.sealed_through().unwrap_or(NONE_SEALED);
        let mut head_parts: BTreeMap<u64, (Vec<i64>, Vec<f64>)> = BTreeMap::new();
        // Late samples the head holds apart, merged after its part.
        let mut extras: BTreeMap<u64, Vec<Samples>> = BTreeMap::new();
        let mut spilled = Vec::new();
        // Series of buckets a seal under way has written and the head let
        // go, by bucket: unless sealed meanwhile (then read as sealed).
        let mut released: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
        for mut read in reads {
            for &b in read.released.iter().filter(|&&b| b > sealed_after) {
                released.entry(b).or_default().push(read.id);
            }
            if !read.extra_ts.is_empty() {
                extras.entry(read.id).or_default().push((
                    std::mem::take(&mut read.extra_ts),
                    std::mem::take(&mut read.extra_vs),
                ));
            }
            if sealed_after != sealed_before {
                // Head data of buckets sealed meanwhile may be partial; drop
                // it and read those buckets from the store.
                let cut = sealed_after.saturating_add(1).saturating_mul(bucket_ms);
                let keep = read.timestamps.partition_point(|&t| t < cut);
                read.timestamps.drain(..keep);
                read.values.drain(..keep);
                read.spilled.retain(|&(b, _, _)| b > sealed_after);
            }
            spilled.extend(
                read.spilled
                    .iter()
                    .map(|&(b, first, last)| (Span::Bucket(b), read.id, first, last)),
            );
            head_parts.insert(read.id, (read.timestamps, read.values));
        }

        let (first, last) = self.bucket_range(mint, maxt);
        let last_sealed = last.min(sealed_after);
        let spans: Vec<(Span, i64)> = if sealed_after == NONE_SEALED || first > last_sealed {
            Vec::new()
        } else {
            self.shared.spans(first, last_sealed)
        };
        // Buckets are fetched concurrently, then decoded in bucket order so
        // each series' samples stay ascending.
        // The head's spilled segments are read beside the sealed buckets.
        // Each on a task of its own, so that they run on every worker.
        let sealed = futures::stream::iter(spans)
            .map(|b| {
                let (view, matchers) = (Storage::view(Arc::clone(&self.shared)), matchers.to_vec());
                async move {
                    tokio::spawn(
                        async move { view.sealed_chunks(b, &matchers, (mint, maxt)).await },
                    )
                    .await
                    .map_err(task_failed("read task"))?
                }
            })
            .buffered(BUCKET_FETCH_CONCURRENCY)
            .try_collect::<Vec<Vec<SealedPart>>>();
        let head_histograms =
            head.read_histogram_ranges(matchers, sealed_before, bucket_ms, mint, maxt);
        let (fetched, (), released, mut histograms) = futures::try_join!(
            sealed,
            self.add_spilled(&mut spilled, &mut head_parts, mint, maxt),
            self.released_samples(released, mint, maxt),
            self.stored_histograms(matchers, first, last_sealed, sealed_after, mint, maxt)
        )?;
        let cut = sealed_after.saturating_add(1).saturating_mul(bucket_ms);
        for (id, mut list) in head_histograms {
            if sealed_after != sealed_before {
                // Sealed meanwhile: read from the store above.
                list.retain(|(t, _)| *t >= cut);
            }
            histograms.entry(id).or_default().extend(list);
        }
        for list in histograms.values_mut() {
            list.sort_by_key(|(t, _)| *t);
            list.dedup_by_key(|(t, _)| *t);
        }
        for (id, samples) in released {
            insert_stored(head_parts.entry(id).or_default(), samples);
        }
        // Each series' parts in span order, its labels, then the decode:
        // spread over the cores when there is much of it.
        let mut by_series: BTreeMap<u64, Vec<SealedPart>> = BTreeMap::new();
        for part in fetched.into_iter().flatten() {
            by_series.entry(part.id).or_default().push(part);
        }
        let mut jobs = Vec::with_capacity(by_series.len());
        for (id, parts) in by_series {
            let Some(labels) = self.labels_of(id).await? else {
                continue;
            };
            let head = head_parts
                .remove(&id)
                .into_iter()
                .chain(extras.remove(&id).into_iter().flatten())
                .collect();
            jobs.push(DecodeJob {
                labels,
                parts,
                head,
                histograms: histograms.remove(&id).unwrap_or_default(),
            });
        }
        // Series only the head holds: its part, then its late samples.
        let head_only = head_parts.into_iter().map(|(id, part)| {
            let late = extras.remove(&id).into_iter().flatten();
            (id, std::iter::once(part).chain(late).collect::<Vec<_>>())
        });
        let head_only: Vec<(u64, Vec<Samples>)> = head_only.collect();
        let histogram_only: Vec<(u64, Vec<Samples>)> = histograms
            .keys()
            .filter(|id| !head_only.iter().any(|(h, _)| h == *id) && !extras.contains_key(id))
            .map(|&id| (id, Vec::new()))
            .collect();
        for (id, head) in head_only.into_iter().chain(extras).chain(histogram_only) {
            // Labels as of now: the head may have dropped the series since.
            if let Some(labels) = self.labels_of(id).await? {
                jobs.push(DecodeJob {
                    labels,
                    parts: Vec::new(),
                    head,
                    histograms: histograms.remove(&id).unwrap_or_default(),
                });
            }
        }
        let mut series = decode_jobs(jobs, mint, maxt, map).await?;
        series.sort_by_cached_key(|s| sort_key(&s.labels));
        Ok(series)
    }

    /// Label sets of series matching every matcher that have samples in
    /// [mint, maxt], at bucket granularity for sealed data.
    pub async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, StorageError> {
        let head = &self.shared.head;
        let bucket_ms = self.shared.settings.bucket_ms();
        let sealed_before = head.sealed_through().unwrap_or(NONE_SEALED);
        let matching = head.series_for(&head.select_ids(matchers));
        let mut ids = head.overlapping(&matching, sealed_before, bucket_ms, mint, maxt);
        // A bucket sealed meanwhile may have left the head before it was
        // looked at: read from the store as sealed.
        let sealed = head.sealed_through().unwrap_or(NONE_SEALED);
        let (first, last) = self.bucket_range(mint, maxt);
        if sealed != NONE_SEALED && first <= last.min(sealed) {
            for (span, _) in self.shared.spans(first, last.min(sealed)) {
                ids.extend(self.sealed_ids(span, matchers).await?);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        // Deletions do not hide a series here, as in Prometheus' head: its
        // samples are gone, its name stays until retention.
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(labels) = self.labels_of(id).await? {
                out.push(labels);
            }
        }
        out.sort_by_cached_key(|l| sort_key(l));
        Ok(out)
    }

    /// Sorted label names of the matching series (all series without
    /// matchers) with samples in [mint, maxt].
    pub async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, StorageError> {
        let mut names: Vec<String> = self
            .series(matchers, mint, maxt)
            .await?
            .into_iter()
            .flatten()
            .map(|l| l.name)
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    /// Sorted values of label `name` among the matching series.
    pub async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, StorageError> {
        let mut values: Vec<String> = self
            .series(matchers, mint, maxt)
            .await?
            .into_iter()
            .filter_map(|ls| ls.into_iter().find(|l| l.name == name).map(|l| l.value))
            .collect();
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }
}
