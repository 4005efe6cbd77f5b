//! Sealed data by key: which series of a bucket or block match, their
//! chunk and segment keys found by point reads or scans, and their labels.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use strata_codec::{decode_chunk_range_into, Label, LabelPairs, Matcher};

use super::decode::{task_failed, SealedPart};
use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys::{self, Span};
use crate::postings::{combine, union, MatcherSet};
use crate::series_index;
use crate::storage::Storage;
use crate::values;
use strata_codec::merge::merge_into;

/// Up to this many series of a bucket are read with point reads.
const POINT_READS_UP_TO: usize = 16;
/// Point reads in flight at once per bucket.
const POINT_READ_CONCURRENCY: usize = 16;
/// From this many series a bucket's chunks are read by one scan per core.
const SPLIT_SCAN_FROM: usize = 512;

fn missing_segment(span: Span, series: u64, first: i64, last: i64) -> StorageError {
    StorageError::Corrupt(format!(
        "segment {first}..{last} of series {series} in {span:?} is listed but not in the store"
    ))
}

/// The keys of one series in one sealed bucket, as a scan finds them.
#[derive(Default)]
pub(crate) struct FoundKeys {
    pub(crate) chunk: Option<Bytes>,
    pub(crate) segments: Vec<((i64, i64), Bytes)>,
    late: Vec<(u64, (i64, i64), Bytes)>,
}

impl FoundKeys {
    pub(crate) fn add(&mut self, kv: slatedb::KeyValue) {
        if kv.key.len() == keys::CHUNK_KEY_LEN {
            self.chunk = Some(kv.value);
        } else if let Some((_, _, first, last)) = keys::segment_parts(&kv.key) {
            self.segments.push(((first, last), kv.value));
        } else if let Some((_, _, first, last, seq)) = keys::late_segment_parts(&kv.key) {
            self.late.push((seq, (first, last), kv.value));
        }
    }
}

/// What is stored of one series in one sealed bucket.
#[derive(Default)]
pub(crate) struct SeriesBucket {
    pub id: u64,
    /// In-order parts, in time order, each after the one before.
    pub in_order: Vec<Bytes>,
    /// The time range of each in-order part, as far as its key says
    /// (`i64::MIN..=i64::MAX` for a chunk key's own samples).
    pub in_order_ranges: Vec<(i64, i64)>,
    /// Late segments, oldest write first; each sorted, overlapping the
    /// rest anywhere.
    pub late: Vec<Bytes>,
    /// `(first, last)` of every spilled-segment key found, listed or not.
    pub spill_keys: Vec<(i64, i64)>,
    /// `((first, last), seq)` of every late-segment key found.
    pub late_keys: Vec<((i64, i64), u64)>,
}

impl SeriesBucket {
    /// Bytes of the values it was read from (chunk parts and segments).
    pub(crate) fn stored_bytes(&self) -> usize {
        self.in_order.iter().chain(&self.late).map(Bytes::len).sum()
    }

    /// Deletes, in `batch`, every spilled and late segment key it was read
    /// from (in `span`): what a rewrite of its chunk makes redundant.
    /// Returns how many.
    pub(crate) fn delete_segments(&self, span: Span, batch: &mut slatedb::WriteBatch) -> usize {
        for &(first, last) in &self.spill_keys {
            batch.delete(keys::segment_key(span, self.id, first, last));
        }
        for &((first, last), seq) in &self.late_keys {
            batch.delete(keys::late_segment_key(span, self.id, first, last, seq));
        }
        self.spill_keys.len() + self.late_keys.len()
    }

    /// Its parts that may hold samples in `[mint, maxt]`, of which samples
    /// before `until` (ms) are read.
    fn parts_into(self, (mint, maxt): (i64, i64), until: i64, out: &mut Vec<SealedPart>) {
        let id = self.id;
        let maxt = maxt.min(until.saturating_sub(1));
        out.extend(
            self.in_order
                .into_iter()
                .zip(self.in_order_ranges)
                .filter(|&(_, (first, last))| first <= maxt && last >= mint)
                .map(|(bytes, _)| SealedPart {
                    id,
                    bytes,
                    late: false,
                    until,
                }),
        );
        out.extend(self.late.into_iter().map(|bytes| SealedPart {
            id,
            bytes,
            late: true,
            until,
        }));
    }

