//! Selecting series in the head and reading their samples.

use std::sync::Arc;

use strata_codec::histogram::FloatHistogram;
use strata_codec::{LabelPairs, Matcher};

use super::chunk::HeadChunk;
use super::delta::Head;
use super::ids::IdList;
use super::index::SeriesIndex;
use super::released::Released;
use super::series::MemSeries;
use crate::postings::{combine, union, MatcherSet};
use strata_codec::threads::available as available_threads;

/// A matcher whose postings would be more than this many times the
/// candidates already found (counted in packed bytes, at least one an id)
/// is checked against the candidates' own labels instead: a label lookup
/// costs about what decoding a few dozen postings entries does, and a
/// `job` list can hold every series of the head.
const LABEL_CHECK_RATIO: usize = 32;

impl Head {
    /// Ids of the series matching every matcher, ascending.
    ///
    /// The smallest list of an equality matcher is read first; lists much
    /// larger than what it found are not decoded, the candidates' labels
    /// are matched instead (a host's dashboard selects a few series out of
    /// a `job` that holds a million).
    pub fn select_ids(&self, matchers: &[Matcher]) -> Vec<u64> {
        let idx = self.index.read();
        let is_equal = |m: &Matcher| m.op == strata_codec::MatchOp::Equal && !m.matches_empty();
        // The equality matcher with the smallest list seeds the candidates.
        let mut seed: Option<(usize, &IdList)> = None;
        for (i, m) in matchers.iter().enumerate().filter(|(_, m)| is_equal(m)) {
            let Some(ids) = idx
                .postings
                .get(m.name.as_str())
                .and_then(|values| values.get(m.value.as_str()))
            else {
                return Vec::new();
            };
            if seed.is_none_or(|(_, s)| ids.packed_bytes() < s.packed_bytes()) {
                seed = Some((i, ids));
            }
        }
        let Some((seed_at, seed_list)) = seed else {
            return combine(
                matchers
                    .iter()
                    .filter_map(|m| matcher_set(&idx, m, usize::MAX))
                    .collect(),
                || idx.by_id.values().map(|s| s.id).collect(),
            );
        };
        let seed_ids = seed_list.to_sorted();
        let budget = seed_ids.len().saturating_mul(LABEL_CHECK_RATIO);
        let mut sets = vec![MatcherSet::Include(seed_ids)];
        let mut by_labels = Vec::new();
        for (_, m) in matchers.iter().enumerate().filter(|&(i, _)| i != seed_at) {
            match matcher_set(&idx, m, budget) {
                Some(set) => sets.push(set),
                None => by_labels.push(m),
            }
        }
        let mut ids = combine(sets, Vec::new);
        if !by_labels.is_empty() {
            ids.retain(|&id| {
                idx.by_id.get(id).is_some_and(|s| {
                    by_labels
                        .iter()
                        .all(|m| m.matches(s.labels.value_of(&m.name)))
                })
            });
        }
        ids
    }

    /// The series for ids, skipping unknown ones.
    pub fn series_for(&self, ids: &[u64]) -> Vec<Arc<MemSeries>> {
        let idx = self.index.read();
        ids.iter()
            .filter_map(|&id| idx.by_id.get(id).cloned())
            .collect()
    }
}

/// What `m` selects from the head's postings, or `None` when its lists
/// would be more than `budget` packed bytes: then nothing is decoded and
/// the caller checks labels instead.
fn matcher_set(idx: &SeriesIndex, m: &Matcher, budget: usize) -> Option<MatcherSet> {
    // Include the values that match, or (for a matcher that accepts an
    // absent label) exclude the values that do not.
    let matches_empty = m.matches_empty();
    let lists: Vec<&IdList> = match idx.postings.get(m.name.as_str()) {
        None => Vec::new(),
        Some(values) if !matches_empty && m.op == strata_codec::MatchOp::Equal => {
            values.get(m.value.as_str()).into_iter().collect()
        }
        Some(values) => values
            .iter()
            .filter(|(v, _)| m.matches(v) != matches_empty)
            .map(|(_, ids)| ids)
            .collect(),
    };
    let bytes = lists
        .iter()
        .map(|l| l.packed_bytes())
        .fold(0usize, usize::saturating_add);
    if bytes > budget {
        return None;
    }
    let ids = union(lists.iter().map(|l| l.to_sorted()).collect());
    Some(if matches_empty {
        MatcherSet::Exclude(ids)
    } else {
        MatcherSet::Include(ids)
    })
}

