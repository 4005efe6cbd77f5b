//! Walking a range function's steps over each series: the window of each
//! step is found from the previous one's (both ends only move forward), the
//! counter resets of `rate` and `increase` are found once per series, and
//! large inputs are split across threads by series.

use std::time::Instant;

use super::selector::RangeSeries;
use super::Result;
use crate::error::QueryError;
use crate::functions::rate;
use crate::value::{Point, Samples};
use strata_codec::threads::available as available_threads;

/// What a range-vector function sees at one step besides the samples.
pub(crate) struct StepContext {
    pub range_start: i64,
    pub range_end: i64,
    pub range: i64,
    /// The timestamp predict_linear extrapolates from.
    pub intercept: i64,
    /// The scalar argument (quantile_over_time's q, predict_linear's t).
    pub param: f64,
}

/// A function of one step's window (never empty).
pub(crate) type WindowFn = for<'w> fn(Samples<'w>, &StepContext) -> Option<f64>;

/// How a range function is computed along a series.
#[derive(Clone, Copy)]
pub(crate) enum RangeFn {
    /// From each window on its own.
    Window(WindowFn),
    /// `rate` (`is_rate`) or `increase`: the counter resets are located once
    /// per series and each window sums only those inside it.
    Increase { is_rate: bool },
}

/// The steps of one range-function call and the limits it runs under.
pub(crate) struct StepGrid<'p> {
    pub first: i64,
    pub interval: i64,
    pub steps: usize,
    pub range: i64,
    pub offset: i64,
    pub at: Option<i64>,
    /// The evaluation start, predict_linear's origin under `@`.
    pub query_start: i64,
    /// The scalar argument at each step (empty when there is none).
    pub param: &'p [f64],
    pub deadline: Option<Instant>,
    pub max_samples: usize,
    /// Samples already held when the call starts.
    pub held_samples: usize,
}

impl StepGrid<'_> {
    /// Step `i`'s timestamp and the window `(range_start, range_end]` it
    /// reads.
    fn step(&self, i: usize) -> (i64, i64, i64) {
        let ts = self.first + i as i64 * self.interval;
        let range_end = self.at.unwrap_or(ts).saturating_sub(self.offset);
        (ts, range_end.saturating_sub(self.range), range_end)
    }
}

/// Below this many sample and step visits a call runs on one thread: a
/// thread costs tens of microseconds to start.
const PARALLEL_MIN_WORK: usize = 200_000;

/// Evaluates `f` over every series, one result per series in order; large
/// inputs are split into contiguous runs of series, one thread each.
pub(crate) fn eval_series_all(
    grid: &StepGrid<'_>,
    f: RangeFn,
    series: &[RangeSeries<'_>],
) -> Vec<Result<Vec<Point>>> {
    let work: usize = series
        .iter()
        .map(|s| s.t.len().saturating_add(grid.steps))
        .fold(0, usize::saturating_add);
    let threads = available_threads().min(series.len());
    if threads < 2 || work < PARALLEL_MIN_WORK {
        let mut scratch = SeriesScratch::default();
        return series
            .iter()
            .map(|s| eval_series_with(grid, f, s.samples(), &mut scratch))
            .collect();
    }
    let per_thread = series.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = series
            .chunks(per_thread)
            .map(|part| {
                scope.spawn(move || {
                    let mut scratch = SeriesScratch::default();
                    part.iter()
                        .map(|s| eval_series_with(grid, f, s.samples(), &mut scratch))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![Err(QueryError::Internal(
                        "range function evaluation panicked".into(),
                    ))]
                })
            })
            .collect()
    })
}

/// Buffers one thread reuses from series to series, rather than allocating
/// them for each.
#[derive(Default)]
pub(crate) struct SeriesScratch {
    windows: rate::CounterWindows,
    steps: Vec<i64>,
    values: Vec<f64>,
}

/// The points of `f` over one series at every step of `grid`.
#[cfg(test)]
pub(crate) fn eval_series(grid: &StepGrid<'_>, f: RangeFn, s: Samples<'_>) -> Result<Vec<Point>> {
    eval_series_with(grid, f, s, &mut SeriesScratch::default())
}

/// [`eval_series`] with the buffers of `scratch`.
pub(crate) fn eval_series_with(
    grid: &StepGrid<'_>,
    f: RangeFn,
    s: Samples<'_>,
    scratch: &mut SeriesScratch,
) -> Result<Vec<Point>> {
    if grid.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(QueryError::timeout());
    }
    let f = match f {
        RangeFn::Window(f) => f,
        RangeFn::Increase { is_rate } => return eval_increase(grid, is_rate, s, scratch),
    };
    let mut points = Vec::new();
    let mut window = WindowCursor::default();
    for i in 0..grid.steps {
        let Some(StepWindow {
            ts,
            range_start,
            range_end,
            lo,
            hi,
        }) = step_window(grid, i, &mut window, s)?
        else {
            continue;
        };
        let w = s.slice(lo, hi);
        let ctx = StepContext {
            range_start,
            range_end,
            range: grid.range,
            intercept: if grid.at.is_some() {
                grid.query_start
            } else {
                ts
            },
            param: grid.param.get(i).copied().unwrap_or(f64::NAN),
        };
        if let Some(v) = f(w, &ctx) {
            points.push(Point { t: ts, v });
        }
    }
    Ok(points)
}

