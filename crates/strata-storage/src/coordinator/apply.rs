//! A group of write requests applied to the head, in order: each series'
//! samples, native histograms and exemplars appended, the log record
//! filled with what was kept, and each request's outcome counted.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use strata_codec::histogram::HistogramSample;
use strata_codec::render::render_labels;
use strata_codec::{
    Exemplar, LabelPairs, LogExemplar, LogHistogram, LogRecord, LogSample, NewSeries,
};

use super::{Queued, ResolvedSeries, WriteOutcome};
use crate::head::{AppendOutcome, AppendPolicy, ExemplarAdded, MemSeries, Rejection};
use crate::shared::Shared;

/// The buckets a group wrote into, for its log write.
#[derive(Default)]
pub(super) struct Buckets {
    /// Open buckets the group wrote into: the log record's seq is the
    /// first of each not open before.
    pub(super) touched: Vec<i64>,
    /// Histograms of buckets sealed or being sealed, by bucket and
    /// series: written with the log record.
    pub(super) late_histograms: BTreeMap<(i64, u64), Vec<(i64, HistogramSample)>>,
    /// Exemplars of buckets whose seal is done or under way, by bucket and
    /// series: written with the log record.
    pub(super) late_exemplars: BTreeMap<(i64, u64), Vec<Exemplar>>,
}

/// A group being applied: the policy its samples are appended under, the
/// log record it fills, and what it gathers beside the record.
struct GroupApply<'a> {
    inner: &'a Shared,
    record: &'a mut LogRecord,
    policy: AppendPolicy,
    /// The first open bucket's start: exemplars before it are late.
    open_from: i64,
    /// How far back an exemplar is kept from a series' newest.
    exemplar_window: i64,
    /// Samples appended beside the in-order chunks.
    extra: usize,
    buckets: Buckets,
}

/// Applies `group` to the head in order, the buckets up to
/// `frozen_through` taking no more samples in order, and fills `record`
/// (cleared first) with what it kept. Returns each request's outcome, in
/// the group's order, and the buckets it wrote into.
pub(super) fn apply_group(
    inner: &Shared,
    record: &mut LogRecord,
    frozen_through: i64,
    group: &[Queued],
) -> (Vec<WriteOutcome>, Buckets) {
    let first_open = frozen_through.saturating_add(1);
    let bucket_ms = inner.settings.bucket_ms();
    let now = inner.clock.now_ms();
    let policy = AppendPolicy {
        first_open,
        bucket_ms,
        late_from: inner.settings.late_from(now),
        keep_late: true,
        replay: false,
    };
    record.new_series.clear();
    record.samples.clear();
    record.exemplars.clear();
    record.histograms.clear();
    let mut apply = GroupApply {
        inner,
        record,
        policy,
        open_from: first_open.saturating_mul(bucket_ms),
        exemplar_window: inner.settings.late_window_ms().unwrap_or(0),
        extra: 0,
        buckets: Buckets::default(),
    };
    let mut outcomes = Vec::with_capacity(group.len());
    for q in group {
        let mut out = WriteOutcome {
            new_series: q.new_series,
            ..WriteOutcome::default()
        };
        for rs in &q.series {
            let given = q.samples.get(rs.samples.clone()).unwrap_or_default();
            apply.series(rs, given, &mut out);
        }
        outcomes.push(out);
    }
    if apply.extra > 0 {
        inner.head.extra_added(apply.extra);
        if let Some(writer) = inner.writing() {
            writer.late.note_added(inner.head.extra_samples());
        }
    }
    (outcomes, apply.buckets)
}

