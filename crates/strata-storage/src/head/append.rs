//! Appending samples to a series, with Prometheus' ordering rules.

use std::fmt;

use super::chunk::HeadChunk;
use super::extra::{ExtraRun, Taken};
use super::series::MemSeries;

/// Why a sample was not stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// Older than the series' newest sample.
    OutOfOrder { t: i64, last_t: i64 },
    /// Same timestamp as the newest sample, different value.
    Conflicting { t: i64, value: f64, existing: f64 },
    /// Its bucket is already sealed (or being sealed).
    TooOld { t: i64, open_from_ms: i64 },
    /// Out of order or in a sealed bucket, and older than the window
    /// allows (`storage.out_of_order_window`, at most the retention).
    OutsideWindow { t: i64, min_t: i64 },
    /// A new (or inactive) series while its tenant has this many active
    /// series.
    ActiveSeriesLimit { limit: usize },
    /// A native histogram at a timestamp already held with another one.
    ConflictingHistogram { t: i64 },
    /// A native histogram whose spans and buckets disagree.
    InvalidHistogram { t: i64, why: &'static str },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfOrder { t, last_t } => write!(
                f,
                "out of order sample: timestamp {t} is older than the series' last sample at {last_t}"
            ),
            Self::Conflicting { t, value, existing } => write!(
                f,
                "duplicate sample for timestamp {t} with a different value: {value} (stored: {existing})"
            ),
            Self::TooOld { t, open_from_ms } => write!(
                f,
                "sample too old: timestamp {t} is in a sealed bucket (samples must be at or after {open_from_ms})"
            ),
            Self::OutsideWindow { t, min_t } => write!(
                f,
                "sample too old: timestamp {t} is out of order or in a sealed bucket, and before {min_t} (now minus storage.out_of_order_window, at most the retention)"
            ),
            Self::ConflictingHistogram { t } => write!(
                f,
                "duplicate sample for timestamp {t}: a different native histogram is stored there"
            ),
            Self::InvalidHistogram { t, why } => {
                write!(f, "invalid native histogram at timestamp {t}: {why}")
            }
            Self::ActiveSeriesLimit { limit } => write!(
                f,
                "active series limit of {limit} reached (limits.max_active_series): new series are rejected; existing series keep ingesting"
            ),
        }
    }
}

/// What became of the samples of one series in one request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AppendOutcome {
    pub appended: usize,
    pub duplicates: usize,
    pub rejected: usize,
    pub first_rejection: Option<Rejection>,
    /// Of the appended samples, those kept beside the in-order chunks (out
    /// of order, or in a sealed bucket).
    pub extra: usize,
    /// Nothing was appended: the head had dropped the series (see
    /// [`super::delta::Head::revive`]).
    pub series_dropped: bool,
    /// The bucket of a chunk that takes no more samples in order since
    /// this append opened a later bucket's after it: the writer closes it
    /// at once (see [`super::delta::Head::close_ended_chunk`]).
    pub ended: Option<i64>,
}

impl AppendOutcome {
    pub(super) fn reject(&mut self, r: Rejection) {
        self.rejected += 1;
        if self.first_rejection.is_none() {
            self.first_rejection = Some(r);
        }
    }
}

/// What a series accepts.
#[derive(Clone, Copy, Debug)]
pub struct AppendPolicy {
    /// Buckets before this one are sealed (or being sealed).
    pub first_open: i64,
    pub bucket_ms: i64,
    /// Out-of-order samples, and samples of sealed buckets, at or after
    /// this time are kept; `None` rejects them all (a window of 0).
    pub late_from: Option<i64>,
    /// Whether samples of sealed buckets are kept (a writer) or skipped
    /// without a word (a reader node replaying the log: the writer writes
    /// them to the store, where the reader reads them).
    pub keep_late: bool,
    /// Replaying the log: samples a spilled segment already holds are
    /// skipped (see `HeadChunk::replayed_spilled`), in order as they were
    /// written.
    pub replay: bool,
}

