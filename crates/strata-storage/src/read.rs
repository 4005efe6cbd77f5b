//! The read API for the query layer: series selection by matchers, samples
//! over head plus sealed chunks, label names and values.
//!
//! A read takes the head's `sealed_through` first, reads unsealed buckets
//! from the head, then re-reads it: buckets sealed in between are read from
//! the store (their chunks were written before `sealed_through` moved).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use strata_codec::histogram::FloatHistogram;
use strata_codec::{
    chunk_len_hint, decode_chunk_range_into, Label, LabelPairs, Matcher, Series, SeriesMap,
};

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::head::NONE_SEALED;
use crate::keys::{self, Span};
use crate::postings::{combine, union, MatcherSet};
use crate::series_index;
use crate::storage::Storage;
use crate::values;
use strata_codec::merge::{merge_into, merge_newer};

/// Sealed buckets read at once by one select.
const BUCKET_FETCH_CONCURRENCY: usize = 8;
/// Up to this many series of a bucket are read with point reads.
const POINT_READS_UP_TO: usize = 16;
/// Point reads in flight at once per bucket.
const POINT_READ_CONCURRENCY: usize = 16;
/// From this many series a bucket's chunks are read by one scan per core.
const SPLIT_SCAN_FROM: usize = 512;

/// The error of a read's task or thread (`what`) that panicked or was
/// cancelled.
fn task_failed(what: &'static str) -> impl Fn(tokio::task::JoinError) -> StorageError {
    move |e| StorageError::Corrupt(format!("a {what} failed: {e}"))
}

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

/// Sealed bytes decoded by one thread before the decode of a select is
/// spread over the cores: a thread costs more than a few chunks.
const PARALLEL_DECODE_FROM: usize = 256 << 10;

/// Samples as timestamp and value columns.
type Samples = (Vec<i64>, Vec<f64>);

/// One series' sealed parts of a select, to decode.
struct DecodeJob {
    labels: Vec<Label>,
    parts: Vec<SealedPart>,
    /// Its samples read from the head, merged after the sealed ones (the
    /// head's winning where both hold a timestamp): the head's part, then
    /// late samples it holds apart.
    head: Vec<Samples>,
    /// Its native histogram samples, ascending.
    histograms: Vec<(i64, FloatHistogram)>,
}

impl DecodeJob {
    fn bytes(&self) -> usize {
        self.parts.iter().map(|p| p.bytes.len()).sum()
    }

    /// The series' samples in `[mint, maxt]`: its in-order parts appended,
    /// its late segments and head samples merged (a later write winning),
    /// then passed through `map`. Buffers are sized once for all its
    /// chunks, so decoding never moves samples already decoded.
    fn decode(
        self,
        mint: i64,
        maxt: i64,
        map: Option<&SeriesMap>,
    ) -> Result<Option<Series>, StorageError> {
        let n = self.head.iter().map(|(ts, _)| ts.len()).sum::<usize>()
            + self
                .parts
                .iter()
                .map(|p| chunk_len_hint(&p.bytes))
                .sum::<usize>();
        let mut series = Series {
            labels: self.labels,
            timestamps: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
            histograms: self.histograms,
        };
        for part in self.parts {
            let maxt = maxt.min(part.until.saturating_sub(1));
            if part.late {
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                decode_chunk_range_into(&part.bytes, mint, maxt, &mut ts, &mut vs)?;
                merge_into(&mut series.timestamps, &mut series.values, (ts, vs));
            } else {
                decode_chunk_range_into(
                    &part.bytes,
                    mint,
                    maxt,
                    &mut series.timestamps,
                    &mut series.values,
                )?;
            }
        }
        for piece in self.head {
            if series.timestamps.is_empty() {
                (series.timestamps, series.values) = piece;
            } else {
                merge_into(&mut series.timestamps, &mut series.values, piece);
            }
        }
        Ok(finish(series, map))
    }
}

/// `series` as a select returns it: passed through `map`; left out when it
/// has no samples.
fn finish(series: Series, map: Option<&SeriesMap>) -> Option<Series> {
    if series.timestamps.is_empty() && series.histograms.is_empty() {
        return None;
    }
    match map {
        Some(map) => map(series),
        None => Some(series),
    }
}

/// Decodes every job, in order: on the calling task when there is little,
/// else in about equal shares of bytes on blocking threads, one per core.
async fn decode_jobs(
    jobs: Vec<DecodeJob>,
    mint: i64,
    maxt: i64,
    map: Option<&SeriesMap>,
) -> Result<Vec<Series>, StorageError> {
    let total: usize = jobs.iter().map(DecodeJob::bytes).sum();
    let threads = strata_codec::threads::available().min(total / PARALLEL_DECODE_FROM);
    if threads <= 1 {
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            out.extend(job.decode(mint, maxt, map)?);
        }
        return Ok(out);
    }
    let share = total.div_ceil(threads);
    let mut groups: Vec<Vec<DecodeJob>> = Vec::with_capacity(threads);
    let mut group = Vec::new();
    let mut bytes = 0;
    for job in jobs {
        bytes += job.bytes();
        group.push(job);
        if bytes >= share {
            groups.push(std::mem::take(&mut group));
            bytes = 0;
        }
    }
    if !group.is_empty() {
        groups.push(group);
    }
    let tasks = groups.into_iter().map(|group| {
        let map = map.cloned();
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(group.len());
            for job in group {
                out.extend(job.decode(mint, maxt, map.as_ref())?);
            }
            Ok::<_, StorageError>(out)
        })
    });
    let mut out = Vec::new();
    for done in futures::future::join_all(tasks).await {
        let decoded = done.map_err(task_failed("decode thread"))??;
        out.extend(decoded);
    }
    Ok(out)
}