impl GroupApply<'_> {
    /// Applies one series of a request (its samples, then its histograms,
    /// then its exemplars), logs its labels the first time it logs
    /// anything, and adds to the request's outcome.
    fn series(&mut self, rs: &ResolvedSeries, given: &[(i64, f64)], out: &mut WriteOutcome) {
        let mut s = Arc::clone(&rs.series);
        let samples_before = self.record.samples.len();
        let r = self.samples(&mut s, given);
        let histograms_before = self.record.histograms.len();
        if !rs.histograms.is_empty() {
            self.histograms(&mut s, &rs.histograms, out);
        }
        let exemplars_before = self.record.exemplars.len();
        self.exemplars(&s, &rs.exemplars, out);
        let logs_series = self.record.samples.len() > samples_before
            || self.record.exemplars.len() > exemplars_before
            || self.record.histograms.len() > histograms_before;
        if logs_series && !s.logged.swap(true, Ordering::AcqRel) {
            self.record.new_series.push(NewSeries {
                id: s.id,
                labels: s.labels.to_labels(),
            });
        }
        out.appended += r.appended;
        out.duplicates += r.duplicates;
        out.rejected += r.rejected;
        note_first_rejection(out, &s, r.first_rejection);
    }

    /// Appends the series' samples, logging each one kept, and closes the
    /// chunk of a bucket they ended. `s` becomes the series the head
    /// revives if a seal dropped it.
    fn samples(&mut self, s: &mut Arc<MemSeries>, given: &[(i64, f64)]) -> AppendOutcome {
        let (policy, touched) = (&self.policy, &mut self.buckets.touched);
        let first_open = policy.first_open;
        let mut append = |s: &MemSeries, samples: &mut Vec<LogSample>| {
            s.append(given, policy, |t, v, b| {
                samples.push(LogSample { series: s.id, t, v });
                // Sealed buckets stay sealed: their samples are kept
                // apart and written by the late pass.
                if b >= first_open && touched.last() != Some(&b) {
                    touched.push(b);
                }
            })
        };
        let samples = &mut self.record.samples;
        let mut r = append(s, samples);
        if r.series_dropped {
            // A seal dropped it after the request resolved it.
            *s = self.inner.head.revive(s);
            r = append(s, samples);
        }
        if let Some(ended) = r.ended {
            self.inner.head.close_ended_chunk(s, ended);
        }
        self.extra += r.extra;
        r
    }

    /// Appends the series' native histograms, logging each one kept; those
    /// of sealed buckets go with the log record too. `s` becomes the
    /// series the head revives if a seal dropped it.
    fn histograms(
        &mut self,
        s: &mut Arc<MemSeries>,
        given: &[(i64, HistogramSample)],
        out: &mut WriteOutcome,
    ) {
        let (policy, buckets) = (&self.policy, &mut self.buckets);
        let first_open = policy.first_open;
        let mut append = |s: &MemSeries, logged: &mut Vec<LogHistogram>| {
            s.append_histograms(given, policy, |t, h, b| {
                logged.push(LogHistogram {
                    series: s.id,
                    t,
                    h: h.clone(),
                });
                if b < first_open {
                    buckets
                        .late_histograms
                        .entry((b, s.id))
                        .or_default()
                        .push((t, h.clone()));
                } else if !buckets.touched.contains(&b) {
                    buckets.touched.push(b);
                }
            })
        };
        let mut h = append(s, &mut self.record.histograms);
        if h.series_dropped {
            *s = self.inner.head.revive(s);
            h = append(s, &mut self.record.histograms);
        }
        if h.appended > 0 {
            self.inner.head.note_histograms();
        }
        out.histograms += h.appended + h.duplicates;
        out.rejected += h.rejected;
        note_first_rejection(out, s, h.first_rejection);
    }

    /// Adds the series' exemplars to the head's store, logging each one
    /// stored; those of buckets whose seal is done or under way go with
    /// the log record too.
    fn exemplars(&mut self, s: &MemSeries, given: &[Exemplar], out: &mut WriteOutcome) {
        for e in given {
            // Older than samples may be: it would expire at once.
            let added = if self.policy.late_from.is_some_and(|from| e.t < from) {
                ExemplarAdded::OutOfOrder
            } else {
                self.inner
                    .head
                    .exemplars()
                    .add(s.id, e, self.exemplar_window)
            };
            match added {
                ExemplarAdded::Stored => {
                    out.exemplars += 1;
                    self.record.exemplars.push(LogExemplar {
                        series: s.id,
                        exemplar: e.clone(),
                    });
                    let b = e.t.div_euclid(self.policy.bucket_ms);
                    if e.t < self.open_from {
                        // The seal of its bucket is done or under way:
                        // written with the log record.
                        self.buckets
                            .late_exemplars
                            .entry((b, s.id))
                            .or_default()
                            .push(e.clone());
                    } else if !self.buckets.touched.contains(&b) {
                        self.buckets.touched.push(b);
                    }
                }
                ExemplarAdded::Duplicate => out.exemplars += 1,
                ExemplarAdded::OutOfOrder | ExemplarAdded::Disabled => {
                    out.exemplars_refused += 1;
                }
            }
        }
    }
}

/// Keeps `rejection` as the request's first, with its series' labels, if
/// it has none yet.
fn note_first_rejection(out: &mut WriteOutcome, s: &MemSeries, rejection: Option<Rejection>) {
    if out.first_rejection.is_none() {
        if let Some(rej) = rejection {
            out.first_rejection = Some((render_labels(&s.labels), rej));
        }
    }
}
