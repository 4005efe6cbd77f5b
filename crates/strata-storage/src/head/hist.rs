//! A series' native histogram samples in the head, per bucket.
//!
//! Samples in order go to the bucket's histogram chunks (Prometheus' chunk
//! encodings, `strata_codec::histogram`); an out-of-order one within the
//! window is held apart, decoded, and merged in at the seal, which writes
//! the bucket's samples of the series as one chunk list under its `N` key.
//! A histogram for a bucket already sealed (or being sealed) is not held:
//! the coordinator writes it to the store with its log record.
//!
//! Histograms and floats of a series are kept apart; Prometheus lets a
//! series change from one to the other, and so does Strata.

use strata_codec::histogram::{
    append_to_chunks, chunks_of, encode_chunk_list, AnyHistogramChunk, AppendError, FloatHistogram,
    HistogramSample,
};

use super::append::{AppendOutcome, AppendPolicy, Rejection};
use super::series::MemSeries;

/// One bucket of a series' histograms.
pub(crate) struct HistBucket {
    pub(crate) bucket: i64,
    /// In-order samples.
    chunks: Vec<AnyHistogramChunk>,
    /// Samples older than the chunks' last, ascending.
    ooo: Vec<(i64, HistogramSample)>,
}

impl HistBucket {
    fn new(bucket: i64) -> Self {
        Self {
            bucket,
            chunks: Vec::new(),
            ooo: Vec::new(),
        }
    }

    fn last_t(&self) -> Option<i64> {
        self.chunks.last().and_then(AnyHistogramChunk::last_t)
    }

    fn first_t(&self) -> Option<i64> {
        let chunk = self.chunks.first().and_then(AnyHistogramChunk::first_t);
        let ooo = self.ooo.first().map(|(t, _)| *t);
        chunk.into_iter().chain(ooo).min()
    }

