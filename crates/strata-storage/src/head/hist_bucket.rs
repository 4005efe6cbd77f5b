//! One bucket of a series' native histograms as the head holds it: the
//! in-order chunks and the out-of-order samples held apart (`hist.rs`
//! appends to it and reads it).

use strata_codec::histogram::{
    chunks_of, encode_chunk_list, AnyHistogramChunk, FloatHistogram, HistogramSample,
};

/// One bucket of a series' histograms.
pub(crate) struct HistBucket {
    pub(crate) bucket: i64,
    /// In-order samples.
    pub(super) chunks: Vec<AnyHistogramChunk>,
    /// Samples older than the chunks' last, ascending.
    pub(super) ooo: Vec<(i64, HistogramSample)>,
}

impl HistBucket {
    pub(super) fn new(bucket: i64) -> Self {
        Self {
            bucket,
            chunks: Vec::new(),
            ooo: Vec::new(),
        }
    }

    pub(super) fn last_t(&self) -> Option<i64> {
        self.chunks.last().and_then(AnyHistogramChunk::last_t)
    }

    pub(super) fn first_t(&self) -> Option<i64> {
        let chunk = self.chunks.first().and_then(AnyHistogramChunk::first_t);
        let ooo = self.ooo.first().map(|(t, _)| *t);
        chunk.into_iter().chain(ooo).min()
    }

    /// The sample held at `t`, if any.
    pub(super) fn at(&self, t: i64) -> Option<HistogramSample> {
        if let Ok(i) = self.ooo.binary_search_by_key(&t, |(st, _)| *st) {
            return self.ooo.get(i).map(|(_, s)| s.clone());
        }
        let chunk = self
            .chunks
            .iter()
            .find(|c| c.first_t().is_some_and(|f| f <= t) && c.last_t().is_some_and(|l| l >= t))?;
        // Written here: an error would be a bug.
        let samples = chunk.samples().ok()?;
        samples.into_iter().find(|(st, _)| *st == t).map(|(_, s)| s)
    }

    /// Every sample, ascending, in its stored form.
    fn samples(&self) -> Vec<(i64, HistogramSample)> {
        let mut out: Vec<(i64, HistogramSample)> = self
            .chunks
            .iter()
            .flat_map(|c| c.samples().unwrap_or_default())
            .collect();
        if !self.ooo.is_empty() {
            out.extend(self.ooo.iter().cloned());
            out.sort_by_key(|(t, _)| *t);
        }
        out
    }

    /// The samples in `[mint, maxt]`, ascending, in float form.
    pub(super) fn read(&self, mint: i64, maxt: i64, out: &mut Vec<(i64, FloatHistogram)>) {
        let from = out.len();
        for c in &self.chunks {
            let overlaps =
                c.first_t().is_some_and(|f| f <= maxt) && c.last_t().is_some_and(|l| l >= mint);
            if !overlaps {
                continue;
            }
            for (t, s) in c.samples().unwrap_or_default() {
                if t >= mint && t <= maxt {
                    out.push((t, s.to_float()));
                }
            }
        }
        let ooo = self.ooo.iter().filter(|(t, _)| *t >= mint && *t <= maxt);
        let mut any = false;
        for (t, s) in ooo {
            out.push((*t, s.to_float()));
            any = true;
        }
        if any {
            if let Some(part) = out.get_mut(from..) {
                part.sort_by_key(|(t, _)| *t);
            }
        }
    }

    /// The bucket's samples as the seal writes them: an encoded chunk list.
    pub(super) fn encoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.ooo.is_empty() {
            encode_chunk_list(&self.chunks, &mut out);
        } else {
            // Validated on the way in: every sample fits some chunk.
            let chunks = chunks_of(&self.samples()).unwrap_or_default();
            encode_chunk_list(&chunks, &mut out);
        }
        out
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.heap_bytes() + std::mem::size_of::<AnyHistogramChunk>())
            .sum::<usize>()
            + self.ooo.capacity() * std::mem::size_of::<(i64, HistogramSample)>()
            + self
                .ooo
                .iter()
                .map(|(_, s)| sample_heap_bytes(s))
                .sum::<usize>()
    }
}

fn sample_heap_bytes(s: &HistogramSample) -> usize {
    match s {
        HistogramSample::Int(h) => {
            (h.positive_spans.len() + h.negative_spans.len()) * 8
                + (h.positive_buckets.len() + h.negative_buckets.len()) * 8
                + h.custom_values.len() * 8
        }
        HistogramSample::Float(h) => {
            (h.positive_spans.len() + h.negative_spans.len()) * 8
                + (h.positive_buckets.len() + h.negative_buckets.len()) * 8
                + h.custom_values.len() * 8
        }
    }
}

/// Whether two samples are the same histogram, whatever their form, hint
/// or layout (a chunk may store a sample with empty buckets it did not
/// have): the frame, counts, sum and every non-empty bucket, bit for bit.
pub(super) fn same_histogram(a: &HistogramSample, b: &HistogramSample) -> bool {
    let (a, b) = (a.to_float(), b.to_float());
    let frame = |h: &FloatHistogram| {
        (
            h.schema,
            h.zero_threshold.to_bits(),
            h.zero_count.to_bits(),
            h.count.to_bits(),
            h.sum.to_bits(),
            h.custom_values
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
        )
    };
    frame(&a) == frame(&b)
        && filled(&a.positive_spans, &a.positive_buckets)
            == filled(&b.positive_spans, &b.positive_buckets)
        && filled(&a.negative_spans, &a.negative_buckets)
            == filled(&b.negative_spans, &b.negative_buckets)
}

/// The non-empty buckets of one side as (index, count bits).
fn filled(spans: &[strata_codec::histogram::Span], buckets: &[f64]) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    let mut counts = buckets.iter();
    let mut index = 0i64;
    for span in spans {
        index += i64::from(span.offset);
        for _ in 0..span.length {
            if let Some(&c) = counts.next() {
                if c != 0.0 {
                    out.push((index, c.to_bits()));
                }
            }
            index += 1;
        }
    }
    out
}
