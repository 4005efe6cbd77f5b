//! One partition's share of a batch of records: its series' samples,
//! grouped by series and applied in log order.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use strata_codec::LogRecord;

use crate::head::{AppendPolicy, Head, MemSeries};

/// What one partition applied: samples, and the first seq per bucket.
pub(super) struct PartitionResult {
    pub(super) applied: usize,
    pub(super) extra: usize,
    pub(super) open_buckets: BTreeMap<i64, u64>,
    /// Series the head does not hold, their samples left out.
    pub(super) unknown: Vec<u64>,
}

/// A sample of a batch bound for one partition, with the index of its
/// record in the batch.
struct Pending {
    series: u64,
    record: u32,
    t: i64,
    v: f64,
}

/// Applies the samples of the series in partition `part` of `parts`, each
/// series' in log order.
///
/// A write batch carries one sample of many series, so applying records
/// one after the other visits every series once per record, with its
/// chunk long out of cache. The partition's samples are grouped by series
/// first (a stable sort keeps each series' samples in log order), so one
/// lookup and one lock serve all of a series' samples in the batch.
pub(super) fn apply_partition(
    records: &[(u64, LogRecord)],
    head: &Head,
    policy: &AppendPolicy,
    (part, parts): (usize, usize),
    only: Option<&FxHashSet<u64>>,
    cache: &mut FxHashMap<u64, Arc<MemSeries>>,
) -> PartitionResult {
    let mut result = PartitionResult {
        applied: 0,
        extra: 0,
        open_buckets: BTreeMap::new(),
        unknown: Vec::new(),
    };
    let mut mine = partition_samples(records, part, parts);
    mine.sort_by_key(|p| p.series);
    let seq_of = |p: &Pending| records.get(p.record as usize).map_or(0, |r| r.0);
    let mut buf: Vec<(i64, f64)> = Vec::new();
    for run in mine.chunk_by(|a, b| a.series == b.series) {
        let Some(first) = run.first() else {
            continue;
        };
        let id = first.series;
        if only.is_some_and(|o| !o.contains(&id)) {
            continue;
        }
        let series = match cache.get(&id) {
            Some(s) => s,
            None => match head.series_by_id(id) {
                Some(s) => cache.entry(id).or_insert(s),
                None => {
                    result.unknown.push(id);
                    continue;
                }
            },
        };
        buf.clear();
        buf.extend(run.iter().map(|p| (p.t, p.v)));
        // Appended samples come in run order, each the first sample with
        // its timestamp after the previous appended one, so a cursor over
        // the run finds each one's record.
        let open_buckets = &mut result.open_buckets;
        let mut cursor = run.iter();
        let mut last_bucket = None;
        let mut note = |t: i64, _: f64, b: i64| {
            let seq = cursor.find(|p| p.t == t).map_or(0, seq_of);
            if b >= policy.first_open && last_bucket != Some(b) {
                last_bucket = Some(b);
                let first_seq = open_buckets.entry(b).or_insert(seq);
                *first_seq = (*first_seq).min(seq);
            }
        };
        let mut out = series.append(&buf, policy, &mut note);
        if out.series_dropped {
            let live = head.revive(series);
            out = live.append(&buf, policy, &mut note);
            cache.insert(id, live);
        }
        result.applied += out.appended;
        result.extra += out.extra;
    }
    result
}

/// The samples of `records` whose series falls in partition `part`.
fn partition_samples(records: &[(u64, LogRecord)], part: usize, parts: usize) -> Vec<Pending> {
    let mut mine = Vec::new();
    for (i, (_, record)) in records.iter().enumerate() {
        mine.extend(
            record
                .samples
                .iter()
                .filter(|s| (s.series % parts as u64) as usize == part)
                .map(|s| Pending {
                    series: s.series,
                    record: i as u32,
                    t: s.t,
                    v: s.v,
                }),
        );
    }
    mine
}
