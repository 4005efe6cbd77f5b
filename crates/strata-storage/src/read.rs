//! The read API for the query layer: series selection by matchers, samples
//! over head plus sealed chunks, label names and values.
//!
//! A read takes the head's `sealed_through` first, reads unsealed buckets
//! from the head, then re-reads it: buckets sealed in between are read from
//! the store (their chunks were written before `sealed_through` moved).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use strata_codec::{chunk_len_hint, decode_chunk_range_into, Label, LabelPairs, Matcher};

use crate::error::StorageError;
use crate::head::{MemSeries, NONE_SEALED};
use crate::keys;
use crate::postings::{combine, union, MatcherSet};
use crate::values;
use crate::Storage;

/// Sealed buckets read at once by one select.
const BUCKET_FETCH_CONCURRENCY: usize = 8;
/// Up to this many series of a bucket are read with point reads.
const POINT_READS_UP_TO: usize = 16;
/// Point reads in flight at once per bucket.
const POINT_READ_CONCURRENCY: usize = 16;

/// One series' samples in a time range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesData {
    pub labels: Vec<Label>,
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
}

impl Storage {
    fn bucket_range(&self, mint: i64, maxt: i64) -> (i64, i64) {
        let bucket_ms = self.inner.settings.bucket_ms();
        let now = self.inner.clock.now_ms();
        let oldest_kept = now
            .saturating_sub(self.inner.settings.retention_ms())
            .div_euclid(bucket_ms)
            - 1;
        (
            mint.div_euclid(bucket_ms).max(oldest_kept),
            maxt.div_euclid(bucket_ms),
        )
    }

    /// Ids of series in sealed bucket `bucket` matching every matcher.
    async fn sealed_ids(
        &self,
        bucket: i64,
        matchers: &[Matcher],
    ) -> Result<Vec<u64>, StorageError> {
        let db = &self.inner.backend;
        let mut sets = Vec::with_capacity(matchers.len());
        for m in matchers {
            let matches_empty = m.matches_empty();
            if !matches_empty && m.op == strata_codec::MatchOp::Equal {
                let mut ids = Vec::new();
                if let Some(v) = db
                    .get(&keys::postings_key(bucket, &m.name, &m.value))
                    .await?
                {
                    values::decode_postings(&v, &mut ids)?;
                }
                sets.push(MatcherSet::Include(ids));
                continue;
            }
            let prefix = keys::postings_name_prefix(bucket, &m.name);
            let end = keys::prefix_end(&prefix);
            let mut it = db.scan(prefix..end).await?;
            let mut lists = Vec::new();
            while let Some(kv) = it.next().await? {
                let Some((_, value)) = keys::postings_name_value(&kv.key) else {
                    continue;
                };
                // Include matching values, or (for matchers that accept an
                // absent label) exclude the values that do not match.
                if m.matches(value) != matches_empty {
                    let mut ids = Vec::new();
                    values::decode_postings(&kv.value, &mut ids)?;
                    lists.push(ids);
                }
            }
            sets.push(if matches_empty {
                MatcherSet::Exclude(union(lists))
            } else {
                MatcherSet::Include(union(lists))
            });
        }
        let needs_all = sets.iter().all(|s| matches!(s, MatcherSet::Exclude(_)));
        let mut all = Vec::new();
        if needs_all {
            if let Some(v) = db.get(&keys::all_postings_key(bucket)).await? {
                values::decode_postings(&v, &mut all)?;
            }
        }
        Ok(combine(sets, || all))
    }

    /// The sealed chunks of the series matching `matchers` in `bucket`,
    /// ascending by series id. Few series: concurrent point reads; many:
    /// one ordered scan of the bucket's chunks that seeks from id to id.
    async fn sealed_chunks(
        &self,
        bucket: i64,
        matchers: &[Matcher],
    ) -> Result<Vec<(u64, bytes::Bytes)>, StorageError> {
        let ids = self.sealed_ids(bucket, matchers).await?;
        let backend = &self.inner.backend;
        if ids.len() <= POINT_READS_UP_TO {
            let got: Vec<(u64, Option<bytes::Bytes>)> = futures::stream::iter(ids)
                .map(|id| async move {
                    backend
                        .get(&keys::chunk_key(bucket, id))
                        .await
                        .map(|c| (id, c))
                })
                .buffered(POINT_READ_CONCURRENCY)
                .try_collect()
                .await?;
            return Ok(got
                .into_iter()
                .filter_map(|(id, c)| c.map(|c| (id, c)))
                .collect());
        }
        let prefix = keys::chunk_prefix(bucket);
        let end = keys::prefix_end(&prefix);
        let mut it = backend.scan(prefix..end).await?;
        let mut out = Vec::with_capacity(ids.len());
        // The key after the last seek, when it belonged to a later series:
        // the iterator cannot seek back to it.
        let mut ahead: Option<(u64, bytes::Bytes)> = None;
        for id in ids {
            if let Some((next_id, value)) = &ahead {
                match next_id.cmp(&id) {
                    std::cmp::Ordering::Greater => continue,
                    std::cmp::Ordering::Equal => {
                        out.push((id, value.clone()));
                        ahead = None;
                        continue;
                    }
                    std::cmp::Ordering::Less => ahead = None,
                }
            }
            it.seek(keys::chunk_key(bucket, id)).await?;
            let Some(kv) = it.next().await? else {
                break;
            };
            match keys::chunk_series(&kv.key) {
                Some(found) if found == id => out.push((id, kv.value)),
                Some(found) => ahead = Some((found, kv.value)),
                None => {}
            }
        }
        Ok(out)
    }

