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
    /// The timestamp predict_linear extrapolates from: the step's, also
    /// under `@` (Prometheus' `enh.Ts`).
    pub intercept: i64,
    /// The scalar argument (quantile_over_time's q, predict_linear's t,
    /// double_exponential_smoothing's smoothing factor).
    pub param: f64,
    /// The second scalar argument (double_exponential_smoothing's trend
    /// factor).
    pub param2: f64,
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
    /// The scalar argument at each step (empty when there is none).
    pub param: &'p [f64],
    /// The second scalar argument at each step (empty when there is none).
    pub param2: &'p [f64],
    pub deadline: Option<Instant>,
    pub max_samples: usize,
    /// Samples already held when the call starts.
    pub held_samples: usize,
}

impl StepGrid<'_> {
    /// Step `i`'s timestamp and the window `(range_start, range_end]` it
    /// reads.
    #[inline(always)]
    pub(crate) fn step(&self, i: usize) -> (i64, i64, i64) {
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
}

/// Where a range function's points go, one at a time and in step order.
pub(crate) trait PointSink: Default {
    fn reserve_points(&mut self, n: usize);
    fn push_point(&mut self, t: i64, v: f64);
}

impl PointSink for Vec<Point> {
    fn reserve_points(&mut self, n: usize) {
        self.reserve(n);
    }

    #[inline]
    fn push_point(&mut self, t: i64, v: f64) {
        self.push(Point { t, v });
    }
}

/// Points as two columns, the way a source's series holds them: what a
/// selector reduced as it is read hands back.
#[derive(Default)]
pub(crate) struct Columns {
    pub t: Vec<i64>,
    pub v: Vec<f64>,
}

impl PointSink for Columns {
    fn reserve_points(&mut self, n: usize) {
        self.t.reserve(n);
        self.v.reserve(n);
    }

    #[inline]
    fn push_point(&mut self, t: i64, v: f64) {
        self.t.push(t);
        self.v.push(v);
    }
}

/// The points of `f` over one series at every step of `grid`.
#[cfg(test)]
pub(crate) fn eval_series(grid: &StepGrid<'_>, f: RangeFn, s: Samples<'_>) -> Result<Vec<Point>> {
    eval_series_with(grid, f, s, &mut SeriesScratch::default())
}

/// [`eval_series`] with the buffers of `scratch`, into any [`PointSink`].
pub(crate) fn eval_series_with<P: PointSink>(
    grid: &StepGrid<'_>,
    f: RangeFn,
    s: Samples<'_>,
    scratch: &mut SeriesScratch,
) -> Result<P> {
    if grid.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(QueryError::timeout());
    }
    let f = match f {
        RangeFn::Window(f) => f,
        RangeFn::Increase { is_rate } => return eval_increase(grid, is_rate, s, scratch),
    };
    let mut points = P::default();
    let mut window = WindowCursor::default();
    let mut widest = 0;
    for i in 0..grid.steps {
        let (ts, range_start, range_end) = grid.step(i);
        let (lo, hi) = window.advance(s.t, range_start, range_end);
        if hi <= lo {
            continue;
        }
        widest = widest.max(hi - lo);
        let ctx = StepContext {
            range_start,
            range_end,
            range: grid.range,
            intercept: ts,
            param: grid.param.get(i).copied().unwrap_or(f64::NAN),
            param2: grid.param2.get(i).copied().unwrap_or(f64::NAN),
        };
        if let Some(v) = f(s.slice(lo, hi), &ctx) {
            points.push_point(ts, v);
        }
    }
    grid.check_window(widest)?;
    Ok(points)
}

