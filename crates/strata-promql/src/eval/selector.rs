//! Vector and matrix selectors over the data loaded before evaluation.
//!
//! A vector selector takes, at each step, the newest sample in
//! `(ref - lookback, ref]` where `ref` is the step (or the `@` time) minus
//! the offset; a stale marker as that newest sample means "no value". A
//! range selector takes every non-stale sample in `(ref - range, ref]`.

use std::borrow::Cow;

use promql_parser::parser::{MatrixSelector, VectorSelector};
use strata_codec::threads::available as available_threads;

use super::range_steps::{skip_to, PointSink};
use super::{duration_ms, offset_ms, selector_key, Evaluator, Result};
use crate::error::QueryError;
use crate::range_modifier::{self, RangeMode};
use crate::source::Series;
use crate::value::{
    drop_metric_name, is_metadata_label, is_stale_nan, labels_without, HPoint, Labels, Matrix,
    MatrixSeries, Point, Samples,
};

impl<'a> Evaluator<'a> {
    /// What was loaded for `vs`.
    fn loaded(&self, vs: &VectorSelector) -> Result<&'a super::Loaded> {
        let data: &'a super::SelectorData = self.data;
        data.get(&selector_key(vs))
            .ok_or_else(|| QueryError::Internal("selector data was not loaded".into()))
    }

    /// The series loaded for `vs`, with their samples.
    pub fn selector_series(&self, vs: &VectorSelector) -> Result<&'a [Series]> {
        let loaded = self.loaded(vs)?;
        if loaded.reduced {
            return Err(QueryError::Internal(
                "selector data was reduced as it was read, and is read whole".into(),
            ));
        }
        Ok(&loaded.series)
    }

    /// The series of `vs` reduced to their points at the query's steps as
    /// they were read, if they were.
    pub fn reduced_series(&self, vs: &VectorSelector) -> Result<Option<&'a [Series]>> {
        let loaded = self.loaded(vs)?;
        Ok(loaded.reduced.then_some(loaded.series.as_slice()))
    }

    /// The reference time of step `ts` for a selector with these modifiers.
    pub fn reference_time(&self, ts: i64, at: Option<i64>, offset: i64) -> i64 {
        at.unwrap_or(ts).saturating_sub(offset)
    }

    pub fn eval_vector_selector(&mut self, vs: &VectorSelector) -> Result<Matrix> {
        if range_modifier::mode(vs) == RangeMode::Smoothed {
            return self.eval_smoothed_selector(vs);
        }
        self.vector_selector_points(vs, false)
    }

    /// Evaluates a vector selector; with `timestamps`, each point carries the
    /// sample's own timestamp in seconds instead of its value (what
    /// `timestamp(selector)` returns).
    pub fn vector_selector_points(
        &mut self,
        vs: &VectorSelector,
        timestamps: bool,
    ) -> Result<Matrix> {
        let at = self.at_ms(&vs.at);
        let offset = offset_ms(&vs.offset);
        let reduced = if timestamps {
            None
        } else {
            self.reduced_series(vs)?
        };
        let mut out = Vec::new();
        let mut count = 0usize;
        if let Some(series) = reduced {
            self.add_samples(series.iter().map(|s| s.timestamps.len()).sum())?;
            return Ok(reduced_matrix(series, |s| s.labels.clone()));
        }
        for s in self.selector_series(vs)? {
            self.check_deadline()?;
            let (points, histograms) = if s.histograms.is_empty() {
                let points: Vec<Point> =
                    instant_points(s, self.steps(), at, offset, self.lookback, timestamps);
                (points, Vec::new())
            } else {
                instant_points_mixed(s, self.steps(), at, offset, self.lookback, timestamps)
            };
            if !points.is_empty() || !histograms.is_empty() {
                count += points.len() + histograms.len();
                out.push(MatrixSeries {
                    labels: s.labels.clone(),
                    points,
                    histograms,
                });
            }
        }
        self.add_samples(count)?;
        Ok(out)
    }

    /// A range selector evaluated on its own: only valid in an instant query,
    /// where it returns the raw samples of its window.
    pub fn eval_matrix_selector(&mut self, ms: &MatrixSelector) -> Result<Matrix> {
        if self.start != self.end {
            return Err(QueryError::exec(
                "cannot do range evaluation of matrix selector",
            ));
        }
        let mode = range_modifier::mode(&ms.vs);
        if mode != RangeMode::Plain {
            return self.eval_extended_matrix_selector(ms, mode);
        }
        let input = self.range_input_from_selector(ms)?;
        let mut out = Vec::new();
        let mut count = 0;
        let r = self.reference_time(self.start, input.at, input.offset);
        for s in &input.series {
            let w = window(s.samples(), r.saturating_sub(input.range), r);
            let hw = histogram_window(&s.h, r.saturating_sub(input.range), r);
            if !w.is_empty() || !hw.is_empty() {
                count += w.len() + hw.len();
                out.push(MatrixSeries {
                    labels: s.labels.to_labels(),
                    points: w.points().collect(),
                    histograms: hw.to_vec(),
                });
            }
        }
        self.add_samples(count)?;
        Ok(out)
    }

    /// The samples a range selector reads, stale markers removed. Series
    /// without stale markers are borrowed from the loaded data, not copied.
    pub fn range_input_from_selector(&mut self, ms: &MatrixSelector) -> Result<RangeInput<'a>> {
        let vs = &ms.vs;
        let series: Vec<RangeSeries<'a>> = self
            .selector_series(vs)?
            .iter()
            .map(RangeSeries::without_stale_markers)
            .collect();
        Ok(RangeInput {
            series,
            range: duration_ms(&ms.range),
            offset: offset_ms(&vs.offset),
            at: self.at_ms(&vs.at),
            selector: Some(vs.clone()),
        })
    }
}

