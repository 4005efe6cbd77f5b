//! One block written: the union of its sources' postings, then per series
//! its parts, one per quarter of the block, in the series' one value.

use std::collections::BTreeMap;

use strata_codec::LabelPairs;

use super::held::{block_chunks, Held};
use super::write::{Batches, CompactPass, SERIES_PER_BATCH};
use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys::{self, Span};
use crate::packed_batch::Batch;
use crate::postings::union;
use crate::storage::Storage;
use crate::values;

/// Writes the parts of the block starting at bucket `start` that hold
/// buckets `[from, upto)`: per series one part (late segments merged, a
/// later write winning a timestamp held twice) added to the block's list,
/// and the union of the block's and the buckets' postings, with the series
/// that joined one late added.
pub(super) async fn compact_block(
    storage: &Storage,
    db: &slatedb::Db,
    start: i64,
    from: i64,
    upto: i64,
) -> Result<CompactPass, StorageError> {
    let inner = &storage.shared;
    let writer = inner.writing().ok_or(StorageError::ReadOnly)?;
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
                writer.reclaim.note(h.value.len());
            }
            // Every part in the one value; part keys (of a block extended
            // by a build that kept them) go.
            for p in &kept {
                if p.in_key {
                    writer.reclaim.note(p.bytes.len());
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
