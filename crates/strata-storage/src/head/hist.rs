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
    append_to_chunks, AnyHistogramChunk, AppendError, FloatHistogram, HistogramSample,
};

use super::append::{AppendOutcome, AppendPolicy, Rejection};
use super::series::MemSeries;

use super::hist_bucket::{same_histogram, HistBucket};

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