/// The bucket window and range one head read covers.
#[derive(Clone, Copy)]
struct HeadRange {
    /// Buckets up to this one are sealed: their samples are read from the
    /// store.
    sealed_through: i64,
    bucket_ms: i64,
    mint: i64,
    maxt: i64,
}

/// Below this many series a head read decodes them on the calling thread:
/// a thread costs tens of microseconds to start, about what a few hundred
/// short series take to decode.
const PARALLEL_SERIES_MIN: usize = 512;

/// Below this many samples a series' chunks are decoded on one thread.
const PARALLEL_SAMPLES_MIN: usize = 100_000;

/// One series' head samples in a range, as one read saw them.
#[derive(Debug, Default)]
pub struct HeadRead {
    pub id: u64,
    /// The samples held in memory, ascending.
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
    /// `(bucket, first_t, last_t)` of the segments spilled to the store
    /// that overlap the range, oldest first; each is before every sample
    /// of its bucket in memory. Together they are all the series' head
    /// samples at the time of the read.
    pub spilled: Vec<(i64, i64, i64)>,
    /// Out-of-order samples and late samples of sealed buckets in the
    /// range, ascending: to be merged with everything else read, winning
    /// where a timestamp is also found elsewhere.
    pub extra_ts: Vec<i64>,
    pub extra_vs: Vec<f64>,
    /// Buckets in the range whose samples of this series a seal under way
    /// has written to the store and the head has dropped (see
    /// `released.rs`): read from the store's chunk keys.
    pub released: Vec<i64>,
}

impl Head {
    /// The head samples in [mint, maxt], from the buckets after
    /// `sealed_through`, of every series matching all matchers that has any.
    pub fn read_ranges(
        &self,
        matchers: &[Matcher],
        sealed_through: i64,
        bucket_ms: i64,
        mint: i64,
        maxt: i64,
    ) -> Vec<HeadRead> {
        let range = HeadRange {
            sealed_through,
            bucket_ms,
            mint,
            maxt,
        };
        let series = self.series_for(&self.select_ids(matchers));
        self.with_released(range, |released| {
            read_series_ranges(&series, range, released)
        })
    }

    /// The head's native histogram samples in [mint, maxt], from the
    /// buckets after `sealed_through`, of every series matching all
    /// matchers that has any, by id.
    pub(crate) fn read_histogram_ranges(
        &self,
        matchers: &[Matcher],
        sealed_through: i64,
        bucket_ms: i64,
        mint: i64,
        maxt: i64,
    ) -> Vec<(u64, Vec<(i64, FloatHistogram)>)> {
        if !self.holds_histograms() {
            return Vec::new();
        }
        let range = HeadRange {
            sealed_through,
            bucket_ms,
            mint,
            maxt,
        };
        self.series_for(&self.select_ids(matchers))
            .iter()
            .filter_map(|s| {
                let h = s.read_histograms(mint, maxt, |b| range.holds(b));
                (!h.is_empty()).then_some((s.id, h))
            })
            .collect()
    }

    /// Runs `f` with the sets of released series whose bucket `range`
    /// holds, and no new set made until it returns: a seal's first release
    /// of a bucket waits for it. Else a pass that began before the set was
    /// made could find a chunk released after and miss it both ways.
    fn with_released<R>(&self, range: HeadRange, f: impl FnOnce(&[&Released]) -> R) -> R {
        let sets = self.released.read();
        let sets: Vec<&Released> = sets
            .iter()
            .map(|r| &**r)
            .filter(|r| range.holds(r.bucket))
            .collect();
        f(&sets)
    }

