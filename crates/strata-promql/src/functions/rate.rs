//! Functions of a counter or gauge over a window: `rate`, `increase`,
//! `delta` (Prometheus' extrapolatedRate), `irate`, `idelta`, `deriv`,
//! `predict_linear`, `resets`, `changes`.

use super::kahan_inc;
use crate::value::Samples;

/// `rate`, `increase` and `delta` over the window `(range_start, range_end]`
/// (ms), extrapolated towards the window's ends exactly as Prometheus'
/// `extrapolatedRate` does. `None` when fewer than two samples.
pub(crate) fn extrapolated_rate(
    w: Samples<'_>,
    range_start: i64,
    range_end: i64,
    range_ms: i64,
    is_counter: bool,
    is_rate: bool,
) -> Option<f64> {
    let (first, last) = (w.first()?, w.last()?);
    let mut result = last.v - first.v;
    if is_counter {
        for (prev, cur) in w.v.iter().zip(w.v.iter().skip(1)) {
            if cur < prev {
                result += prev;
            }
        }
    }
    extrapolate(
        w,
        result,
        range_start,
        range_end,
        range_ms,
        is_counter,
        is_rate,
    )
}

/// The end of [`extrapolated_rate`]: `result` is the window's raw change
/// (last minus first value, plus the value before each counter reset, in
/// order), extrapolated to the window's ends.
pub(crate) fn extrapolate(
    w: Samples<'_>,
    result: f64,
    range_start: i64,
    range_end: i64,
    range_ms: i64,
    is_counter: bool,
    is_rate: bool,
) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (first, last) = (w.first()?, w.last()?);
    let num_minus_one = (w.len() - 1) as f64;
    let mut duration_to_start = (first.t - range_start) as f64 / 1000.0;
    let mut duration_to_end = (range_end - last.t) as f64 / 1000.0;
    let sampled_interval = (last.t - first.t) as f64 / 1000.0;
    let average_between = sampled_interval / num_minus_one;
    let threshold = average_between * 1.1;
    if duration_to_start >= threshold {
        duration_to_start = average_between / 2.0;
    }
    if is_counter {
        let mut duration_to_zero = duration_to_start;
        if result > 0.0 && first.v >= 0.0 {
            duration_to_zero = sampled_interval * (first.v / result);
        }
        if duration_to_zero < duration_to_start {
            duration_to_start = duration_to_zero;
        }
    }
    if duration_to_end >= threshold {
        duration_to_end = average_between / 2.0;
    }
    let mut factor = 1.0;
    if sampled_interval != 0.0 {
        factor = (sampled_interval + duration_to_start + duration_to_end) / sampled_interval;
    }
    if is_rate {
        factor /= range_ms as f64 / 1000.0;
    }
    Some(result * factor)
}

/// Windows a batch holds: 64 windows of seven columns stay in L1.
pub(crate) const WINDOW_BATCH: usize = 64;

/// A batch of one series' `rate` or `increase` windows, kept side by side
/// in fixed arrays so that [`Self::drain`] is one branch-free loop
/// the compiler vectorizes: per window it divides six times, which
/// dominates a rate over many short windows when done one window at a
/// time. Fixed arrays written by index also spare a growing vector's
/// length and capacity updates per column per window.
pub(crate) struct CounterWindows {
    /// Milliseconds from the window's start to its first sample.
    to_start: [f64; WINDOW_BATCH],
    /// Milliseconds from the window's last sample to its end.
    to_end: [f64; WINDOW_BATCH],
    /// Milliseconds from the first sample to the last.
    sampled: [f64; WINDOW_BATCH],
    /// Samples in the window minus one.
    gaps: [f64; WINDOW_BATCH],
    first_v: [f64; WINDOW_BATCH],
    /// The raw increase, as [`extrapolate`] takes it.
    raw: [f64; WINDOW_BATCH],
    /// The step each window is for.
    steps: [i64; WINDOW_BATCH],
    /// Windows held, at most [`WINDOW_BATCH`].
    len: usize,
}

