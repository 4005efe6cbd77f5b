//! Compaction of sealed buckets into blocks: as buckets of a block
//! (`storage.block_duration`, a day by default) are sealed, each series'
//! samples of them are written once more as parts of the block, one per
//! quarter of it, and the block's postings as one set, under the block's
//! own keys (`B`, `P`, `K`: `docs/format.md`). A series' parts are one
//! value, written again with each new quarter. A week of hourly buckets
//! is then 7 keys per series instead of 168, and a read decodes only the
//! parts its range meets.
//!
//! ```text
//!  buckets [from, upto) sealed ─▶ per series a part per quarter (late
//!      segments folded in), with the parts the block held, in the one
//!      value at `B | start | series` + `P | start | …` postings
//!      ─▶ `Mcompacted` says blocks hold every bucket before upto (the
//!      switch)
//!  `compaction_delete_delay` after the last switch ─▶ the buckets' `C`,
//!      `I`, `J` keys deleted
//! ```
//!
//! A read takes the compaction state once and reads each bucket from its
//! block or from the bucket itself, never both, so it sees no gap and no
//! double. The buckets' keys outlive the switch by
//! `storage.compaction_delete_delay`, longer than any query and any
//! reader's lag, so a read that took the state just before a switch still
//! finds them. Late samples of compacted buckets are
//! written as late segments of their block and folded into it like a
//! bucket's. A crash before the switch leaves block keys nothing reads;
//! the next pass writes the block again from the buckets.

use std::collections::BTreeMap;
use std::time::Duration;

use slatedb::WriteBatch;
use strata_codec::LabelPairs;

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys::{self, Span};
use crate::packed_batch::Batch;
use crate::postings::union;
use crate::read::FoundKeys;
use crate::shared::Shared;
use crate::state::compacted::Compacted;
use crate::stats::add;
use crate::storage::Storage;
use crate::values;

/// How often the writer looks for blocks to compact.
pub(crate) const COMPACT_INTERVAL: Duration = Duration::from_secs(60);

/// Series per write batch of a block's chunks.
const SERIES_PER_BATCH: usize = 512;

/// Keys per write batch of postings and deletions.
const KEYS_PER_BATCH: usize = 1024;

/// Writes `state` (durably) and takes it as the current one.
async fn store(state: Compacted, inner: &Shared, db: &slatedb::Db) -> Result<(), StorageError> {
    db.put(keys::COMPACTED, state.encode())
        .await?
        .await_durable()
        .await?;
    inner.note_compacted(state);
    Ok(())
}

/// Reads the compaction state (the default when nothing was compacted).
pub(crate) async fn read_compacted(
    backend: &crate::backend::Backend,
) -> Result<Compacted, StorageError> {
    match backend.get(keys::COMPACTED).await? {
        Some(v) => Compacted::decode(&v),
        None => Ok(Compacted::default()),
    }
}

/// What one compaction pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactPass {
    pub blocks: usize,
    /// Series chunks written to blocks.
    pub series: usize,
    /// Samples in them.
    pub samples: usize,
    /// Bytes of those chunks.
    pub bytes: usize,
    /// Keys of compacted buckets deleted.
    pub keys_deleted: usize,
    /// Whether a merge of SlateDB's tables was asked for to give their
    /// space back.
    pub reclaim: crate::reclaim::ReclaimStep,
}

impl CompactPass {
    fn add(&mut self, other: &CompactPass) {
        self.blocks += other.blocks;
        self.series += other.series;
        self.samples += other.samples;
        self.bytes += other.bytes;
        self.keys_deleted += other.keys_deleted;
    }
}