/// `rate` (`is_rate`) or `increase` over one series: the windows are found
/// a batch at a time, then the batch is extrapolated in one pass.
fn eval_increase<P: PointSink>(
    grid: &StepGrid<'_>,
    is_rate: bool,
    s: Samples<'_>,
    scratch: &mut SeriesScratch,
) -> Result<P> {
    let mut window = WindowCursor::default();
    let mut resets = CounterResets::new(s.v);
    let windows = &mut scratch.windows;
    windows.clear();
    let mut points = P::default();
    // The steps whose windows can meet the samples: all a point could have.
    if let (Some(&first), Some(&last)) = (s.t.first(), s.t.last()) {
        let span = last.saturating_sub(first).saturating_add(grid.range);
        let meeting = usize::try_from(span / grid.interval.max(1)).unwrap_or(usize::MAX);
        points.reserve_points(meeting.saturating_add(2).min(grid.steps));
    }
    let mut widest = 0;
    for i in 0..grid.steps {
        let (ts, range_start, range_end) = grid.step(i);
        let (lo, hi) = window.advance(s.t, range_start, range_end);
        let n = hi.saturating_sub(lo);
        widest = widest.max(n);
        if n < 2 {
            continue;
        }
        if windows.is_full() {
            windows.drain(grid.range, is_rate, |t, v| points.push_point(t, v));
        }
        let raw = resets.raw_increase(s.v, lo, hi);
        windows.push_span(ts, s, lo, hi, raw, range_start, range_end);
    }
    grid.check_window(widest)?;
    windows.drain(grid.range, is_rate, |t, v| points.push_point(t, v));
    Ok(points)
}

impl StepGrid<'_> {
    /// An error when a window of `widest` samples would take the query
    /// past its sample limit.
    fn check_window(&self, widest: usize) -> Result<()> {
        if widest > 0 && self.held_samples.saturating_add(widest) > self.max_samples {
            return Err(QueryError::too_many_samples());
        }
        Ok(())
    }
}

/// The window `(mint, maxt]` of the previous step as indexes `lo..hi` into
/// a series' timestamps. Steps only move forward, so each search starts
/// where the last one ended; and as samples mostly come at a steady
/// interval, each end first tries moving by as many samples as it did the
/// step before.
#[derive(Default)]
pub(crate) struct WindowCursor {
    lo: usize,
    hi: usize,
    lo_moved: usize,
    hi_moved: usize,
}

impl WindowCursor {
    /// Moves to the window `(mint, maxt]` of `t`, which must not start or end
    /// before the previous one; returns its index range.
    #[inline(always)]
    pub fn advance(&mut self, t: &[i64], mint: i64, maxt: i64) -> (usize, usize) {
        let lo = skip_as_before(t, self.lo, mint, self.lo_moved);
        let from = self.hi.max(lo);
        let hi = skip_as_before(t, from, maxt, self.hi_moved);
        (self.lo_moved, self.hi_moved) = (lo - self.lo, hi - from);
        (self.lo, self.hi) = (lo, hi);
        (lo, hi)
    }
}

/// [`skip_to`], trying `from + moved` first: two probes answer it when the
/// samples keep the spacing they had.
#[inline(always)]
fn skip_as_before(t: &[i64], from: usize, bound: i64, moved: usize) -> usize {
    let guess = from + moved;
    let reached = moved == 0 || t.get(guess - 1).is_some_and(|&x| x <= bound);
    let stops = guess <= t.len() && t.get(guess).is_none_or(|&x| x > bound);
    if reached && stops {
        guess
    } else {
        skip_to(t, from, bound)
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
#[inline(always)]
pub(crate) fn skip_to(t: &[i64], from: usize, bound: i64) -> usize {
    // From one step to the next a window end most often moves by none or
    // one sample: those two are answered here, in the caller's loop.
    match t.get(from) {
        None => return from,
        Some(&x) if x > bound => return from,
        _ => {}
    }
    match t.get(from + 1) {
        None => from + 1,
        Some(&x) if x > bound => from + 1,
        _ => skip_far(t, from + 2, bound),
    }
}

/// [`skip_to`] past its first two samples.
#[inline(never)]
fn skip_far(t: &[i64], from: usize, bound: i64) -> usize {
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
        let mut at = Vec::new();
        let (prev, cur) = (
            v.get(..v.len().saturating_sub(1)).unwrap_or(&[]),
            v.get(1..).unwrap_or(&[]),
        );
        // Resets are rare: each block of values is first checked for one
        // without a branch per value, which vectorizes.
        let mut base = 1;
        for (p, c) in prev.chunks(64).zip(cur.chunks(64)) {
            if p.iter().zip(c).fold(false, |any, (p, c)| any | (c < p)) {
                at.extend(
                    p.iter()
                        .zip(c)
                        .enumerate()
                        .filter(|(_, (p, c))| c < p)
                        .map(|(j, _)| base + j),
                );
            }
            base += p.len();
        }
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