/// `rate` (`is_rate`) or `increase` over one series: the windows are found
/// first, then all extrapolated in one pass.
fn eval_increase(
    grid: &StepGrid<'_>,
    is_rate: bool,
    s: Samples<'_>,
    scratch: &mut SeriesScratch,
) -> Result<Vec<Point>> {
    let mut window = WindowCursor::default();
    let mut resets = CounterResets::new(s.v);
    let SeriesScratch {
        windows,
        steps,
        values,
    } = scratch;
    windows.clear();
    steps.clear();
    for i in 0..grid.steps {
        let Some(StepWindow {
            ts,
            range_start,
            range_end,
            lo,
            hi,
        }) = step_window(grid, i, &mut window, s)?
        else {
            continue;
        };
        let w = s.slice(lo, hi);
        if w.len() < 2 {
            continue;
        }
        let raw = resets.raw_increase(s.v, lo, hi);
        windows.push(w, raw, range_start, range_end);
        steps.push(ts);
    }
    windows.extrapolate(grid.range, is_rate, values);
    Ok(steps
        .iter()
        .zip(values.iter())
        .map(|(&t, &v)| Point { t, v })
        .collect())
}

/// Step `i`'s time, range and the index range of its samples.
struct StepWindow {
    ts: i64,
    range_start: i64,
    range_end: i64,
    lo: usize,
    hi: usize,
}

/// Moves `window` to step `i`; `None` when the step has no samples, an
/// error when they would exceed the query's sample limit.
#[inline]
fn step_window(
    grid: &StepGrid<'_>,
    i: usize,
    window: &mut WindowCursor,
    s: Samples<'_>,
) -> Result<Option<StepWindow>> {
    let (ts, range_start, range_end) = grid.step(i);
    let (lo, hi) = window.advance(s.t, range_start, range_end);
    let w = s.slice(lo, hi);
    if w.is_empty() {
        return Ok(None);
    }
    if grid.held_samples.saturating_add(w.len()) > grid.max_samples {
        return Err(QueryError::too_many_samples());
    }
    Ok(Some(StepWindow {
        ts,
        range_start,
        range_end,
        lo,
        hi,
    }))
}

/// The window `(mint, maxt]` of the previous step as indexes `lo..hi` into
/// a series' timestamps. Steps only move forward, so each search starts
/// where the last one ended.
#[derive(Default)]
pub(crate) struct WindowCursor {
    lo: usize,
    hi: usize,
}

impl WindowCursor {
    /// Moves to the window `(mint, maxt]` of `t`, which must not start or end
    /// before the previous one; returns its index range.
    #[inline]
    pub fn advance(&mut self, t: &[i64], mint: i64, maxt: i64) -> (usize, usize) {
        self.lo = skip_to(t, self.lo, mint);
        self.hi = skip_to(t, self.hi.max(self.lo), maxt);
        (self.lo, self.hi)
    }
}

/// Samples a window end steps over one by one before galloping: from one
/// step to the next it usually moves by a step's worth of samples (10 for
/// a 10-minute step over a 1-minute scrape, 20 for 5 minutes over 15 s),
/// and a short linear walk beats any search there.
const LINEAR_PROBES: usize = 32;

/// The first index at or after `from` whose timestamp is past `bound`.
/// Past the linear probes it gallops (strides doubling from where it is)
/// and then searches only the last stride: a window that moves by a few
/// dozen samples costs a few probes, not a search of the whole rest of a
/// week-long series.
pub(crate) fn skip_to(t: &[i64], from: usize, bound: i64) -> usize {
    let rest = t.get(from..).unwrap_or(&[]);
    if let Some(i) = rest.iter().take(LINEAR_PROBES).position(|&x| x > bound) {
        return from + i;
    }
    let until = |lo: usize, hi: Option<usize>| {
        let part = match hi {
            Some(hi) => rest.get(lo..hi),
            None => rest.get(lo..),
        };
        lo + part.map_or(0, |r| r.partition_point(|&x| x <= bound))
    };
    // Every sample before `lo` is at or before `bound`.
    let mut lo = LINEAR_PROBES.min(rest.len());
    let mut stride = LINEAR_PROBES;
    loop {
        let probe = lo + stride;
        match rest.get(probe) {
            Some(&x) if x <= bound => {
                lo = probe + 1;
                stride = stride.saturating_mul(2);
            }
            Some(_) => return from + until(lo, Some(probe)),
            None => return from + until(lo, None),
        }
    }
}

/// The counter resets of one series (indexes `j` where `v[j] < v[j - 1]`),
/// and how far the windows have moved past them.
#[derive(Default)]
pub(crate) struct CounterResets {
    at: Vec<usize>,
    next: usize,
}

impl CounterResets {
    pub fn new(v: &[f64]) -> Self {
        let at = v
            .iter()
            .zip(v.iter().skip(1))
            .enumerate()
            .filter(|(_, (prev, cur))| cur < prev)
            .map(|(i, _)| i + 1)
            .collect();
        Self { at, next: 0 }
    }

    /// The raw increase over `v[lo..hi]` (at least two samples): last minus
    /// first, plus the value before each reset inside, added in order, the
    /// same operations as [`rate::extrapolated_rate`] performs, so the
    /// result is identical. `lo` must not go back between calls.
    pub fn raw_increase(&mut self, v: &[f64], lo: usize, hi: usize) -> f64 {
        let value = |i: usize| v.get(i).copied().unwrap_or(f64::NAN);
        let mut result = value(hi.saturating_sub(1)) - value(lo);
        while self.at.get(self.next).is_some_and(|&j| j <= lo) {
            self.next += 1;
        }
        for &j in self.at.get(self.next..).unwrap_or(&[]) {
            if j >= hi {
                break;
            }
            result += value(j - 1);
        }
        result
    }
}

#[cfg(test)]
mod tests;