/// Compacts every block whose buckets are all sealed, then deletes the
/// keys of buckets blocks replaced at least `compaction_delete_delay` ago
/// (at once with `delete_now`). Nothing on a reader, or with compaction off.
pub(crate) async fn compact(
    storage: &Storage,
    delete_now: bool,
) -> Result<CompactPass, StorageError> {
    let inner = &storage.shared;
    let mut pass = CompactPass::default();
    let n = inner.settings.block_buckets();
    let (Some(db), Some(sealed)) = (inner.backend.writer(), inner.head.sealed_through()) else {
        return Ok(pass);
    };
    if n <= 1 {
        return Ok(pass);
    }
    // A block not yet whole is extended once this many more of its
    // buckets are sealed: a day's block holds the day so far in steps of
    // six hours, so reads of the last day take few buckets too.
    let step = (n / 4).max(1);
    loop {
        // Late samples wait meanwhile: none is written to a bucket the
        // block is being built from, and after the switch they go to the
        // block. Taken before the oldest bucket with data is looked for:
        // a late segment written between the look and the switch would
        // land in a stretch the switch steps over, read from a block that
        // never holds it.
        let writing = inner.late.lock.lock().await;
        let state = inner.compacted();
        // The oldest bucket with data not yet in a block: empty stretches
        // (a gap in the history) are stepped over.
        let Some(next) = first_bucket_from(inner, state.through).await? else {
            break;
        };
        let start = next.div_euclid(n).saturating_mul(n);
        // The block may hold its first buckets already (`through` within
        // it): it is extended from there.
        let from = state.through.max(start);
        let upto = sealed.saturating_add(1).min(start + n);
        if upto <= next || (upto < start + n && upto - from < step) {
            break;
        }
        let started = std::time::Instant::now();
        let block = compact_block(storage, db, start, from, upto).await?;
        let switched = Compacted {
            through: upto,
            deleted_through: state.deleted_through,
            switched_ms: inner.clock.now_ms(),
        };
        store(switched, inner, db).await?;
        drop(writing);
        pass.add(&block);
        add(&inner.stats.blocks_compacted, 1);
        add(&inner.stats.compacted_bytes, block.bytes);
        tracing::info!(
            block = start,
            buckets = upto - from,
            whole = upto == start + n,
            series = block.series,
            samples = block.samples,
            bytes = block.bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "compacted sealed buckets into a block"
        );
    }
    let state = inner.compacted();
    let delay =
        i64::try_from(inner.settings.compaction_delete_delay.as_millis()).unwrap_or(i64::MAX);
    let quiet = inner.clock.now_ms().saturating_sub(state.switched_ms) >= delay;
    if state.deleted_through < state.through && (quiet || delete_now) {
        let _writing = inner.late.lock.lock().await;
        pass.keys_deleted = delete_buckets(inner, db, state.deleted_through, state.through).await?;
        add(&inner.stats.compaction_deleted_keys, pass.keys_deleted);
        let deleted = Compacted {
            deleted_through: state.through,
            ..state
        };
        store(deleted, inner, db).await?;
        tracing::info!(
            keys = pass.keys_deleted,
            "deleted the keys of buckets compacted into blocks"
        );
    }
    // Their space comes back once SlateDB merges their tombstones with
    // them.
    pass.reclaim = crate::reclaim::check(inner, delete_now).await?;
    Ok(pass)
}

/// The first bucket at or after `from` with a chunk or segment key.
async fn first_bucket_from(inner: &Shared, from: i64) -> Result<Option<i64>, StorageError> {
    let start = keys::chunk_prefix(from);
    let mut it = inner.backend.scan(start..vec![keys::CHUNK + 1]).await?;
    Ok(it.next().await?.and_then(|kv| keys::span_start(&kv.key)))
}

