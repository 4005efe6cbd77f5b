//! Appending samples to a series, with Prometheus' ordering rules.

use std::fmt;

use super::{HeadChunk, MemSeries};

/// Why a sample was not stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// Older than the series' newest sample.
    OutOfOrder { t: i64, last_t: i64 },
    /// Same timestamp as the newest sample, different value.
    Conflicting { t: i64, value: f64, existing: f64 },
    /// Its bucket is already sealed (or being sealed).
    TooOld { t: i64, open_from_ms: i64 },
    /// Further in the future than the limit allows.
    TooFarInFuture { t: i64, max_t: i64 },
    /// A new (or inactive) series while its tenant has this many active
    /// series.
    ActiveSeriesLimit { limit: usize },
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
            Self::TooFarInFuture { t, max_t } => write!(
                f,
                "sample too far in the future: timestamp {t} is after {max_t} (now plus limits.max_future)"
            ),
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
}

impl AppendOutcome {
    fn reject(&mut self, r: Rejection) {
        self.rejected += 1;
        if self.first_rejection.is_none() {
            self.first_rejection = Some(r);
        }
    }
}

impl MemSeries {
    /// Appends samples in order. Samples in buckets before `first_open` are
    /// too old. Calls `accepted(t, v, bucket)` for each appended sample so
    /// the caller can log it.
    pub fn append(
        &self,
        samples: &[(i64, f64)],
        first_open: i64,
        bucket_ms: i64,
        mut accepted: impl FnMut(i64, f64, i64),
    ) -> AppendOutcome {
        let mut out = AppendOutcome::default();
        let mut st = self.state.lock();
        // The head samples of one bucket, decoded once when a request
        // re-sends older samples (a client retrying after an error).
        let mut older: Option<(i64, Vec<(i64, u64)>)> = None;
        for &(t, v) in samples {
            if t <= st.last_t {
                if t < st.last_t {
                    let bucket = t.div_euclid(bucket_ms);
                    if older.as_ref().is_none_or(|(b, _)| *b != bucket) {
                        let decoded = st
                            .chunks
                            .iter()
                            .find(|(b, _)| *b == bucket)
                            .map(|(_, c)| {
                                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                                // Written here: an error would be a bug, and
                                // the samples before it are still right.
                                let _ = c.decode_into(&mut ts, &mut vs);
                                ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
                            })
                            .unwrap_or_default();
                        older = Some((bucket, decoded));
                    }
                    let stored = older.as_ref().and_then(|(_, samples)| {
                        samples
                            .binary_search_by_key(&t, |&(st, _)| st)
                            .ok()
                            .and_then(|i| samples.get(i))
                    });
                    match stored {
                        Some(&(_, bits)) if bits == v.to_bits() => out.duplicates += 1,
                        Some(&(_, bits)) => out.reject(Rejection::Conflicting {
                            t,
                            value: v,
                            existing: f64::from_bits(bits),
                        }),
                        None => out.reject(Rejection::OutOfOrder {
                            t,
                            last_t: st.last_t,
                        }),
                    }
                } else if v.to_bits() == st.last_v_bits {
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
            let bucket = t.div_euclid(bucket_ms);
            if bucket < first_open {
                out.reject(Rejection::TooOld {
                    t,
                    open_from_ms: first_open.saturating_mul(bucket_ms),
                });
                continue;
            }
            let chunk = match st.chunks.last_mut() {
                Some((b, c)) if *b == bucket => c,
                _ => {
                    if st.chunks.is_empty() {
                        self.active
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    st.chunks.push((bucket, HeadChunk::default()));
                    match st.chunks.last_mut() {
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
        let (s, _) = head.get_or_create(&vec![Label::new("__name__", "m")], 0);
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
            0,
            3_600_000,
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
            0,
            3_600_000,
            |_, _, _| panic!("nothing new"),
        );
        assert_eq!((out.duplicates, out.rejected), (3, 2), "{out:?}");
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::Conflicting { t: 1000, .. })
        ));
        let out = s.append(&[(3000, f64::NAN)], 0, 3_600_000, |_, _, _| {});
        assert_eq!(out.duplicates, 1, "same NaN bits is a duplicate");
    }

    #[test]
    fn sealed_buckets_reject() {
        let head = Head::new(1, None);
        let (s, _) = head.get_or_create(&vec![Label::new("__name__", "m")], 0);
        let out = s.append(&[(10, 1.0), (3_600_000, 2.0)], 1, 3_600_000, |_, _, _| {});
        assert_eq!(out.appended, 1);
        assert!(matches!(
            out.first_rejection,
            Some(Rejection::TooOld { .. })
        ));
    }
}