impl Default for CounterWindows {
    fn default() -> Self {
        Self {
            to_start: [0.0; WINDOW_BATCH],
            to_end: [0.0; WINDOW_BATCH],
            sampled: [0.0; WINDOW_BATCH],
            gaps: [0.0; WINDOW_BATCH],
            first_v: [0.0; WINDOW_BATCH],
            raw: [0.0; WINDOW_BATCH],
            steps: [0; WINDOW_BATCH],
            len: 0,
        }
    }
}

impl CounterWindows {
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Whether the batch is full: [`Self::drain`] it before the next push.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len >= WINDOW_BATCH
    }

    /// Adds step `ts`'s window `s[lo..hi]` (at least two samples) of
    /// `(range_start, range_end]` with raw increase `raw`. The batch must
    /// not be full.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn push_span(
        &mut self,
        ts: i64,
        s: Samples<'_>,
        lo: usize,
        hi: usize,
        raw: f64,
        range_start: i64,
        range_end: i64,
    ) {
        let last = hi.saturating_sub(1);
        let (Some(&first_t), Some(&last_t), Some(&first_v)) =
            (s.t.get(lo), s.t.get(last), s.v.get(lo))
        else {
            return;
        };
        // The index is masked into the arrays, so no bounds are checked.
        let k = self.len % WINDOW_BATCH;
        #[allow(clippy::indexing_slicing)]
        {
            // The same integer differences and conversions as `extrapolate`.
            self.to_start[k] = (first_t - range_start) as f64;
            self.to_end[k] = (range_end - last_t) as f64;
            self.sampled[k] = (last_t - first_t) as f64;
            self.gaps[k] = (last - lo) as f64;
            self.first_v[k] = first_v;
            self.raw[k] = raw;
            self.steps[k] = ts;
        }
        self.len = k + 1;
    }

    /// [`extrapolate`] of every window held (as a counter), in order, each
    /// bit for bit what it returns, handed to `out` with its step; the
    /// batch is then empty.
    pub fn drain(&mut self, range_ms: i64, is_rate: bool, mut out: impl FnMut(i64, f64)) {
        let n = self.len.min(WINDOW_BATCH);
        let mut values = [0.0; WINDOW_BATCH];
        // A rate divides by the range; an increase leaves the factor as is.
        let range_s = is_rate.then(|| range_ms as f64 / 1000.0);
        extrapolate_batch(self, range_s, n, &mut values);
        for (&t, &v) in self.steps.iter().zip(&values).take(n) {
            out(t, v);
        }
        self.len = 0;
    }
}

/// The first `n` windows of a batch extrapolated into `out`.
#[inline(always)]
fn extrapolate_batch(
    w: &CounterWindows,
    range_s: Option<f64>,
    n: usize,
    out: &mut [f64; WINDOW_BATCH],
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has just been seen to support AVX.
        unsafe {
            extrapolate_avx(w, range_s, n, out)
        };
        return;
    }
    extrapolate_into(w, range_s, n, out);
}

/// [`extrapolate_into`] compiled for AVX: twice as many divisions at once
/// as the SSE2 baseline. Division is exact to the last bit at any width
/// and Rust never fuses a multiply with an add, so the results are the
/// same.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx")]
unsafe fn extrapolate_avx(
    w: &CounterWindows,
    range_s: Option<f64>,
    n: usize,
    out: &mut [f64; WINDOW_BATCH],
) {
    extrapolate_into(w, range_s, n, out);
}

#[inline(always)]
fn extrapolate_into(
    w: &CounterWindows,
    range_s: Option<f64>,
    n: usize,
    out: &mut [f64; WINDOW_BATCH],
) {
    // An index loop over fixed-length arrays, bounded by their length: the
    // form LLVM vectorizes without bounds checks.
    #[allow(clippy::needless_range_loop, clippy::indexing_slicing)]
    for i in 0..n.min(WINDOW_BATCH) {
        let (first_v, raw) = (w.first_v[i], w.raw[i]);
        let duration_to_start = w.to_start[i] / 1000.0;
        let duration_to_end = w.to_end[i] / 1000.0;
        let sampled_interval = w.sampled[i] / 1000.0;
        let average_between = sampled_interval / w.gaps[i];
        let threshold = average_between * 1.1;
        let half = average_between / 2.0;
        let duration_to_start = select(duration_to_start >= threshold, half, duration_to_start);
        let duration_to_zero = select(
            (raw > 0.0) & (first_v >= 0.0),
            sampled_interval * (first_v / raw),
            duration_to_start,
        );
        let duration_to_start = select(
            duration_to_zero < duration_to_start,
            duration_to_zero,
            duration_to_start,
        );
        let duration_to_end = select(duration_to_end >= threshold, half, duration_to_end);
        let factor = select(
            sampled_interval != 0.0,
            (sampled_interval + duration_to_start + duration_to_end) / sampled_interval,
            1.0,
        );
        let factor = match range_s {
            Some(r) => factor / r,
            None => factor,
        };
        out[i] = raw * factor;
    }
}