impl AppendPolicy {
    /// Prometheus' rules: in order only, nothing in a sealed bucket.
    pub fn strict(first_open: i64, bucket_ms: i64) -> Self {
        Self {
            first_open,
            bucket_ms,
            late_from: None,
            keep_late: true,
            replay: false,
        }
    }
}

/// A stored sample at a timestamp, as its value's bits.
fn stored_at(
    st: &super::series::SeriesState,
    bucket: i64,
    t: i64,
    decoded: &mut Option<(i64, Vec<(i64, u64)>)>,
) -> Option<u64> {
    if let Some(v) = st
        .extras
        .iter()
        .filter(|r| r.bucket == bucket)
        .find_map(|r| r.value_at(t))
    {
        return Some(v.to_bits());
    }
    if decoded.as_ref().is_none_or(|(b, _)| *b != bucket) {
        let samples = st
            .chunks
            .iter()
            .find(|(b, _)| *b == bucket)
            .map(|(_, c)| {
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                // Written here: an error would be a bug, and the samples
                // before it are still right.
                let _ = c.decode_into(&mut ts, &mut vs);
                ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
            })
            .unwrap_or_default();
        *decoded = Some((bucket, samples));
    }
    let (_, samples) = decoded.as_ref()?;
    let i = samples.binary_search_by_key(&t, |&(st, _)| st).ok()?;
    samples.get(i).map(|&(_, bits)| bits)
}