    /// The ids of `series` with samples in [mint, maxt] the head holds,
    /// from buckets after `sealed_through`; a bucket whose chunk a seal
    /// under way has released counts as a whole.
    pub(crate) fn overlapping(
        &self,
        series: &[Arc<MemSeries>],
        sealed_through: i64,
        bucket_ms: i64,
        mint: i64,
        maxt: i64,
    ) -> Vec<u64> {
        let range = HeadRange {
            sealed_through,
            bucket_ms,
            mint,
            maxt,
        };
        let histograms = self.holds_histograms();
        self.with_released(range, |released| {
            series
                .iter()
                .filter(|s| {
                    s.overlaps(range)
                        || released.iter().any(|r| r.contains(s.id))
                        || (histograms && s.histograms_overlap(mint, maxt, |b| range.holds(b)))
                })
                .map(|s| s.id)
                .collect()
        })
    }
}

impl HeadRange {
    /// Whether bucket `b` is after `sealed_through` and overlaps the range.
    fn holds(&self, b: i64) -> bool {
        let start = b.saturating_mul(self.bucket_ms);
        let end = start.saturating_add(self.bucket_ms - 1);
        b > self.sealed_through && end >= self.mint && start <= self.maxt
    }
}

/// [`Head::read_ranges`] over `series`, in their order. Many series are
/// split into contiguous runs, one thread each: decoding is independent per
/// series.
fn read_series_ranges(
    series: &[Arc<MemSeries>],
    range: HeadRange,
    released: &[&Released],
) -> Vec<HeadRead> {
    let read_all = |part: &[Arc<MemSeries>]| -> Vec<HeadRead> {
        part.iter()
            .filter_map(|s| {
                let read = s.read_range(range, released)?;
                (!read.timestamps.is_empty()
                    || !read.spilled.is_empty()
                    || !read.extra_ts.is_empty()
                    || !read.released.is_empty())
                .then_some(read)
            })
            .collect()
    };
    let threads = available_threads();
    if threads < 2 || series.len() < PARALLEL_SERIES_MIN {
        return read_all(series);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = series
            .chunks(series.len().div_ceil(threads))
            .map(|part| scope.spawn(move || read_all(part)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

impl MemSeries {
    /// This series' head samples in `range`, from the buckets after
    /// `range.sealed_through`, and which of those buckets `released` (the
    /// sets in the range) says the store holds instead; `None` when no such
    /// bucket overlaps it.
    fn read_range(&self, range: HeadRange, released: &[&Released]) -> Option<HeadRead> {
        let st = self.state.lock();
        let buckets: Vec<&(i64, HeadChunk)> =
            st.chunks.iter().filter(|(b, _)| range.holds(*b)).collect();
        // Under the lock: a chunk is dropped after its bit is set.
        let released: Vec<i64> = released
            .iter()
            .filter(|r| r.contains(self.id) && !st.chunks.iter().any(|(b, _)| *b == r.bucket))
            .map(|r| r.bucket)
            .collect();
        let (extra_ts, extra_vs) = if st.extras.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            super::extra::merged(st.extras.iter(), range.mint, range.maxt)
        };
        if buckets.is_empty() && extra_ts.is_empty() && released.is_empty() {
            return None;
        }
        let spilled = buckets
            .iter()
            .flat_map(|(b, c)| {
                c.spilled_segments()
                    .iter()
                    .filter(|&&(first, last)| last >= range.mint && first <= range.maxt)
                    .map(move |&(first, last)| (*b, first, last))
            })
            .collect();
        // Room for the spilled samples too: the read of the store puts them
        // in place without moving what is read here.
        let room = buckets
            .iter()
            .filter(|(_, c)| !c.spilled_segments().is_empty())
            .map(|(_, c)| c.spilled_len() as usize)
            .sum();
        let chunks: Vec<&HeadChunk> = buckets.iter().map(|(_, c)| c).collect();
        let (timestamps, values) = decode_chunks(&chunks, range.mint, range.maxt, room);
        Some(HeadRead {
            id: self.id,
            timestamps,
            values,
            spilled,
            extra_ts,
            extra_vs,
            released,
        })
    }

    /// Whether the head holds samples of this series in the range.
    fn overlaps(&self, range: HeadRange) -> bool {
        let (mint, maxt) = (range.mint, range.maxt);
        let st = self.state.lock();
        st.chunks.iter().any(|(b, c)| {
            *b > range.sealed_through
                && c.first_t().is_some_and(|f| f <= maxt)
                && c.last_t().is_some_and(|l| l >= mint)
                && b.saturating_mul(range.bucket_ms) <= maxt
        }) || st.extras.iter().any(|r| {
            let from = r.ts.partition_point(|&t| t < mint);
            r.ts.get(from).is_some_and(|&t| t <= maxt)
        })
    }
}

/// The samples in `[mint, maxt]` of `chunks` (one series' buckets, oldest
/// first). A small series is appended to buffers sized for all of it: a
/// frozen run then decodes straight into place, not through a scratch
/// buffer and a copy, and nothing is zero-filled first. A large one is
/// split between threads, each chunk decoding into its own part of one
/// buffer, so samples are only moved afterwards when the range cuts a
/// chunk.
fn decode_chunks(chunks: &[&HeadChunk], mint: i64, maxt: i64, room: usize) -> (Vec<i64>, Vec<f64>) {
    let lens: Vec<usize> = chunks.iter().map(|c| c.len() as usize).collect();
    let total: usize = lens.iter().sum();
    let threads = available_threads().min(chunks.len());
    if threads < 2 || total < PARALLEL_SAMPLES_MIN {
        let (mut ts, mut vs) = (
            Vec::with_capacity(total + room),
            Vec::with_capacity(total + room),
        );
        append_decoded(chunks, mint, maxt, &mut ts, &mut vs);
        return (ts, vs);
    }
    // Zeroed allocations rather than a resize: a large one is fresh zero
    // pages from the system, not filled with zeros first. `room` more is
    // kept as capacity.
    let mut ts = vec![0i64; total + room];
    let mut vs = vec![0f64; total + room];
    ts.truncate(total);
    vs.truncate(total);
    let written = decode_split(chunks, &lens, threads, mint, maxt, &mut ts, &mut vs);
    compact(&lens, &written, &mut ts, &mut vs);
    (ts, vs)
}

/// Appends the samples in `[mint, maxt]` of each chunk to `ts`/`vs`. A
/// chunk that fails to decode appends none, as in [`decode_parts`].
fn append_decoded(
    chunks: &[&HeadChunk],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) {
    for c in chunks {
        let (t_len, v_len) = (ts.len(), vs.len());
        if c.decode_range_into(mint, maxt, ts, vs).is_err() {
            ts.truncate(t_len);
            vs.truncate(v_len);
        }
    }
}

/// Decodes chunk `i` into the next `lens[i]` slots of `ts`/`vs` and returns
/// how many samples each chunk wrote. A chunk that fails to decode writes
/// none: a head chunk is only ever written by us, so that would be a bug,
/// and the other chunks' samples are still right.
fn decode_parts(
    chunks: &[&HeadChunk],
    lens: &[usize],
    mint: i64,
    maxt: i64,
    mut ts: &mut [i64],
    mut vs: &mut [f64],
) -> Vec<usize> {
    let mut written = Vec::with_capacity(chunks.len());
    for (c, &n) in chunks.iter().zip(lens) {
        let (t_part, t_rest) = std::mem::take(&mut ts).split_at_mut(n);
        let (v_part, v_rest) = std::mem::take(&mut vs).split_at_mut(n);
        (ts, vs) = (t_rest, v_rest);
        written.push(
            c.decode_range_to_slices(mint, maxt, t_part, v_part)
                .unwrap_or(0),
        );
    }
    written
}

/// [`decode_parts`] with the chunks cut into `threads` runs of about equal
/// sample counts, each decoded on its own thread into its part of the
/// buffers.
fn decode_split(
    chunks: &[&HeadChunk],
    lens: &[usize],
    threads: usize,
    mint: i64,
    maxt: i64,
    mut ts: &mut [i64],
    mut vs: &mut [f64],
) -> Vec<usize> {
    let total: usize = lens.iter().sum();
    let per_thread = total.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        let (mut first, mut filled) = (0, 0);
        for (i, &n) in lens.iter().enumerate() {
            filled += n;
            let last = i + 1 == lens.len();
            if filled < per_thread && !last {
                continue;
            }
            let c_run = chunks.get(first..=i).unwrap_or_default();
            let l_run = lens.get(first..=i).unwrap_or_default();
            let (t_part, t_rest) = std::mem::take(&mut ts).split_at_mut(filled);
            let (v_part, v_rest) = std::mem::take(&mut vs).split_at_mut(filled);
            (ts, vs) = (t_rest, v_rest);
            handles
                .push(scope.spawn(move || decode_parts(c_run, l_run, mint, maxt, t_part, v_part)));
            (first, filled) = (i + 1, 0);
        }
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Closes the gaps [`decode_parts`] left where a chunk wrote fewer samples
/// than it holds (cut by the range), and drops the unused tail.
fn compact(lens: &[usize], written: &[usize], ts: &mut Vec<i64>, vs: &mut Vec<f64>) {
    let (mut from, mut to) = (0, 0);
    for (&n, &w) in lens.iter().zip(written) {
        if from != to {
            ts.copy_within(from..from + w, to);
            vs.copy_within(from..from + w, to);
        }
        from += n;
        to += w;
    }
    ts.truncate(to);
    vs.truncate(to);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks of `per_chunk` samples 1 s apart, values equal to the second;
    /// every other chunk has its first half frozen.
    fn chunks(count: usize, per_chunk: usize) -> Vec<HeadChunk> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let f = super::super::runs::test_file();
        (0..count)
            .map(|c| {
                let mut chunk = HeadChunk::default();
                for i in 0..per_chunk {
                    if c % 2 == 0 && i == per_chunk / 2 {
                        chunk.freeze(1, &f, &mut ts, &mut vs);
                    }
                    let s = (c * per_chunk + i) as i64;
                    chunk.append(s * 1000, s as f64);
                }
                chunk
            })
            .collect()
    }

    fn expected(mint: i64, maxt: i64, n: usize) -> Vec<i64> {
        (0..n as i64)
            .map(|s| s * 1000)
            .filter(|&t| t >= mint && t <= maxt)
            .collect()
    }

    #[test]
    fn decodes_chunks_cut_by_the_range_in_order() {
        let owned = chunks(5, 100);
        let refs: Vec<&HeadChunk> = owned.iter().collect();
        for (mint, maxt) in [(0, i64::MAX), (150_000, 320_500), (99_000, 100_000)] {
            let (ts, vs) = decode_chunks(&refs, mint, maxt, 0);
            assert_eq!(ts, expected(mint, maxt, 500));
            let want: Vec<f64> = ts.iter().map(|&t| (t / 1000) as f64).collect();
            assert_eq!(vs, want);
        }
    }

    #[test]
    fn large_reads_split_between_threads_give_the_same_samples() {
        let owned = chunks(7, PARALLEL_SAMPLES_MIN / 3);
        let refs: Vec<&HeadChunk> = owned.iter().collect();
        let n = 7 * (PARALLEL_SAMPLES_MIN / 3);
        let (mint, maxt) = (1_500_000, (n as i64 - 1000) * 1000);
        let lens: Vec<usize> = refs.iter().map(|c| c.len() as usize).collect();
        let (mut ts, mut vs) = (vec![0; n], vec![0.0; n]);
        let written = decode_split(&refs, &lens, 3, mint, maxt, &mut ts, &mut vs);
        compact(&lens, &written, &mut ts, &mut vs);
        assert_eq!(ts, expected(mint, maxt, n));
        assert_eq!(decode_chunks(&refs, mint, maxt, 0).0, ts);
    }
}