/// `if c { a } else { b }` with both sides already computed, which keeps
/// the loop it is in free of branches.
#[inline(always)]
fn select(c: bool, a: f64, b: f64) -> f64 {
    if c {
        a
    } else {
        b
    }
}

/// `irate` (`is_rate`) and `idelta`: from the last two samples.
pub(crate) fn instant_value(w: Samples<'_>, is_rate: bool) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let prev = w.get(w.len() - 2)?;
    let last = w.last()?;
    let interval = last.t - prev.t;
    if interval == 0 {
        return None;
    }
    // A counter that dropped was reset: its increase is then its last value.
    let mut result = last.v;
    let dropped = last.v.partial_cmp(&prev.v) == Some(std::cmp::Ordering::Less);
    if !is_rate || !dropped {
        result = last.v - prev.v;
    }
    if is_rate {
        result /= interval as f64 / 1000.0;
    }
    Some(result)
}

/// Least-squares slope and the intercept at `intercept_time`, as Prometheus'
/// `linearRegression`.
pub(crate) fn linear_regression(w: Samples<'_>, intercept_time: i64) -> (f64, f64) {
    let (mut n, mut sum_x, mut c_x, mut sum_y, mut c_y) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut sum_xy, mut c_xy, mut sum_x2, mut c_x2) = (0.0, 0.0, 0.0, 0.0);
    let init_y = w.v.first().copied().unwrap_or(f64::NAN);
    let mut const_y = true;
    for (i, p) in w.points().enumerate() {
        if const_y && i > 0 && p.v != init_y {
            const_y = false;
        }
        n += 1.0;
        let x = (p.t - intercept_time) as f64 / 1e3;
        (sum_x, c_x) = kahan_inc(x, sum_x, c_x);
        (sum_y, c_y) = kahan_inc(p.v, sum_y, c_y);
        (sum_xy, c_xy) = kahan_inc(x * p.v, sum_xy, c_xy);
        (sum_x2, c_x2) = kahan_inc(x * x, sum_x2, c_x2);
    }
    if const_y {
        if init_y.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init_y);
    }
    sum_x += c_x;
    sum_y += c_y;
    sum_xy += c_xy;
    sum_x2 += c_x2;
    let cov_xy = sum_xy - sum_x * sum_y / n;
    let var_x = sum_x2 - sum_x * sum_x / n;
    let slope = cov_xy / var_x;
    let intercept = sum_y / n - slope * sum_x / n;
    (slope, intercept)
}

pub(crate) fn deriv(w: Samples<'_>) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let t0 = w.first()?.t;
    Some(linear_regression(w, t0).0)
}

/// `predict_linear`: the regression line's value `seconds` after `eval_ts`.
pub(crate) fn predict_linear(w: Samples<'_>, seconds: f64, eval_ts: i64) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (slope, intercept) = linear_regression(w, eval_ts);
    Some(slope * seconds + intercept)
}

pub(crate) fn resets(w: Samples<'_>) -> Option<f64> {
    if w.is_empty() {
        return None;
    }
    let pairs = w.v.iter().zip(w.v.iter().skip(1));
    Some(pairs.filter(|(prev, cur)| cur < prev).count() as f64)
}

pub(crate) fn changes(w: Samples<'_>) -> Option<f64> {
    if w.is_empty() {
        return None;
    }
    let pairs = w.v.iter().zip(w.v.iter().skip(1));
    Some(
        pairs
            .filter(|(prev, cur)| cur != prev && !(cur.is_nan() && prev.is_nan()))
            .count() as f64,
    )
}
