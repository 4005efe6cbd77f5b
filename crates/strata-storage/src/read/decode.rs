//! Decoding a read's stored parts: on the request's task when they are
//! few, in parallel on blocking threads when they are many, merged with
//! the head's samples.

use bytes::Bytes;

use strata_codec::histogram::FloatHistogram;
use strata_codec::{chunk_len_hint, decode_chunk_range_into, Label, Series, SeriesMap};

use crate::error::StorageError;
use strata_codec::merge::{merge_into, merge_newer};

/// Sealed bytes decoded by one thread before the decode of a select is
/// spread over the cores: a thread costs more than a few chunks.
pub(super) const PARALLEL_DECODE_FROM: usize = 256 << 10;

/// Samples as timestamp and value columns.
pub(super) type Samples = (Vec<i64>, Vec<f64>);

/// One series' sealed parts of a select, to decode.
pub(super) struct DecodeJob {
    pub(super) labels: Vec<Label>,
    pub(super) parts: Vec<SealedPart>,
    /// Its samples read from the head, merged after the sealed ones (the
    /// head's winning where both hold a timestamp): the head's part, then
    /// late samples it holds apart.
    pub(super) head: Vec<Samples>,
    /// Its native histogram samples, ascending.
    pub(super) histograms: Vec<(i64, FloatHistogram)>,
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
            labels: self.labels.into(),
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
pub(super) fn finish(series: Series, map: Option<&SeriesMap>) -> Option<Series> {
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
pub(super) async fn decode_jobs(
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
pub(super) fn insert_stored(head: &mut Samples, (ts, vs): Samples) {
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
pub(super) struct SealedPart {
    pub(super) id: u64,
    pub(super) bytes: Bytes,
    /// A late segment: merged into what came before, not appended.
    pub(super) late: bool,
    /// Samples from here (ms) on are read elsewhere: a block not yet whole
    /// may hold more than the compaction state a read took says it does.
    pub(super) until: i64,
}

/// The error of a read's task or thread (`what`) that panicked or was
/// cancelled.
pub(super) fn task_failed(what: &'static str) -> impl Fn(tokio::task::JoinError) -> StorageError {
    move |e| StorageError::Corrupt(format!("a {what} failed: {e}"))
}