/// Writes the parts of the block starting at bucket `start` that hold
/// buckets `[from, upto)`: per series one part (late segments merged, a
/// later write winning a timestamp held twice) added to the block's list,
/// and the union of the block's and the buckets' postings, with the series
/// that joined one late added.
async fn compact_block(
    storage: &Storage,
    db: &slatedb::Db,
    start: i64,
    from: i64,
    upto: i64,
) -> Result<CompactPass, StorageError> {
    let inner = &storage.shared;
    let block = Span::Block(start);
    let ttl = inner.span_ttl(block);
    let mut sources: Vec<Span> = Vec::new();
    if from > start {
        sources.push(block);
    }
    sources.extend((from..upto).map(Span::Bucket));
    let mut listed = Vec::new();
    let mut late = Vec::new();
    for &span in &sources {
        if let Some(v) = inner.backend.get(&keys::all_postings_key(span)).await? {
            values::decode_postings(&v, &mut listed)?;
        }
        late.extend(storage.late_ids(span).await?);
    }
    listed.sort_unstable();
    listed.dedup();
    late.sort_unstable();
    late.dedup();
    let joined: Vec<u64> = late
        .iter()
        .copied()
        .filter(|id| listed.binary_search(id).is_err())
        .collect();
    let ids = union(vec![listed, late]);

    // Postings first: an extended block is read meanwhile (by the state
    // before the switch), and a series that joined it late is found by its
    // `K` key until its new chunk deletes that, then by these postings.
    // The sources' lists merged key by key, plus those of the series that
    // joined one late (not in its postings).
    let mut extra: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
    for &id in &joined {
        let Some(labels) = storage.labels_of(id).await? else {
            tracing::error!(
                block = start,
                series = id,
                "late segment of an unknown series"
            );
            continue;
        };
        // The empty name and value: the list of every series.
        extra
            .entry(keys::postings_suffix("", ""))
            .or_default()
            .push(id);
        for (name, value) in labels.pairs() {
            extra
                .entry(keys::postings_suffix(name, value))
                .or_default()
                .push(id);
        }
    }
    let mut scans = Vec::with_capacity(sources.len());
    for &span in &sources {
        let prefix = keys::postings_bucket_prefix(span);
        let end = keys::prefix_end(&prefix);
        let mut it = inner.backend.scan_as(prefix..end, ScanKind::Bulk).await?;
        let head = it.next().await?;
        scans.push((it, head));
    }
    let prefix_len = keys::postings_bucket_prefix(block).len();
    let mut extra = extra.into_iter().peekable();
    let mut batches = Batches::new(db);
    loop {
        let smallest = scans
            .iter()
            .filter_map(|(_, head)| head.as_ref().and_then(|kv| kv.key.get(prefix_len..)))
            .chain(extra.peek().map(|(k, _)| k.as_slice()))
            .min()
            .map(<[u8]>::to_vec);
        let Some(suffix) = smallest else {
            break;
        };
        let mut lists = Vec::new();
        for (it, head) in &mut scans {
            while let Some(kv) = head.take() {
                if kv.key.get(prefix_len..) != Some(suffix.as_slice()) {
                    *head = Some(kv);
                    break;
                }
                let mut ids = Vec::new();
                values::decode_postings(&kv.value, &mut ids)?;
                lists.push(ids);
                *head = it.next().await?;
            }
        }
        if let Some((_, ids)) = extra.next_if(|(k, _)| *k == suffix) {
            lists.push(ids);
        }
        let mut key = keys::postings_bucket_prefix(block);
        key.extend_from_slice(&suffix);
        batches
            .batch
            .put_with_options(key, values::encode_postings(&union(lists)), &ttl);
        batches.added().await?;
    }
    batches.finish().await?;

    let mut pass = CompactPass {
        blocks: 1,
        ..CompactPass::default()
    };
    // Chunks: the buckets' samples of each series become parts of the
    // block, one per quarter of it, written with the parts the block holds
    // already into the series' one value: one key a series per pass, where
    // a key per part and their list took two or more, each a node of
    // SlateDB's memtable. Its late segments wait for the fold.
    let n = inner.settings.block_buckets();
    let bucket_ms = inner.settings.bucket_ms();
    let whole = upto == start + n;
    let (start_ms, from_ms) = (start * bucket_ms, from * bucket_ms);
    let quarter_ms = (n / 4).max(1) * bucket_ms;
    let buckets: Vec<Span> = (from..upto).map(Span::Bucket).collect();
    for part in ids.chunks(SERIES_PER_BATCH) {
        let mut found = Vec::with_capacity(buckets.len());
        for &span in &buckets {
            found.push(
                storage
                    .series_buckets(span, part, ScanKind::Bulk)
                    .await?
                    .into_iter()
                    .peekable(),
            );
        }
        let mut held = if from > start {
            block_chunks(inner, block, part)
                .await?
                .into_iter()
                .peekable()
        } else {
            Vec::new().into_iter().peekable()
        };
        let mut batch = Batch::new();
        for &id in part {
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            for of_span in &mut found {
                if let Some(sb) = of_span.next_if(|sb| sb.id == id) {
                    let (t, v) = sb.samples(i64::MIN, i64::MAX)?;
                    ts.extend(t);
                    vs.extend(v);
                }
            }
            // Series the block holds but these buckets do not are passed.
            while held.next_if(|h| h.id < id).is_some() {}
            let held = held.next_if(|h| h.id == id);
            if ts.is_empty() && !(whole && held.as_ref().is_some_and(Held::in_keys)) {
                continue;
            }
            let kept = match &held {
                Some(h) => h.parts_before(block, from_ms, &mut batch)?,
                None => Vec::new(),
            };
            let mut new = Vec::new();
            for (range, (t, v)) in by_quarter(&ts, &vs, start_ms, quarter_ms) {
                let mut bytes = Vec::new();
                strata_codec::encode_sealed(t, v, &mut bytes);
                pass.bytes += bytes.len();
                new.push((range, bytes::Bytes::from(bytes)));
            }
            if !ts.is_empty() {
                pass.series += 1;
                pass.samples += ts.len();
            }
            if let Some(h) = &held {
                inner.reclaim.note(h.value.len());
            }
            // Every part in the one value; part keys (of a block extended
            // by a build that kept them) go.
            for p in &kept {
                if p.in_key {
                    inner.reclaim.note(p.bytes.len());
                    batch.delete(keys::segment_key(block, id, p.range.0, p.range.1));
                }
            }
            let all: Vec<((i64, i64), &[u8])> = kept
                .iter()
                .map(|p| (p.range, &p.bytes[..]))
                .chain(new.iter().map(|(r, b)| (*r, &b[..])))
                .collect();
            batch.put_with_options(keys::chunk_key(block, id), values::encode_parts(&all), &ttl);
        }
        // A batch of series of which none has samples in these buckets
        // (they went away earlier) writes nothing.
        if !batch.is_empty() {
            inner.room_for_background(&crate::shared::NO_HURRY).await;
            db.write(batch.into_write_batch())
                .await?
                .await_durable()
                .await?;
        }
        // A pass takes minutes at a million series, on one thread: its
        // free room is given back as it goes, not once at the end.
        crate::worker::idle();
    }

    Ok(pass)
}