/// The points of an instant selector over `s` at each step of `steps`:
/// the newest sample in `(ref - lookback, ref]`, none where that is a stale
/// marker; with `timestamps`, the sample's own time in seconds instead of
/// its value.
pub(crate) fn instant_points<P: PointSink>(
    s: &Series,
    steps: impl Iterator<Item = i64>,
    at: Option<i64>,
    offset: i64,
    lookback: i64,
    timestamps: bool,
) -> P {
    let mut points = P::default();
    // Steps ascend, so each one's sample is searched from the last.
    let mut idx = 0;
    for ts in steps {
        let r = at.unwrap_or(ts).saturating_sub(offset);
        idx = skip_to(&s.timestamps, idx, r);
        if idx == 0 {
            continue;
        }
        let (Some(&t), Some(&v)) = (s.timestamps.get(idx - 1), s.values.get(idx - 1)) else {
            continue;
        };
        if t <= r.saturating_sub(lookback) || is_stale_nan(v) {
            continue;
        }
        let v = if timestamps { t as f64 / 1000.0 } else { v };
        points.push_point(ts, v);
    }
    points
}

/// [`instant_points`] of a series that has histograms: the newest sample,
/// float or histogram, at each step (a histogram's time in seconds with
/// `timestamps`).
pub(crate) fn instant_points_mixed(
    s: &Series,
    steps: impl Iterator<Item = i64>,
    at: Option<i64>,
    offset: i64,
    lookback: i64,
    timestamps: bool,
) -> (Vec<Point>, Vec<HPoint>) {
    let (mut points, mut histograms) = (Vec::new(), Vec::new());
    let hts: Vec<i64> = s.histograms.iter().map(|(t, _)| *t).collect();
    let (mut idx, mut hidx) = (0, 0);
    for ts in steps {
        let r = at.unwrap_or(ts).saturating_sub(offset);
        idx = skip_to(&s.timestamps, idx, r);
        hidx = skip_to(&hts, hidx, r);
        let float = idx
            .checked_sub(1)
            .and_then(|i| Some((*s.timestamps.get(i)?, *s.values.get(i)?)));
        let hist = hidx.checked_sub(1).and_then(|i| s.histograms.get(i));
        let newest_is_hist = match (float, hist) {
            (Some((ft, _)), Some((ht, _))) => *ht > ft,
            (None, Some(_)) => true,
            _ => false,
        };
        if newest_is_hist {
            let Some((t, h)) = hist else { continue };
            if *t <= r.saturating_sub(lookback) || h.is_stale() {
                continue;
            }
            if timestamps {
                points.push(Point {
                    t: ts,
                    v: *t as f64 / 1000.0,
                });
            } else {
                histograms.push((ts, h.clone()));
            }
        } else if let Some((t, v)) = float {
            if t <= r.saturating_sub(lookback) || is_stale_nan(v) {
                continue;
            }
            let v = if timestamps { t as f64 / 1000.0 } else { v };
            points.push(Point { t: ts, v });
        }
    }
    (points, histograms)
}

/// The histogram samples of `h` in `(mint, maxt]`.
pub(crate) fn histogram_window(h: &[HPoint], mint: i64, maxt: i64) -> &[HPoint] {
    let lo = h.partition_point(|(t, _)| *t <= mint);
    let hi = h.partition_point(|(t, _)| *t <= maxt);
    h.get(lo..hi.max(lo)).unwrap_or(&[])
}

/// A reduced series' points.
fn reduced_points(s: &Series) -> Vec<Point> {
    s.timestamps
        .iter()
        .zip(&s.values)
        .map(|(&t, &v)| Point { t, v })
        .collect()
}

/// Below this many points reduced series are made a matrix on one thread.
const PARALLEL_MIN_POINTS: usize = 100_000;