    /// Every sample in `[mint, maxt]`, ascending; where a timestamp is
    /// held twice, the later write's sample.
    pub(crate) fn samples(
        &self,
        mint: i64,
        maxt: i64,
    ) -> Result<(Vec<i64>, Vec<f64>), StorageError> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for part in &self.in_order {
            decode_chunk_range_into(part, mint, maxt, &mut ts, &mut vs)?;
        }
        for part in &self.late {
            let (mut lts, mut lvs) = (Vec::new(), Vec::new());
            decode_chunk_range_into(part, mint, maxt, &mut lts, &mut lvs)?;
            merge_into(&mut ts, &mut vs, (lts, lvs));
        }
        Ok((ts, vs))
    }
}

impl Storage {
    pub(super) fn bucket_range(&self, mint: i64, maxt: i64) -> (i64, i64) {
        let bucket_ms = self.shared.settings.bucket_ms();
        let now = self.shared.clock.now_ms();
        let oldest_kept = now
            .saturating_sub(self.shared.settings.retention_ms())
            .div_euclid(bucket_ms)
            - 1;
        (
            mint.div_euclid(bucket_ms).max(oldest_kept),
            maxt.div_euclid(bucket_ms),
        )
    }

    /// Ids of series in sealed bucket or block `span` matching every
    /// matcher.
    pub(super) async fn sealed_ids(
        &self,
        span: Span,
        matchers: &[Matcher],
    ) -> Result<Vec<u64>, StorageError> {
        let db = &self.shared.backend;
        // Equality matchers' lists first: the shortest is decoded, the
        // others only filter it as they are read (a `job` list can hold
        // every series of the span).
        let is_equal = |m: &Matcher| m.op == strata_codec::MatchOp::Equal && !m.matches_empty();
        let mut equal = Vec::new();
        for m in matchers.iter().filter(|m| is_equal(m)) {
            equal.push(db.get(&keys::postings_key(span, &m.name, &m.value)).await?);
        }
        let mut sets = Vec::with_capacity(matchers.len());
        if !equal.is_empty() {
            // A value the span does not hold: nothing matches.
            let mut ids = Vec::new();
            if let Some(mut lists) = equal.into_iter().collect::<Option<Vec<_>>>() {
                lists.sort_by_key(|v| values::postings_len(v));
                let mut lists = lists.iter();
                if let Some(first) = lists.next() {
                    values::decode_postings(first, &mut ids)?;
                }
                for v in lists {
                    values::retain_in_postings(v, &mut ids)?;
                }
            }
            sets.push(MatcherSet::Include(ids));
        }
        for m in matchers.iter().filter(|m| !is_equal(m)) {
            if sets
                .iter()
                .any(|s| matches!(s, MatcherSet::Include(ids) if ids.is_empty()))
            {
                break;
            }
            let matches_empty = m.matches_empty();
            let prefix = keys::postings_name_prefix(span, &m.name);
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
            if let Some(v) = db.get(&keys::all_postings_key(span)).await? {
                values::decode_postings(&v, &mut all)?;
            }
        }
        let mut ids = combine(sets, || all);
        // Series with late segments not yet folded may be missing from the
        // postings (they joined the bucket late): matched by their labels.
        let late = self.late_ids(span).await?;
        if !late.is_empty() {
            let mut joined = Vec::new();
            for id in late {
                if ids.binary_search(&id).is_ok() {
                    continue;
                }
                if let Some(labels) = self.labels_of(id).await? {
                    if matchers.iter().all(|m| m.matches_labels(&labels)) {
                        joined.push(id);
                    }
                }
            }
            ids.extend(joined);
            ids.sort_unstable();
        }
        Ok(ids)
    }