impl MemSeries {
    /// Appends samples. In order, each goes to its bucket's chunk; an
    /// older one (out of order, or in a sealed bucket) is kept beside the
    /// chunks if `policy` allows it. A timestamp already held with the same
    /// value is a duplicate, with another value a conflict. Calls
    /// `accepted(t, v, bucket)` for each sample kept, so the caller can log
    /// it.
    pub fn append(
        &self,
        samples: &[(i64, f64)],
        policy: &AppendPolicy,
        mut accepted: impl FnMut(i64, f64, i64),
    ) -> AppendOutcome {
        let mut out = AppendOutcome::default();
        let mut guard = self.state.lock();
        let st = &mut *guard;
        // Under the state lock, as the head sets it.
        if self.dropped.load(std::sync::atomic::Ordering::Relaxed) {
            out.series_dropped = true;
            return out;
        }
        // The head samples of one bucket, decoded once when a request
        // re-sends older samples (a client retrying after an error).
        let mut older: Option<(i64, Vec<(i64, u64)>)> = None;
        let bucket_ms = policy.bucket_ms;
        for &(t, v) in samples {
            let bucket = t.div_euclid(bucket_ms);
            let sealed = bucket < policy.first_open;
            // Replaying the log: a sample that was in order when first
            // written (after the series' last, as replayed so far) and that
            // a spilled segment holds is skipped, and is the series' last
            // sample, as it was then.
            if policy.replay && !sealed && t > st.last_t {
                let spilled = st
                    .chunks
                    .iter()
                    .find(|(b, _)| *b == bucket)
                    .is_some_and(|(_, c)| c.replayed_spilled(t));
                if spilled {
                    st.last_t = t;
                    st.last_v_bits = v.to_bits();
                    continue;
                }
            }
            if t > st.last_t && !sealed {
                let chunk = match st.chunks.last_mut() {
                    Some((b, c)) if *b == bucket => c,
                    _ => {
                        // Usually a new last chunk; in a replay, a later
                        // bucket's may be there already (restored from
                        // its spilled segments), so in bucket order.
                        let at = st.chunks.partition_point(|(b, _)| *b < bucket);
                        if st.chunks.get(at).is_none_or(|(b, _)| *b != bucket) {
                            if !st.has_data() {
                                self.active
                                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            super::alloc::room_for_one(&mut st.chunks);
                            st.chunks.insert(at, (bucket, HeadChunk::default()));
                            if at + 1 == st.chunks.len() {
                                if let Some(&(before, _)) =
                                    at.checked_sub(1).and_then(|i| st.chunks.get(i))
                                {
                                    out.ended = Some(before);
                                }
                            }
                        }
                        match st.chunks.get_mut(at) {
                            Some((_, c)) => c,
                            None => continue,
                        }
                    }
                };
                chunk.append(t, v);
                st.last_t = t;
                st.last_v_bits = v.to_bits();
                out.appended += 1;
                accepted(t, v, bucket);
                continue;
            }
            if t == st.last_t {
                if v.to_bits() == st.last_v_bits {
                    out.duplicates += 1;
                } else {
                    out.reject(Rejection::Conflicting {
                        t,
                        value: v,
                        existing: f64::from_bits(st.last_v_bits),
                    });
                }
                continue;
            }
            if let Some(bits) = stored_at(st, bucket, t, &mut older) {
                if bits == v.to_bits() {
                    out.duplicates += 1;
                } else {
                    out.reject(Rejection::Conflicting {
                        t,
                        value: v,
                        existing: f64::from_bits(bits),
                    });
                }
                continue;
            }
            let Some(late_from) = policy.late_from else {
                out.reject(if sealed {
                    Rejection::TooOld {
                        t,
                        open_from_ms: policy.first_open.saturating_mul(bucket_ms),
                    }
                } else {
                    Rejection::OutOfOrder {
                        t,
                        last_t: st.last_t,
                    }
                });
                continue;
            };
            if t < late_from {
                out.reject(Rejection::OutsideWindow {
                    t,
                    min_t: late_from,
                });
                continue;
            }
            if sealed && !policy.keep_late {
                continue;
            }
            if !sealed {
                // In order within its own bucket: the bucket's chunk takes
                // it (a series may run ahead in a later bucket).
                let at = st.chunks.partition_point(|(b, _)| *b < bucket);
                match st.chunks.get_mut(at) {
                    Some((b, c)) if *b == bucket => {
                        if c.last_t().is_none_or(|l| l < t) {
                            c.append(t, v);
                            if older.as_ref().is_some_and(|(b, _)| *b == bucket) {
                                older = None;
                            }
                            out.appended += 1;
                            accepted(t, v, bucket);
                            continue;
                        }
                    }
                    _ => {
                        if !st.has_data() {
                            self.active
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        let mut c = HeadChunk::default();
                        c.append(t, v);
                        super::alloc::room_for_one(&mut st.chunks);
                        st.chunks.insert(at, (bucket, c));
                        out.appended += 1;
                        accepted(t, v, bucket);
                        continue;
                    }
                }
            }
            let run = match st
                .extras
                .iter()
                .position(|r| r.bucket == bucket && r.taken == Taken::No)
            {
                Some(i) => i,
                None => {
                    st.extras.push(ExtraRun::new(bucket));
                    st.extras.len() - 1
                }
            };
            if let Some(r) = st.extras.get_mut(run) {
                r.insert(t, v);
                out.appended += 1;
                out.extra += 1;
                accepted(t, v, bucket);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::Head;
    use super::*;
    use strata_codec::Label;

    #[test]
    fn ordering_rules() {
        let head = Head::new(1, None);
        let (s, _) = head.get_or_create(&vec![Label::new("__name__", "m")]);
        let mut logged = Vec::new();
        let out = s.append(
            &[
                (1000, 1.0),
                (2000, 2.0),
                (2000, 2.0),
                (1500, 9.0),
                (2000, 3.0),
                (3000, f64::NAN),
            ],
            &AppendPolicy::strict(0, 3_600_000),
            |t, _, _| logged.push(t),
        );
        assert_eq!(out.appended, 3);
        assert_eq!(out.duplicates, 1);
        assert_eq!(out.rejected, 2);
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::OutOfOrder {
                t: 1500,
                last_t: 2000
            })
        ));
        assert_eq!(logged, vec![1000, 2000, 3000]);
        // A retried request: older samples already stored are duplicates;
        // another value at a stored timestamp conflicts.
        let out = s.append(
            &[
                (1000, 1.0),
                (2000, 2.0),
                (1000, 5.0),
                (1500, 9.0),
                (3000, f64::NAN),
            ],
            &AppendPolicy::strict(0, 3_600_000),
            |_, _, _| panic!("nothing new"),
        );
        assert_eq!((out.duplicates, out.rejected), (3, 2), "{out:?}");
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::Conflicting { t: 1000, .. })
        ));
        let out = s.append(
            &[(3000, f64::NAN)],
            &AppendPolicy::strict(0, 3_600_000),
            |_, _, _| {},
        );
        assert_eq!(out.duplicates, 1, "same NaN bits is a duplicate");
    }

    #[test]
    fn sealed_buckets_reject() {
        let head = Head::new(1, None);
        let (s, _) = head.get_or_create(&vec![Label::new("__name__", "m")]);
        let out = s.append(
            &[(10, 1.0), (3_600_000, 2.0)],
            &AppendPolicy::strict(1, 3_600_000),
            |_, _, _| {},
        );
        assert_eq!(out.appended, 1);
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::TooOld { .. })
        ));
    }

    fn read_all(s: &MemSeries) -> Vec<(i64, f64)> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let st = s.state.lock();
        for (_, c) in &st.chunks {
            c.decode_into(&mut ts, &mut vs).unwrap();
        }
        let (ets, evs) = super::super::extra::merged(st.extras.iter(), i64::MIN, i64::MAX);
        let mut all: Vec<(i64, f64)> = ts.into_iter().zip(vs).collect();
        all.extend(ets.into_iter().zip(evs));
        all.sort_by_key(|&(t, _)| t);
        all
    }

    #[test]
    fn out_of_order_and_late_samples_within_the_window() {
        let head = Head::new(1, None);
        let (s, _) = head.get_or_create(&vec![Label::new("__name__", "m")]);
        let hour = 3_600_000;
        let policy = AppendPolicy {
            first_open: 2,
            bucket_ms: hour,
            late_from: Some(hour / 2),
            keep_late: true,
            replay: false,
        };
        let mut logged = Vec::new();
        // In order in bucket 3, then back into bucket 2 (open, no chunk
        // yet: in order there), older in bucket 3 (out of order), into
        // sealed bucket 1 (late), and before the window.
        let out = s.append(
            &[
                (3 * hour + 10, 1.0),
                (3 * hour + 20, 2.0),
                (2 * hour + 5, 3.0),
                (2 * hour + 7, 4.0),
                (3 * hour + 15, 5.0),
                (2 * hour + 6, 6.0),
                (hour + 1, 7.0),
                (hour + 1, 7.0),
                (hour + 1, 8.0),
                (3 * hour + 15, 5.0),
                (3 * hour + 15, 9.0),
                (10, 10.0),
            ],
            &policy,
            |t, _, b| logged.push((t, b)),
        );
        assert_eq!(out.appended, 7, "{out:?}");
        assert_eq!(out.extra, 3, "{out:?}");
        assert_eq!(out.duplicates, 2, "{out:?}");
        assert_eq!(out.rejected, 3, "{out:?}");
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::Conflicting { t, .. }) if t == hour + 1
        ));
        assert_eq!(logged.len(), 7);
        assert_eq!(
            read_all(&s),
            vec![
                (hour + 1, 7.0),
                (2 * hour + 5, 3.0),
                (2 * hour + 6, 6.0),
                (2 * hour + 7, 4.0),
                (3 * hour + 10, 1.0),
                (3 * hour + 15, 5.0),
                (3 * hour + 20, 2.0),
            ]
        );
        // A reader node skips the sealed bucket's samples without a word.
        let reader = AppendPolicy {
            keep_late: false,
            ..policy
        };
        let out = s.append(&[(hour + 2, 1.0)], &reader, |_, _, _| panic!("skipped"));
        assert_eq!(out, AppendOutcome::default());
    }
}