/// A stretch of a series' samples: its time range, timestamps and values.
type Stretch<'a> = ((i64, i64), (&'a [i64], &'a [f64]));

/// The samples `ts`/`vs` (ascending) cut where each quarter of the block
/// starting at `start_ms` begins.
fn by_quarter<'a>(
    ts: &'a [i64],
    vs: &'a [f64],
    start_ms: i64,
    quarter_ms: i64,
) -> Vec<Stretch<'a>> {
    let mut out = Vec::new();
    let (mut ts, mut vs) = (ts, vs);
    while let (Some(&first), Some(_)) = (ts.first(), vs.first()) {
        let quarter = (first - start_ms).div_euclid(quarter_ms).saturating_add(1);
        let quarter_end = start_ms.saturating_add(quarter.saturating_mul(quarter_ms));
        let end = ts.partition_point(|&t| t < quarter_end).max(1);
        let ((t, rest_t), (v, rest_v)) = (ts.split_at(end), vs.split_at(end.min(vs.len())));
        let last = t.last().copied().unwrap_or(first);
        out.push(((first, last), (t, v)));
        (ts, vs) = (rest_t, rest_v);
    }
    out
}

#[cfg(test)]
mod quarter_tests {
    use super::by_quarter;

    #[test]
    fn samples_are_cut_at_quarters() {
        let ts = [-5, 0, 5, 9, 10, 25, 31, 39];
        let vs: Vec<f64> = ts.iter().map(|&t| t as f64).collect();
        let cut = by_quarter(&ts, &vs, 0, 10);
        let ranges: Vec<_> = cut.iter().map(|(r, (t, _))| (*r, t.len())).collect();
        assert_eq!(
            ranges,
            [
                ((-5, -5), 1),
                ((0, 9), 3),
                ((10, 10), 1),
                ((25, 25), 1),
                ((31, 39), 2)
            ]
        );
        assert!(cut.iter().all(|(_, (t, v))| t.len() == v.len()));
        assert!(by_quarter(&[], &[], 0, 10).is_empty());
    }
}

/// What a block holds of one series before an extension: its `B` value and
/// the part keys found beside it.
struct Held {
    id: u64,
    value: bytes::Bytes,
    segments: Vec<((i64, i64), bytes::Bytes)>,
}

/// One part a block holds of a series.
struct HeldPart {
    range: (i64, i64),
    bytes: bytes::Bytes,
    /// Stored under a part key of its own, as earlier builds kept a block's
    /// parts while it filled (else inside the `B` value).
    in_key: bool,
}

impl Held {
    /// A series' keys in the block, if it has a `B` value.
    fn of((id, found): (u64, FoundKeys)) -> Option<Self> {
        Some(Held {
            id,
            value: found.chunk?,
            segments: found.segments,
        })
    }

    /// Whether some of its parts are under keys of their own.
    fn in_keys(&self) -> bool {
        !self.segments.is_empty()
    }