    /// The sample held at `t`, if any.
    fn at(&self, t: i64) -> Option<HistogramSample> {
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
    fn read(&self, mint: i64, maxt: i64, out: &mut Vec<(i64, FloatHistogram)>) {
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
    fn encoded(&self) -> Vec<u8> {
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
fn same_histogram(a: &HistogramSample, b: &HistogramSample) -> bool {
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

impl MemSeries {
    /// Appends native histogram samples (each validated by the caller) by
    /// the same rules as floats: in order to the bucket's chunks, out of
    /// order within the window beside them, a timestamp already held a
    /// duplicate (the same sample) or a conflict. Calls `accepted(t, h,
    /// bucket)` for each kept; one in a sealed bucket is kept only by being
    /// passed there (the caller writes it to the store).
    pub fn append_histograms(
        &self,
        samples: &[(i64, HistogramSample)],
        policy: &AppendPolicy,
        mut accepted: impl FnMut(i64, &HistogramSample, i64),
    ) -> AppendOutcome {
        let mut out = AppendOutcome::default();
        let mut guard = self.state.lock();
        let st = &mut *guard;
        if self.dropped.load(std::sync::atomic::Ordering::Relaxed) {
            out.series_dropped = true;
            return out;
        }
        let was_active = st.has_data();
        let bucket_ms = policy.bucket_ms;
        for (t, h) in samples {
            let t = *t;
            let bucket = t.div_euclid(bucket_ms);
            let window = policy.late_from;
            if bucket < policy.first_open {
                match window {
                    None => out.reject(Rejection::TooOld {
                        t,
                        open_from_ms: policy.first_open.saturating_mul(bucket_ms),
                    }),
                    Some(from) if t < from => {
                        out.reject(Rejection::OutsideWindow { t, min_t: from })
                    }
                    Some(_) if !policy.keep_late => {}
                    Some(_) => {
                        out.appended += 1;
                        accepted(t, h, bucket);
                    }
                }
                continue;
            }
            let kept = st.extras.with_hists(|hists| {
                let at = hists.partition_point(|b| b.bucket < bucket);
                if hists.get(at).is_none_or(|b| b.bucket != bucket) {
                    hists.insert(at, HistBucket::new(bucket));
                }
                let Some(b) = hists.get_mut(at) else {
                    return Err(None);
                };
                if b.last_t().is_none_or(|l| l < t) {
                    return match append_to_chunks(&mut b.chunks, t, h) {
                        Ok(()) => Ok(true),
                        Err(AppendError::Malformed(why)) => {
                            Err(Some(Rejection::InvalidHistogram { t, why }))
                        }
                        // `append_to_chunks` starts a new chunk itself.
                        Err(AppendError::NeedsNewChunk(_)) => Err(None),
                    };
                }
                if let Some(held) = b.at(t) {
                    return if same_histogram(&held, h) {
                        Ok(false)
                    } else {
                        Err(Some(Rejection::ConflictingHistogram { t }))
                    };
                }
                match window {
                    None => Err(Some(Rejection::OutOfOrder {
                        t,
                        last_t: b.last_t().unwrap_or(i64::MIN),
                    })),
                    Some(from) if t < from => {
                        Err(Some(Rejection::OutsideWindow { t, min_t: from }))
                    }
                    Some(_) => {
                        let i = b.ooo.partition_point(|(st, _)| *st < t);
                        b.ooo.insert(i, (t, h.clone()));
                        Ok(true)
                    }
                }
            });
            // A bucket made for a sample that was refused holds nothing.
            st.extras.with_hists(|hists| {
                hists.retain(|b| !b.chunks.is_empty() || !b.ooo.is_empty());
            });
            match kept {
                Ok(true) => {
                    out.appended += 1;
                    accepted(t, h, bucket);
                }
                Ok(false) => out.duplicates += 1,
                Err(Some(r)) => out.reject(r),
                Err(None) => {}
            }
        }
        if !was_active && st.has_data() {
            self.active
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        out
    }

    /// The histogram samples in `[mint, maxt]` of the buckets `holds`
    /// accepts, ascending, in float form.
    pub(crate) fn read_histograms(
        &self,
        mint: i64,
        maxt: i64,
        holds: impl Fn(i64) -> bool,
    ) -> Vec<(i64, FloatHistogram)> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for b in st.extras.hists().iter().filter(|b| holds(b.bucket)) {
            b.read(mint, maxt, &mut out);
        }
        out
    }

    /// Whether the head holds histogram samples in `[mint, maxt]` of the
    /// buckets `holds` accepts.
    pub(crate) fn histograms_overlap(
        &self,
        mint: i64,
        maxt: i64,
        holds: impl Fn(i64) -> bool,
    ) -> bool {
        let st = self.state.lock();
        st.extras.hists().iter().any(|b| {
            holds(b.bucket)
                && b.first_t().is_some_and(|f| f <= maxt)
                && b.chunks
                    .last()
                    .and_then(AnyHistogramChunk::last_t)
                    .into_iter()
                    .chain(b.ooo.last().map(|(t, _)| *t))
                    .max()
                    .is_some_and(|l| l >= mint)
        })
    }

    /// The encoded chunk list of the series' histograms of `bucket`, for
    /// its seal; `None` when it has none there.
    pub(crate) fn seal_histograms(&self, bucket: i64) -> Option<Vec<u8>> {
        let st = self.state.lock();
        st.extras
            .hists()
            .iter()
            .find(|b| b.bucket == bucket)
            .map(HistBucket::encoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head::Head;
    use strata_codec::histogram::{Histogram, Span};
    use strata_codec::Label;

    fn h(count: u64) -> HistogramSample {
        HistogramSample::Int(Histogram {
            schema: 0,
            count,
            sum: count as f64,
            positive_spans: vec![Span::new(0, 1)],
            positive_buckets: vec![count as i64],
            ..Histogram::default()
        })
    }

    fn policy(late_from: Option<i64>) -> AppendPolicy {
        AppendPolicy {
            first_open: 1,
            bucket_ms: 1_000,
            late_from,
            keep_late: true,
            replay: false,
        }
    }

    fn series() -> std::sync::Arc<MemSeries> {
        let head = Head::new(1, None);
        head.get_or_create(&vec![Label::new("__name__", "h")]).0
    }

    #[test]
    fn in_order_out_of_order_duplicates_and_conflicts() {
        let s = series();
        let mut late = Vec::new();
        let out = s.append_histograms(
            &[
                (1_100, h(1)),
                (1_300, h(3)),
                (1_200, h(2)),
                (1_300, h(3)),
                (1_300, h(4)),
                (500, h(9)),
            ],
            &policy(Some(0)),
            |t, _, b| {
                if b < 1 {
                    late.push(t);
                }
            },
        );
        assert_eq!((out.appended, out.duplicates, out.rejected), (4, 1, 1));
        assert_eq!(
            out.first_rejection,
            Some(Rejection::ConflictingHistogram { t: 1_300 })
        );
        // The sealed bucket's sample went to the caller only.
        assert_eq!(late, vec![500]);
        let got = s.read_histograms(0, 5_000, |b| b >= 1);
        let ts: Vec<i64> = got.iter().map(|(t, _)| *t).collect();
        assert_eq!(ts, vec![1_100, 1_200, 1_300]);
        let counts: Vec<f64> = got.iter().map(|(_, h)| h.count).collect();
        assert_eq!(counts, vec![1.0, 2.0, 3.0]);
        assert!(s.is_active());

        // The seal writes the three in order, the out-of-order one merged.
        let bytes = s.seal_histograms(1).unwrap();
        let back = strata_codec::histogram::decode_chunk_list(&bytes).unwrap();
        assert_eq!(back.iter().map(|(t, _)| *t).collect::<Vec<_>>(), ts);
        s.drop_through(1);
        assert!(s.read_histograms(0, 5_000, |_| true).is_empty());
        assert!(!s.is_active());
    }

    #[test]
    fn out_of_order_without_a_window_is_refused() {
        let s = series();
        let out = s.append_histograms(&[(1_300, h(3)), (1_200, h(2))], &policy(None), |_, _, _| {});
        assert_eq!((out.appended, out.rejected), (1, 1));
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::OutOfOrder { t: 1_200, .. })
        ));
        let out = s.append_histograms(&[(500, h(3))], &policy(None), |_, _, _| {});
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::TooOld { t: 500, .. })
        ));
    }
}
