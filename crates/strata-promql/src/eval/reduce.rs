//! Selectors reduced as they are read: a selector whose only use is its
//! points at the query's steps (`sum(x)`, `rate(x[5m])`) hands the source
//! a function that turns each series' samples into those points, on the
//! thread that read it. A long range over many series is then never held
//! whole: 30 days of a minute-apart series are 43,200 samples, its hourly
//! `rate` 720 points.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strata_codec::SeriesMap;

use super::hist_range::eval_series_mixed;
use super::range_steps::{eval_series_with, Columns, SeriesScratch, StepGrid};
use super::selector::{instant_points, instant_points_mixed, RangeSeries};
use crate::annotations::Shared;
use crate::error::QueryError;
use crate::plan::Reduce;
use crate::source::Series;
use crate::value::{HPoint, Point};

/// The query's steps and the limits its evaluation runs under.
#[derive(Clone, Copy)]
pub(crate) struct QuerySteps {
    pub start: i64,
    pub end: i64,
    pub interval: i64,
    pub lookback: i64,
    pub deadline: Option<Instant>,
    pub max_samples: usize,
}

impl QuerySteps {
    fn count(&self) -> usize {
        if self.end < self.start {
            return 0;
        }
        usize::try_from((self.end - self.start) / self.interval.max(1) + 1).unwrap_or(0)
    }
}

/// The first error a reduction met, reported once the read is done.
pub(crate) type FirstError = Arc<Mutex<Option<QueryError>>>;

thread_local! {
    /// Buffers the range functions reuse from series to series.
    static SCRATCH: RefCell<SeriesScratch> = RefCell::new(SeriesScratch::default());
}

/// The function that reduces each series of a selector as `reduce` says;
/// what it cannot evaluate (the deadline passed) is left in `error`.
pub(crate) fn series_map(
    reduce: Reduce,
    steps: QuerySteps,
    error: FirstError,
    annotations: Shared,
) -> SeriesMap {
    Arc::new(move |s: Series| {
        if !s.histograms.is_empty() {
            return match mixed_points(reduce, &steps, &s, &annotations) {
                Ok((points, histograms)) if !points.is_empty() || !histograms.is_empty() => {
                    let (timestamps, values) = points.iter().map(|p| (p.t, p.v)).unzip();
                    Some(Series {
                        labels: s.labels,
                        timestamps,
                        values,
                        histograms,
                    })
                }
                Ok(_) => None,
                Err(e) => {
                    if let Ok(mut slot) = error.lock() {
                        slot.get_or_insert(e);
                    }
                    None
                }
            };
        }
        let points = match points(reduce, &steps, &s) {
            Ok(points) => points,
            Err(e) => {
                if let Ok(mut slot) = error.lock() {
                    slot.get_or_insert(e);
                }
                return None;
            }
        };
        if points.t.is_empty() {
            return None;
        }
        Some(Series {
            labels: s.labels,
            timestamps: points.t,
            values: points.v,
            histograms: Vec::new(),
        })
    })
}

/// The float and histogram points at each step of a series with
/// histograms.
fn mixed_points(
    reduce: Reduce,
    steps: &QuerySteps,
    s: &Series,
    annotations: &Shared,
) -> Result<(Vec<Point>, Vec<HPoint>), QueryError> {
    if steps.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(QueryError::timeout());
    }
    let interval = steps.interval.max(1);
    match reduce {
        Reduce::Instant { offset, at } => {
            let times = (0..steps.count() as i64).map(|i| steps.start + i * interval);
            Ok(instant_points_mixed(
                s,
                times,
                at,
                offset,
                steps.lookback,
                false,
            ))
        }
        Reduce::Range {
            f,
            hf,
            range,
            offset,
            at,
        } => {
            let grid = StepGrid {
                first: steps.start,
                interval,
                steps: steps.count(),
                range,
                offset,
                at,
                param: &[],
                param2: &[],
                deadline: steps.deadline,
                max_samples: steps.max_samples,
                held_samples: 0,
            };
            let input = RangeSeries::without_stale_markers(s);
            Ok(eval_series_mixed(&grid, f, hf, &input, annotations))
        }
    }
}

/// `s`'s points at each step.
fn points(reduce: Reduce, steps: &QuerySteps, s: &Series) -> Result<Columns, QueryError> {
    if steps.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(QueryError::timeout());
    }
    let interval = steps.interval.max(1);
    match reduce {
        Reduce::Instant { offset, at } => {
            let times = (0..steps.count() as i64).map(|i| steps.start + i * interval);
            Ok(instant_points(s, times, at, offset, steps.lookback, false))
        }
        Reduce::Range {
            f,
            range,
            offset,
            at,
            ..
        } => {
            let grid = StepGrid {
                first: steps.start,
                interval,
                steps: steps.count(),
                range,
                offset,
                at,
                param: &[],
                param2: &[],
                deadline: steps.deadline,
                max_samples: steps.max_samples,
                held_samples: 0,
            };
            let input = RangeSeries::without_stale_markers(s);
            SCRATCH.with(|scratch| {
                eval_series_with(&grid, f, input.samples(), &mut scratch.borrow_mut())
            })
        }
    }
}