/// Reduced series as a matrix, each labelled by `labels`: on every core
/// when they are many, as the points of a day at 1-minute steps over 1,000
/// series (1.4 M, 23 MB of fresh memory) take a core tens of milliseconds.
pub(crate) fn reduced_matrix(
    series: &[Series],
    labels: impl Fn(&Series) -> Labels + Sync,
) -> Matrix {
    let convert = |part: &[Series]| -> Matrix {
        part.iter()
            .map(|s| MatrixSeries {
                labels: labels(s),
                points: reduced_points(s),
                histograms: s.histograms.clone(),
            })
            .collect()
    };
    let points: usize = series
        .iter()
        .map(|s| s.timestamps.len() + s.histograms.len())
        .sum();
    let threads = available_threads().min(series.len());
    if threads < 2 || points < PARALLEL_MIN_POINTS {
        return convert(series);
    }
    let per_thread = series.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = series
            .chunks(per_thread)
            .map(|part| scope.spawn(|| convert(part)))
            .collect();
        // A thread that panicked leaves its part out; `convert` does not
        // panic.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// The labels of a [`RangeSeries`]: those of the loaded data, borrowed
/// until the output needs its own set (usually without the metric name, so
/// a copy of the loaded set would be thrown away), or shared with an
/// evaluated series.
pub(crate) enum SeriesLabels<'a> {
    Loaded(&'a Labels),
    Shared(Labels),
}

impl SeriesLabels<'_> {
    pub fn to_labels(&self) -> Labels {
        match self {
            Self::Loaded(l) => Labels::clone(l),
            Self::Shared(l) => l.clone(),
        }
    }

    /// [`drop_metric_name`] of these labels, copying them once at most.
    pub fn without_metric_name(&self) -> Labels {
        match self {
            Self::Loaded(l) if l.iter().any(|x| is_metadata_label(&x.name)) => {
                labels_without(l, is_metadata_label)
            }
            Self::Loaded(l) => Labels::clone(l),
            Self::Shared(l) => drop_metric_name(l),
        }
    }
}

/// One series of a range vector: its samples, borrowed from the loaded
/// data when they can be used as they are.
pub(crate) struct RangeSeries<'a> {
    pub labels: SeriesLabels<'a>,
    pub t: Cow<'a, [i64]>,
    pub v: Cow<'a, [f64]>,
    /// The histogram samples, stale markers left out.
    pub h: Cow<'a, [HPoint]>,
}

impl<'a> RangeSeries<'a> {
    /// `s` with its stale markers left out (copied only if it has any).
    pub fn without_stale_markers(s: &'a Series) -> Self {
        let labels = SeriesLabels::Loaded(&s.labels);
        let h: Cow<'a, [HPoint]> = if s.histograms.iter().any(|(_, h)| h.is_stale()) {
            Cow::Owned(
                s.histograms
                    .iter()
                    .filter(|(_, h)| !h.is_stale())
                    .cloned()
                    .collect(),
            )
        } else {
            Cow::Borrowed(&s.histograms)
        };
        let n = s.timestamps.len().min(s.values.len());
        let (t, v) = (
            s.timestamps.get(..n).unwrap_or(&[]),
            s.values.get(..n).unwrap_or(&[]),
        );
        // A fold rather than `any`: without the early exit the scan is
        // vectorized, and a series usually has no stale marker.
        if !v.iter().fold(false, |found, &x| found | is_stale_nan(x)) {
            return Self {
                labels,
                t: Cow::Borrowed(t),
                v: Cow::Borrowed(v),
                h,
            };
        }
        let (t, v): (Vec<i64>, Vec<f64>) = t
            .iter()
            .zip(v)
            .filter(|(_, x)| !is_stale_nan(**x))
            .map(|(&t, &x)| (t, x))
            .unzip();
        Self {
            labels,
            t: Cow::Owned(t),
            v: Cow::Owned(v),
            h,
        }
    }

    /// A series of evaluated points (a subquery's output).
    pub fn from_points(s: MatrixSeries) -> RangeSeries<'static> {
        let (t, v) = s.points.iter().map(|p| (p.t, p.v)).unzip();
        RangeSeries {
            labels: SeriesLabels::Shared(s.labels),
            t: Cow::Owned(t),
            v: Cow::Owned(v),
            h: Cow::Owned(s.histograms),
        }
    }

    pub fn samples(&self) -> Samples<'_> {
        Samples::new(&self.t, &self.v)
    }
}

/// The input of a function over a range vector: series of samples, and the
/// window each step looks at.
pub(crate) struct RangeInput<'a> {
    pub series: Vec<RangeSeries<'a>>,
    pub range: i64,
    pub offset: i64,
    pub at: Option<i64>,
    /// The selector, when the input is one (absent_over_time reads its
    /// matchers).
    pub selector: Option<VectorSelector>,
}

/// The samples of `s` in `(mint, maxt]`.
pub(crate) fn window(s: Samples<'_>, mint: i64, maxt: i64) -> Samples<'_> {
    let lo = s.t.partition_point(|&t| t <= mint);
    let hi = s.t.partition_point(|&t| t <= maxt);
    s.slice(lo, hi)
}