    /// Labels of a series by id: from the head, else from its `S` key.
    async fn labels_of(&self, id: u64) -> Result<Option<Arc<MemSeries>>, StorageError> {
        if let Some(s) = self.inner.head.series_by_id(id) {
            return Ok(Some(s));
        }
        match self.inner.backend.get(&keys::series_key(id)).await? {
            Some(v) => {
                let (written, labels) = values::decode_series(&v)?;
                Ok(Some(self.inner.head.insert_recovered(id, labels, written)))
            }
            None => Ok(None),
        }
    }

    /// Every series matching all matchers with samples in [mint, maxt]
    /// (inclusive, ms), samples cut to that range and ascending.
    pub async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<SeriesData>, StorageError> {
        if mint > maxt {
            return Ok(Vec::new());
        }
        let head = &self.inner.head;
        let bucket_ms = self.inner.settings.bucket_ms();
        let sealed_before = head.sealed_through().unwrap_or(NONE_SEALED);

        // Head part first, then anything sealed meanwhile from the store.
        let mut out: BTreeMap<u64, SeriesData> = BTreeMap::new();
        let mut head_parts: BTreeMap<u64, (Vec<i64>, Vec<f64>)> = head
            .read_ranges(matchers, sealed_before, bucket_ms, mint, maxt)
            .into_iter()
            .map(|(id, ts, vs)| (id, (ts, vs)))
            .collect();
        let sealed_after = head.sealed_through().unwrap_or(NONE_SEALED);
        if sealed_after != sealed_before {
            // Head data of buckets sealed meanwhile may be partial; drop it
            // and read those buckets from the store.
            let cut = sealed_after.saturating_add(1).saturating_mul(bucket_ms);
            for (ts, vs) in head_parts.values_mut() {
                let keep = ts.partition_point(|&t| t < cut);
                ts.drain(..keep);
                vs.drain(..keep);
            }
        }

        let (first, last) = self.bucket_range(mint, maxt);
        let last_sealed = last.min(sealed_after);
        let buckets: Vec<i64> = if sealed_after == NONE_SEALED || first > last_sealed {
            Vec::new()
        } else {
            (first..=last_sealed).collect()
        };
        // Buckets are fetched concurrently, then decoded in bucket order so
        // each series' samples stay ascending.
        let fetched: Vec<Vec<(u64, bytes::Bytes)>> = futures::stream::iter(buckets)
            .map(|b| self.sealed_chunks(b, matchers))
            .buffered(BUCKET_FETCH_CONCURRENCY)
            .try_collect()
            .await?;
        // Each series' buffers are sized once for all its chunks, so
        // decoding never moves samples already decoded.
        let mut sizes: BTreeMap<u64, usize> = BTreeMap::new();
        for (id, chunk) in fetched.iter().flatten() {
            *sizes.entry(*id).or_default() += chunk_len_hint(chunk);
        }
        for (id, (ts, _)) in &head_parts {
            if let Some(n) = sizes.get_mut(id) {
                *n += ts.len();
            }
        }
        for chunks in fetched {
            for (id, chunk) in chunks {
                let entry = match out.entry(id) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        let Some(s) = self.labels_of(id).await? else {
                            continue;
                        };
                        let n = sizes.get(&id).copied().unwrap_or(0);
                        e.insert(SeriesData {
                            labels: s.labels.to_labels(),
                            timestamps: Vec::with_capacity(n),
                            values: Vec::with_capacity(n),
                        })
                    }
                };
                decode_chunk_range_into(
                    &chunk,
                    mint,
                    maxt,
                    &mut entry.timestamps,
                    &mut entry.values,
                )?;
            }
        }
        for (id, (ts, vs)) in head_parts {
            if ts.is_empty() {
                continue;
            }
            match out.entry(id) {
                std::collections::btree_map::Entry::Occupied(e) => {
                    let entry = e.into_mut();
                    entry.timestamps.extend(ts);
                    entry.values.extend(vs);
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    let Some(s) = head.series_by_id(id) else {
                        continue;
                    };
                    e.insert(SeriesData {
                        labels: s.labels.to_labels(),
                        timestamps: ts,
                        values: vs,
                    });
                }
            }
        }
        let mut series: Vec<SeriesData> = out
            .into_values()
            .filter(|s| !s.timestamps.is_empty())
            .collect();
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
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
        let head = &self.inner.head;
        let bucket_ms = self.inner.settings.bucket_ms();
        let sealed = head.sealed_through().unwrap_or(NONE_SEALED);
        let mut ids: Vec<u64> = head
            .series_for(&head.select_ids(matchers))
            .into_iter()
            .filter(|s| s.overlaps(sealed, bucket_ms, mint, maxt))
            .map(|s| s.id)
            .collect();
        let (first, last) = self.bucket_range(mint, maxt);
        let mut bucket = first;
        while sealed != NONE_SEALED && bucket <= last.min(sealed) {
            ids.extend(self.sealed_ids(bucket, matchers).await?);
            bucket += 1;
        }
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.labels_of(id).await? {
                out.push(s.labels.to_labels());
            }
        }
        out.sort();
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