    /// Series with late segments in sealed `span` not yet folded.
    pub(crate) async fn late_ids(&self, span: Span) -> Result<Vec<u64>, StorageError> {
        let prefix = keys::late_prefix(span);
        let end = keys::prefix_end(&prefix);
        let mut it = self.shared.backend.scan(prefix..end).await?;
        let mut ids = Vec::new();
        while let Some(kv) = it.next().await? {
            if let Some((_, id)) = keys::late_key_parts(&kv.key) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// The sealed data of the series matching `matchers` in `bucket`,
    /// ascending by series id; a series' in-order parts first, in time
    /// order (several when its head spilled segments before the seal),
    /// then its late segments, oldest write first. Few series: a short
    /// scan each; many: one ordered scan of the bucket's chunks that seeks
    /// from id to id.
    pub(super) async fn sealed_chunks(
        &self,
        (span, end): (Span, i64),
        matchers: &[Matcher],
        range: (i64, i64),
    ) -> Result<Vec<SealedPart>, StorageError> {
        let until = end.saturating_mul(self.shared.settings.bucket_ms());
        let ids = self.sealed_ids(span, matchers).await?;
        let mut out = Vec::with_capacity(ids.len());
        if ids.len() >= SPLIT_SCAN_FROM {
            // SlateDB's iterators cost a few microseconds a key: one scan
            // per core, each over a share of the series, on tasks of their
            // own so they run on every worker.
            let share = ids.len().div_ceil(strata_codec::threads::available());
            let ids = Arc::new(ids);
            let scans: Vec<_> = (0..ids.len())
                .step_by(share)
                .map(|from| {
                    let (view, ids) = (Storage::view(Arc::clone(&self.shared)), Arc::clone(&ids));
                    tokio::spawn(async move {
                        let part = ids.get(from..(from + share).min(ids.len())).unwrap_or(&[]);
                        view.series_buckets(span, part, ScanKind::Long).await
                    })
                })
                .collect();
            for scan in scans {
                let got = scan.await.map_err(task_failed("read task"))??;
                for sb in got {
                    sb.parts_into(range, until, &mut out);
                }
            }
            return Ok(out);
        }
        if ids.len() <= POINT_READS_UP_TO {
            let got: Vec<Option<SeriesBucket>> = futures::stream::iter(ids)
                .map(|id| self.series_bucket(span, id))
                .buffered(POINT_READ_CONCURRENCY)
                .try_collect()
                .await?;
            for sb in got.into_iter().flatten() {
                sb.parts_into(range, until, &mut out);
            }
            return Ok(out);
        }
        for sb in self.series_buckets(span, &ids, ScanKind::Long).await? {
            sb.parts_into(range, until, &mut out);
        }
        Ok(out)
    }

    /// [`Self::series_bucket`] for many series (`ids` ascending): one
    /// ordered scan of the bucket that seeks from id to id. A query's
    /// reads are [`ScanKind::Long`]; compaction and the fold read each
    /// chunk once and write it anew, so theirs are [`ScanKind::Bulk`] and
    /// leave the block cache to what queries read.
    pub(crate) async fn series_buckets(
        &self,
        span: Span,
        ids: &[u64],
        kind: ScanKind,
    ) -> Result<Vec<SeriesBucket>, StorageError> {
        let mut out = Vec::with_capacity(ids.len());
        let (Some(&lo), Some(&hi)) = (ids.first(), ids.last()) else {
            return Ok(out);
        };
        // Bounded to these series: read-ahead past the last would fetch
        // blocks the next call reads again (compaction calls this for
        // every few hundred series; uncached, those blocks were read from
        // the store each time).
        let end = keys::prefix_end(&keys::chunk_key(span, hi));
        let mut it = self
            .shared
            .backend
            .scan_as(keys::chunk_key(span, lo)..end, kind)
            .await?;
        // The next key the iterator holds: it cannot seek back to it.
        let mut next: Option<slatedb::KeyValue> = None;
        for &id in ids {
            let behind = next
                .as_ref()
                .is_none_or(|kv| keys::chunk_series(&kv.key).is_some_and(|s| s < id));
            if behind {
                it.seek(keys::chunk_key(span, id)).await?;
                next = it.next().await?;
                if next.is_none() {
                    break;
                }
            }
            let mut found = FoundKeys::default();
            while let Some(kv) = next.take() {
                if keys::chunk_series(&kv.key) != Some(id) {
                    next = Some(kv);
                    break;
                }
                found.add(kv);
                next = it.next().await?;
            }
            if let Some(sb) = self.resolve(span, id, found, kind).await? {
                out.push(sb);
            }
        }
        Ok(out)
    }

    /// Everything stored of series `id` in sealed bucket `bucket`: its
    /// chunk key, the segments the chunk lists, and its late segments, from
    /// one scan of the series' keys (one snapshot, so a fold running
    /// meanwhile is seen wholly or not at all).
    pub(crate) async fn series_bucket(
        &self,
        span: Span,
        id: u64,
    ) -> Result<Option<SeriesBucket>, StorageError> {
        let prefix = keys::chunk_key(span, id);
        let end = keys::prefix_end(&prefix);
        let mut it = self.shared.backend.scan(prefix..end).await?;
        let mut found = FoundKeys::default();
        while let Some(kv) = it.next().await? {
            found.add(kv);
        }
        self.resolve(span, id, found, ScanKind::Short).await
    }

    /// A series' parts in `bucket` from its keys: the chunk key's value
    /// itself, or the segments it lists (from `found`, else read) and the
    /// chunk after them; then the late segments.
    async fn resolve(
        &self,
        span: Span,
        id: u64,
        found: FoundKeys,
        kind: ScanKind,
    ) -> Result<Option<SeriesBucket>, StorageError> {
        let FoundKeys {
            chunk,
            mut segments,
            mut late,
        } = found;
        let mut sb = SeriesBucket {
            id,
            ..SeriesBucket::default()
        };
        sb.spill_keys = segments
            .iter()
            .map(|&((first, last), _)| (first, last))
            .collect();
        late.sort_by_key(|(seq, _, _)| *seq);
        sb.late_keys = late.iter().map(|(seq, range, _)| (*range, *seq)).collect();
        sb.late = late.into_iter().map(|(_, _, v)| v).collect();
        let Some(chunk) = chunk else {
            return Ok((!sb.late.is_empty()).then_some(sb));
        };
        if let Some(parts) = values::decode_parts(&chunk)? {
            for (range, at) in parts {
                sb.in_order.push(chunk.slice(at));
                sb.in_order_ranges.push(range);
            }
            return Ok(Some(sb));
        }
        let Some((listed, last)) = values::decode_segmented(&chunk)? else {
            sb.in_order.push(chunk);
            sb.in_order_ranges.push((i64::MIN, i64::MAX));
            return Ok(Some(sb));
        };
        // Segments the scan already found; the others are read at once.
        let mut have: Vec<Option<Bytes>> = listed
            .iter()
            .map(|range| {
                segments
                    .iter()
                    .position(|(r, _)| r == range)
                    .map(|i| segments.swap_remove(i).1)
            })
            .collect();
        let missing: Vec<(Span, u64, i64, i64)> = listed
            .iter()
            .zip(&have)
            .filter(|(_, h)| h.is_none())
            .map(|(&(first, last_t), _)| (span, id, first, last_t))
            .collect();
        let mut read = self.segments(&missing, kind).await?.into_iter();
        for (slot, &(first, last_t)) in have.iter_mut().zip(&listed) {
            let segment = slot
                .take()
                .or_else(|| read.next())
                .ok_or_else(|| missing_segment(span, id, first, last_t))?;
            sb.in_order.push(segment);
            sb.in_order_ranges.push((first, last_t));
        }
        if !last.is_empty() {
            sb.in_order.push(chunk.slice_ref(last));
            sb.in_order_ranges.push((i64::MIN, i64::MAX));
        }
        Ok(Some(sb))
    }

    /// The values of segment keys `(bucket, series, first_t, last_t)`, in
    /// their key order (sort them first). Few: concurrent point reads;
    /// many: one scan that seeks from key to key. Cached as `kind` caches.
    pub(super) async fn segments(
        &self,
        wanted: &[(Span, u64, i64, i64)],
        kind: ScanKind,
    ) -> Result<Vec<Bytes>, StorageError> {
        let backend = &self.shared.backend;
        let key =
            |&(b, id, first, last): &(Span, u64, i64, i64)| keys::segment_key(b, id, first, last);
        let (Some(lo), Some(hi)) = (wanted.first(), wanted.last()) else {
            return Ok(Vec::new());
        };
        if wanted.len() <= POINT_READS_UP_TO {
            return futures::stream::iter(wanted.iter().copied())
                .map(|w| async move {
                    let k = keys::segment_key(w.0, w.1, w.2, w.3);
                    backend
                        .get_as(&k, kind)
                        .await?
                        .ok_or_else(|| missing_segment(w.0, w.1, w.2, w.3))
                })
                .buffered(POINT_READ_CONCURRENCY)
                .try_collect()
                .await;
        }
        let many = if kind.caches() {
            ScanKind::Long
        } else {
            ScanKind::Bulk
        };
        let mut it = backend
            .scan_as(key(lo)..keys::prefix_end(&key(hi)), many)
            .await?;
        let mut out = Vec::with_capacity(wanted.len());
        for w in wanted {
            let k = key(w);
            it.seek(&k).await?;
            match it.next().await? {
                Some(kv) if kv.key.as_ref() == k.as_slice() => out.push(kv.value),
                _ => return Err(missing_segment(w.0, w.1, w.2, w.3)),
            }
        }
        Ok(out)
    }

    /// Labels of a series by id: from the head, else from its cache of
    /// dropped series, else from the `S` key. Never adds to the head.
    pub(crate) async fn labels_of(&self, id: u64) -> Result<Option<Vec<Label>>, StorageError> {
        if let Some(s) = self.shared.head.series_by_id(id) {
            return Ok(Some(s.labels.to_labels()));
        }
        Ok(series_index::stored_labels(&self.shared, id)
            .await?
            .map(|l| l.to_labels()))
    }
}