/// Puts samples read from the store (a spilled segment, a released chunk)
/// into a series' head samples. They usually fit between two samples held
/// in memory (before their bucket's own, after earlier buckets'): inserted
/// there, in the room the head read left; else merged, the head's winning.
fn insert_stored(head: &mut Samples, (ts, vs): Samples) {
    let (head_ts, head_vs) = head;
    let at = ts.first().map(|&f| head_ts.partition_point(|&t| t < f));
    let fits = match (at, ts.last()) {
        (Some(at), Some(&last)) => head_ts.get(at).is_none_or(|&next| last < next),
        _ => true,
    };
    match at {
        Some(at) if fits && at <= head_vs.len() => {
            head_ts.splice(at..at, ts);
            head_vs.splice(at..at, vs);
        }
        Some(_) => {
            let (t, v) = merge_newer((ts, vs), (std::mem::take(head_ts), std::mem::take(head_vs)));
            *head_ts = t;
            *head_vs = v;
        }
        None => {}
    }
}

/// One stored part of a series in a sealed bucket.
struct SealedPart {
    id: u64,
    bytes: Bytes,
    /// A late segment: merged into what came before, not appended.
    late: bool,
    /// Samples from here (ms) on are read elsewhere: a block not yet whole
    /// may hold more than the compaction state a read took says it does.
    until: i64,
}

impl Storage {
    fn bucket_range(&self, mint: i64, maxt: i64) -> (i64, i64) {
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
    async fn sealed_ids(&self, span: Span, matchers: &[Matcher]) -> Result<Vec<u64>, StorageError> {
        let db = &self.shared.backend;
        let mut sets = Vec::with_capacity(matchers.len());
        for m in matchers {
            let matches_empty = m.matches_empty();
            if !matches_empty && m.op == strata_codec::MatchOp::Equal {
                let mut ids = Vec::new();
                if let Some(v) = db.get(&keys::postings_key(span, &m.name, &m.value)).await? {
                    values::decode_postings(&v, &mut ids)?;
                }
                sets.push(MatcherSet::Include(ids));
                continue;
            }
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
    async fn sealed_chunks(
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
    async fn segments(
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
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(series)
    }

    /// The native histogram samples in [mint, maxt] the store holds for
    /// buckets `first` to `last` (both sealed), of every series matching
    /// all matchers, by id. `N` keys are few (only series with histograms
    /// have them): the buckets' keys are scanned and each series' labels
    /// checked once.
    async fn stored_histograms(
        &self,
        matchers: &[Matcher],
        first: i64,
        last: i64,
        sealed: i64,
        mint: i64,
        maxt: i64,
    ) -> Result<BTreeMap<u64, Vec<(i64, FloatHistogram)>>, StorageError> {
        let mut out: BTreeMap<u64, Vec<(i64, FloatHistogram)>> = BTreeMap::new();
        if sealed == NONE_SEALED || first > last {
            return Ok(out);
        }
        let from = keys::histogram_prefix(first);
        let to = keys::prefix_end(&keys::histogram_prefix(last));
        let mut wanted: BTreeMap<u64, bool> = BTreeMap::new();
        let mut it = self.shared.backend.scan(from..to).await?;
        while let Some(kv) = it.next().await? {
            let Some((_, id)) = keys::histogram_key_parts(&kv.key) else {
                continue;
            };
            let matches = match wanted.get(&id) {
                Some(&m) => m,
                None => {
                    let m = self
                        .labels_of(id)
                        .await?
                        .is_some_and(|l| matchers.iter().all(|m| m.matches_labels(&l)));
                    wanted.insert(id, m);
                    m
                }
            };
            if matches {
                let list = out.entry(id).or_default();
                strata_codec::histogram::decode_chunk_list_into(&kv.value, mint, maxt, list)?;
            }
        }
        Ok(out)
    }

    /// Reads the head's spilled segments `(bucket, series, first_t,
    /// last_t)` and merges their samples in [mint, maxt] into each
    /// series' head samples.
    async fn add_spilled(
        &self,
        spilled: &mut [(Span, u64, i64, i64)],
        head_parts: &mut BTreeMap<u64, (Vec<i64>, Vec<f64>)>,
        mint: i64,
        maxt: i64,
    ) -> Result<(), StorageError> {
        if spilled.is_empty() {
            return Ok(());
        }
        spilled.sort_unstable();
        let segments = self.segments(spilled, ScanKind::Long).await?;
        let mut from_store: BTreeMap<u64, (Vec<i64>, Vec<f64>)> = BTreeMap::new();
        for (&(_, id, _, _), segment) in spilled.iter().zip(&segments) {
            let (ts, vs) = from_store.entry(id).or_default();
            decode_chunk_range_into(segment, mint, maxt, ts, vs)?;
        }
        for (id, samples) in from_store {
            insert_stored(head_parts.entry(id).or_default(), samples);
        }
        Ok(())
    }

    /// The samples in [mint, maxt] of the series each bucket lists (ids
    /// ascending): chunks a seal under way has written and the head let
    /// go, read as the seal wrote them.
    async fn released_samples(
        &self,
        released: BTreeMap<i64, Vec<u64>>,
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<(u64, Samples)>, StorageError> {
        let mut out = Vec::new();
        for (bucket, ids) in released {
            for sb in self
                .series_buckets(Span::Bucket(bucket), &ids, ScanKind::Long)
                .await?
            {
                out.push((sb.id, sb.samples(mint, maxt)?));
            }
        }
        Ok(out)
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
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(labels) = self.labels_of(id).await? {
                out.push(labels);
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