    /// Its parts before `from_ms`, where the new ones start, oldest first.
    /// Part keys from `from_ms` on (written by a pass that stopped before
    /// its switch) and part keys no list names are deleted in `batch`.
    fn parts_before(
        &self,
        block: Span,
        from_ms: i64,
        batch: &mut Batch,
    ) -> Result<Vec<HeldPart>, StorageError> {
        let mut parts = Vec::new();
        if let Some(inline) = values::decode_parts(&self.value)? {
            for (range, at) in inline {
                parts.push(HeldPart {
                    range,
                    bytes: self.value.slice(at),
                    in_key: false,
                });
            }
        } else {
            let (listed, inline) = match values::decode_segmented(&self.value)? {
                Some((listed, inline)) => (listed, inline),
                None => (Vec::new(), &self.value[..]),
            };
            for range in listed {
                let Some((_, bytes)) = self.segments.iter().find(|(r, _)| *r == range) else {
                    return Err(StorageError::Corrupt(format!(
                        "block {block:?} lists a part {range:?} of series {} that is not stored",
                        self.id
                    )));
                };
                parts.push(HeldPart {
                    range,
                    bytes: bytes.clone(),
                    in_key: true,
                });
            }
            if !inline.is_empty() {
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                strata_codec::decode_chunk_range_into(
                    inline,
                    i64::MIN,
                    i64::MAX,
                    &mut ts,
                    &mut vs,
                )?;
                if let (Some(&first), Some(&last)) = (ts.first(), ts.last()) {
                    parts.push(HeldPart {
                        range: (first, last),
                        bytes: self.value.slice_ref(inline),
                        in_key: false,
                    });
                }
            }
        }
        parts.retain(|p| p.range.0 < from_ms);
        for (range, _) in &self.segments {
            if !parts.iter().any(|p| p.in_key && p.range == *range) {
                batch.delete(keys::segment_key(block, self.id, range.0, range.1));
            }
        }
        Ok(parts)
    }
}

/// What the block holds of series `ids` (ascending), by id: the series
/// with a `B` value (part keys without one were left by a pass that
/// stopped before writing the list; nothing reads them).
async fn block_chunks(inner: &Shared, block: Span, ids: &[u64]) -> Result<Vec<Held>, StorageError> {
    let (Some(&lo), Some(&hi)) = (ids.first(), ids.last()) else {
        return Ok(Vec::new());
    };
    let end = keys::prefix_end(&keys::chunk_key(block, hi));
    let mut it = inner
        .backend
        .scan_as(keys::chunk_key(block, lo)..end, ScanKind::Bulk)
        .await?;
    let mut out = Vec::new();
    let mut series: Option<(u64, FoundKeys)> = None;
    while let Some(kv) = it.next().await? {
        let Some(id) = keys::chunk_series(&kv.key) else {
            continue;
        };
        if series.as_ref().is_none_or(|(at, _)| *at != id) {
            out.extend(series.take().and_then(Held::of));
        }
        series
            .get_or_insert_with(|| (id, FoundKeys::default()))
            .1
            .add(kv);
    }
    out.extend(series.and_then(Held::of));
    Ok(out)
}

/// Write batches of at most [`KEYS_PER_BATCH`] keys, each durable before
/// the next is written.
struct Batches<'a> {
    db: &'a slatedb::Db,
    batch: WriteBatch,
    keys: usize,
}

impl<'a> Batches<'a> {
    fn new(db: &'a slatedb::Db) -> Self {
        Self {
            db,
            batch: WriteBatch::new(),
            keys: 0,
        }
    }

    /// Counts a key just added to `batch`; writes the batch once full.
    async fn added(&mut self) -> Result<(), StorageError> {
        self.keys += 1;
        if self.keys % KEYS_PER_BATCH == 0 {
            let batch = std::mem::take(&mut self.batch);
            self.db.write(batch).await?.await_durable().await?;
        }
        Ok(())
    }

    /// Writes what is left; the number of keys written in all.
    async fn finish(self) -> Result<usize, StorageError> {
        if self.keys % KEYS_PER_BATCH != 0 {
            self.db.write(self.batch).await?.await_durable().await?;
        }
        Ok(self.keys)
    }
}

/// Deletes every chunk, segment, postings and late-marker key of buckets
/// `[from, through)`; the number of keys.
async fn delete_buckets(
    inner: &Shared,
    db: &slatedb::Db,
    from: i64,
    through: i64,
) -> Result<usize, StorageError> {
    let mut deleted = 0;
    let ranges = [
        (keys::chunk_prefix(from), keys::chunk_prefix(through)),
        (
            keys::postings_bucket_prefix(from),
            keys::postings_bucket_prefix(through),
        ),
        (keys::late_prefix(from), keys::late_prefix(through)),
    ];
    for (lo, hi) in ranges {
        let mut it = inner.backend.scan_as(lo..hi, ScanKind::Bulk).await?;
        let mut batches = Batches::new(db);
        while let Some(kv) = it.next().await? {
            inner.reclaim.note(kv.key.len() + kv.value.len());
            batches.batch.delete(kv.key);
            batches.added().await?;
        }
        deleted += batches.finish().await?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let c = Compacted {
            through: 48,
            deleted_through: 24,
            switched_ms: 1_700_000_000_000,
        };
        assert_eq!(Compacted::decode(&c.encode()).ok(), Some(c));
        assert!(Compacted::decode(&c.encode()[..24]).is_err());
        let mut other = c.encode();
        other[0] = 2;
        assert!(Compacted::decode(&other).is_err());
    }
}
