//! Range functions over series that hold native histograms: each step's
//! window has float samples and histogram samples, and each function
//! treats them as Prometheus' does (`histogramRate`, `instantValue`,
//! `funcResets`, `funcSumOverTime`, ...). Series without histograms never
//! come here; they take the float-only paths of `range_steps`.

use strata_codec::histogram::{CounterResetHint, FloatHistogram};

use super::range_steps::{RangeFn, StepContext, StepGrid, WindowCursor};
use super::selector::{histogram_window, RangeSeries};
use crate::annotations::{self as anno, Shared};
use crate::float_histogram as fh;
use crate::functions::rate;
use crate::value::{get_label, HPoint, Point, Samples};

/// What a range function does with histogram samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HistFn {
    /// Reads floats only: histograms in a window with floats are ignored
    /// (with an info), a window of histograms only gives nothing.
    FloatsOnly,
    /// `rate`, `increase` (counters) and `delta`.
    Rate {
        counter: bool,
        rate: bool,
    },
    /// `irate` and `idelta`.
    Instant {
        rate: bool,
    },
    Resets,
    Changes,
    /// `count_over_time`.
    Count,
    /// `present_over_time`, `absent_over_time`.
    Present,
    /// `last_over_time`.
    Last,
    /// `first_over_time`.
    First,
    /// `ts_of_first_over_time`: the time of the first sample of either kind.
    TsOfFirst,
    /// `ts_of_last_over_time`.
    TsOfLast,
    /// `sum_over_time`.
    Sum,
    /// `avg_over_time`.
    Avg,
}

/// How the range function called `name` treats histograms.
pub(crate) fn hist_fn(name: &str) -> HistFn {
    match name {
        "rate" => HistFn::Rate {
            counter: true,
            rate: true,
        },
        "increase" => HistFn::Rate {
            counter: true,
            rate: false,
        },
        "delta" => HistFn::Rate {
            counter: false,
            rate: false,
        },
        "irate" => HistFn::Instant { rate: true },
        "idelta" => HistFn::Instant { rate: false },
        "resets" => HistFn::Resets,
        "changes" => HistFn::Changes,
        "count_over_time" => HistFn::Count,
        "present_over_time" | "absent_over_time" => HistFn::Present,
        "last_over_time" => HistFn::Last,
        "first_over_time" => HistFn::First,
        "ts_of_first_over_time" => HistFn::TsOfFirst,
        "ts_of_last_over_time" => HistFn::TsOfLast,
        "sum_over_time" => HistFn::Sum,
        "avg_over_time" => HistFn::Avg,
        _ => HistFn::FloatsOnly,
    }
}

/// The output of one step: a float, a histogram, or nothing.
enum Out {
    None,
    Float(f64),
    Hist(FloatHistogram),
}

/// Evaluates `f` (floats) / `hf` (histograms) over one series with
/// histograms at every step of `grid`.
pub(crate) fn eval_series_mixed(
    grid: &StepGrid<'_>,
    f: RangeFn,
    hf: HistFn,
    s: &RangeSeries<'_>,
    annos: &Shared,
) -> (Vec<Point>, Vec<HPoint>) {
    let metric_labels = s.labels.to_labels();
    let metric = get_label(&metric_labels, "__name__");
    let samples = s.samples();
    let mut cursor = WindowCursor::default();
    let (mut points, mut hpoints) = (Vec::new(), Vec::new());
    for i in 0..grid.steps {
        let (ts, range_start, range_end) = grid.step(i);
        let (lo, hi) = cursor.advance(samples.t, range_start, range_end);
        let w = samples.slice(lo, hi.max(lo));
        let hw = histogram_window(&s.h, range_start, range_end);
        if w.is_empty() && hw.is_empty() {
            continue;
        }
        let ctx = StepContext {
            range_start,
            range_end,
            range: grid.range,
            intercept: ts,
            param: grid.param.get(i).copied().unwrap_or(f64::NAN),
            param2: grid.param2.get(i).copied().unwrap_or(f64::NAN),
        };
        let out = if hw.is_empty() {
            float_fn(f, w, &ctx).map_or(Out::None, Out::Float)
        } else {
            step(f, hf, w, hw, &ctx, metric, annos)
        };
        match out {
            Out::None => {}
            Out::Float(v) => points.push(Point { t: ts, v }),
            Out::Hist(h) => hpoints.push((ts, h)),
        }
    }
    (points, hpoints)
}

/// The float function on a window of floats.
fn float_fn(f: RangeFn, w: Samples<'_>, ctx: &StepContext) -> Option<f64> {
    if w.is_empty() {
        return None;
    }
    match f {
        RangeFn::Window(wf) => wf(w, ctx),
        RangeFn::Increase { is_rate } => {
            rate::extrapolated_rate(w, ctx.range_start, ctx.range_end, ctx.range, true, is_rate)
        }
    }
}

/// One step whose window has histograms (`hw` not empty).
fn step(
    f: RangeFn,
    hf: HistFn,
    w: Samples<'_>,
    hw: &[HPoint],
    ctx: &StepContext,
    metric: &str,
    annos: &Shared,
) -> Out {
    match hf {
        HistFn::FloatsOnly => {
            if w.is_empty() {
                return Out::None;
            }
            annos.add(anno::histogram_ignored_in_mixed_range(metric));
            float_fn(f, w, ctx).map_or(Out::None, Out::Float)
        }
        HistFn::Rate { counter, rate } => {
            if !w.is_empty() {
                annos.add(anno::mixed_floats_histograms(metric));
                return Out::None;
            }
            histogram_rate(hw, ctx, counter, rate, metric, annos).map_or(Out::None, Out::Hist)
        }
        HistFn::Instant { rate } => instant_value(w, hw, rate, metric, annos),
        HistFn::Resets | HistFn::Changes => {
            Out::Float(resets_or_changes(w, hw, hf == HistFn::Resets))
        }
        HistFn::Count => Out::Float((w.len() + hw.len()) as f64),
        HistFn::Present => Out::Float(1.0),
        HistFn::Last => {
            let last_h = hw.last();
            match (w.last(), last_h) {
                (Some(p), Some((t, _))) if p.t > *t => Out::Float(p.v),
                (_, Some((_, h))) => Out::Hist(h.clone()),
                (Some(p), None) => Out::Float(p.v),
                (None, None) => Out::None,
            }
        }
        HistFn::First => match (w.first(), hw.first()) {
            (Some(p), Some((t, _))) if p.t < *t => Out::Float(p.v),
            (_, Some((_, h))) => Out::Hist(h.clone()),
            (Some(p), None) => Out::Float(p.v),
            (None, None) => Out::None,
        },
        HistFn::TsOfFirst | HistFn::TsOfLast => {
            let times = w
                .first()
                .map(|p| p.t)
                .into_iter()
                .chain(w.last().map(|p| p.t));
            let times = times.chain(hw.first().map(|(t, _)| *t));
            let times = times.chain(hw.last().map(|(t, _)| *t));
            let t = if hf == HistFn::TsOfFirst {
                times.min()
            } else {
                times.max()
            };
            t.map_or(Out::None, |t| Out::Float(t as f64 / 1000.0))
        }
        HistFn::Sum | HistFn::Avg => {
            if !w.is_empty() {
                annos.add(anno::mixed_floats_histograms(metric));
                return Out::None;
            }
            let result = if hf == HistFn::Avg {
                mean_histograms(hw.iter().map(|(_, h)| h), annos)
            } else {
                sum_histograms(hw.iter().map(|(_, h)| h), "aggregation", annos)
            };
            match result {
                Some(h) => Out::Hist(h),
                None => {
                    annos.add(anno::mixed_exponential_custom(metric));
                    Out::None
                }
            }
        }
    }
}

/// `resets` (`resets`) or `changes` over floats and histograms in time
/// order, as Prometheus' `funcResets` and `funcChanges`: a change of kind
/// counts as both.
pub(crate) fn resets_or_changes(w: Samples<'_>, hw: &[HPoint], resets: bool) -> f64 {
    let mut prev: Option<Either<'_>> = None;
    let mut n = 0usize;
    for cur in merged(w, hw) {
        if let Some(p) = &prev {
            let counted = match (p, &cur) {
                (Either::F(a), Either::F(b)) => {
                    if resets {
                        b < a
                    } else {
                        b != a && !(a.is_nan() && b.is_nan())
                    }
                }
                (Either::H(a), Either::H(b)) => {
                    if resets {
                        fh::detect_reset(b, a)
                    } else {
                        !fh::equals(b, a)
                    }
                }
                _ => true,
            };
            n += usize::from(counted);
        }
        prev = Some(cur);
    }
    n as f64
}

/// The mean of histograms as `avg_over_time` computes it; `None` when
/// exponential and custom buckets meet.
fn mean_histograms<'h>(
    hs: impl Iterator<Item = &'h FloatHistogram>,
    annos: &Shared,
) -> Option<FloatHistogram> {
    fold_histograms::<fh::KahanMean>(hs, "aggregation", annos)
}

/// The sum of histograms, with the annotations of conflicting counter
/// resets and reconciled custom bounds (`operation` names the sum in
/// them); `None` when exponential and custom buckets meet.
pub(crate) fn sum_histograms<'h>(
    hs: impl Iterator<Item = &'h FloatHistogram>,
    operation: &str,
    annos: &Shared,
) -> Option<FloatHistogram> {
    fold_histograms::<fh::KahanSum>(hs, operation, annos)
}

/// A running sum or mean of histograms.
trait Fold: Sized {
    fn start(first: FloatHistogram) -> Self;
    fn add(&mut self, h: &FloatHistogram) -> Result<fh::Combined, fh::IncompatibleSchema>;
    fn finish(self) -> FloatHistogram;
}

impl Fold for fh::KahanSum {
    fn start(first: FloatHistogram) -> Self {
        Self::new(first)
    }
    fn add(&mut self, h: &FloatHistogram) -> Result<fh::Combined, fh::IncompatibleSchema> {
        fh::KahanSum::add(self, h)
    }
    fn finish(self) -> FloatHistogram {
        fh::KahanSum::finish(self)
    }
}

impl Fold for fh::KahanMean {
    fn start(first: FloatHistogram) -> Self {
        Self::new(first)
    }
    fn add(&mut self, h: &FloatHistogram) -> Result<fh::Combined, fh::IncompatibleSchema> {
        fh::KahanMean::add(self, h)
    }
    fn finish(self) -> FloatHistogram {
        fh::KahanMean::finish(self)
    }
}

/// `hs` folded by `F`, with the annotations of conflicting counter resets
/// and reconciled custom bounds; `None` when exponential and custom buckets
/// meet.
fn fold_histograms<'h, F: Fold>(
    mut hs: impl Iterator<Item = &'h FloatHistogram>,
    operation: &str,
    annos: &Shared,
) -> Option<FloatHistogram> {
    let first = hs.next()?;
    let (mut reset, mut not_reset, mut reconciled) = (false, false, false);
    let mut track = |h: &FloatHistogram| match h.counter_reset_hint {
        CounterResetHint::Reset => reset = true,
        CounterResetHint::NotReset => not_reset = true,
        _ => {}
    };
    track(first);
    let mut acc = F::start(first.clone());
    for h in hs {
        track(h);
        match acc.add(h) {
            Ok(c) => reconciled |= c.nhcb_bounds_reconciled,
            Err(_) => return None,
        }
    }
    if reset && not_reset {
        annos.add(anno::counter_reset_collision(operation));
    }
    if reconciled {
        annos.add(anno::mismatched_custom_buckets(operation));
    }
    Some(acc.finish())
}

/// A sample of a window that has both kinds.
enum Either<'a> {
    F(f64),
    H(&'a FloatHistogram),
}

/// The window's samples of both kinds in time order.
fn merged<'a>(w: Samples<'a>, hw: &'a [HPoint]) -> Vec<Either<'a>> {
    let mut out = Vec::with_capacity(w.len() + hw.len());
    let (mut i, mut j) = (0, 0);
    while i < w.len() || j < hw.len() {
        let take_float = match (w.get(i), hw.get(j)) {
            (Some(p), Some((t, _))) => p.t < *t,
            (Some(_), None) => true,
            _ => false,
        };
        if take_float {
            if let Some(p) = w.get(i) {
                out.push(Either::F(p.v));
            }
            i += 1;
        } else {
            if let Some((_, h)) = hw.get(j) {
                out.push(Either::H(h));
            }
            j += 1;
        }
    }
    out
}

/// `irate` / `idelta` over a window with histograms: from its last two
/// samples, as Prometheus' `instantValue`.
fn instant_value(
    w: Samples<'_>,
    hw: &[HPoint],
    is_rate: bool,
    metric: &str,
    annos: &Shared,
) -> Out {
    if w.len() + hw.len() < 2 {
        return Out::None;
    }
    // The last two samples of either kind, oldest first.
    let mut last: Vec<(i64, Either<'_>)> = Vec::with_capacity(4);
    for i in w.len().saturating_sub(2)..w.len() {
        if let Some(p) = w.get(i) {
            last.push((p.t, Either::F(p.v)));
        }
    }
    for (t, h) in hw.iter().skip(hw.len().saturating_sub(2)) {
        last.push((*t, Either::H(h)));
    }
    last.sort_by_key(|(t, _)| *t);
    let n = last.len();
    let (Some((t0, s0)), Some((t1, s1))) = (last.get(n - 2), last.get(n - 1)) else {
        return Out::None;
    };
    let interval = t1 - t0;
    if interval == 0 {
        return Out::None;
    }
    let secs = interval as f64 / 1000.0;
    match (s0, s1) {
        (Either::F(a), Either::F(b)) => {
            let mut v = *b;
            if !is_rate || !matches!(b.partial_cmp(a), Some(std::cmp::Ordering::Less)) {
                v = b - a;
            }
            if is_rate {
                v /= secs;
            }
            Out::Float(v)
        }
        (Either::H(a), Either::H(b)) => {
            let gauge = CounterResetHint::Gauge;
            if is_rate && (a.counter_reset_hint == gauge || b.counter_reset_hint == gauge) {
                annos.add(anno::not_counter(metric));
            }
            if !is_rate && (a.counter_reset_hint != gauge || b.counter_reset_hint != gauge) {
                annos.add(anno::not_gauge(metric));
            }
            let mut res = (*b).clone();
            if !is_rate || !fh::detect_reset(b, a) {
                match fh::add(&mut res, a, true) {
                    Err(_) => {
                        annos.add(anno::mixed_exponential_custom(metric));
                        return Out::None;
                    }
                    Ok(c) if c.nhcb_bounds_reconciled => {
                        annos.add(anno::mismatched_custom_buckets("subtraction"))
                    }
                    Ok(_) => {}
                }
            }
            res.counter_reset_hint = gauge;
            fh::compact(&mut res);
            if is_rate {
                fh::div(&mut res, secs);
            }
            Out::Hist(res)
        }
        _ => {
            annos.add(anno::mixed_floats_histograms(metric));
            Out::None
        }
    }
}

/// `rate`, `increase` (`counter`) or `delta` over a window of histograms
/// only, as Prometheus' `histogramRate` and the extrapolation of
/// `extrapolatedRate`.
fn histogram_rate(
    hw: &[HPoint],
    ctx: &StepContext,
    counter: bool,
    is_rate: bool,
    metric: &str,
    annos: &Shared,
) -> Option<FloatHistogram> {
    if hw.len() < 2 {
        return None;
    }
    let (first_t, first) = hw.first()?;
    let (last_t, last) = hw.last()?;
    let gauge = CounterResetHint::Gauge;
    if counter && (first.counter_reset_hint == gauge || last.counter_reset_hint == gauge) {
        annos.add(anno::not_counter(metric));
    }
    let mut prev: FloatHistogram = first.clone();
    let mut using_custom = prev.uses_custom_buckets();
    if counter {
        let (_, second) = hw.get(1)?;
        if fh::detect_reset(second, &prev) {
            prev = FloatHistogram {
                schema: second.schema,
                custom_values: second.custom_values.clone(),
                ..FloatHistogram::default()
            };
            using_custom = second.uses_custom_buckets();
        }
    }
    if last.uses_custom_buckets() != using_custom {
        annos.add(anno::mixed_exponential_custom(metric));
        return None;
    }
    let mut min_schema = last.schema.min(prev.schema);
    if counter {
        for (_, curr) in hw.get(1..hw.len() - 1).unwrap_or(&[]) {
            if curr.counter_reset_hint == gauge {
                annos.add(anno::not_counter(metric));
            }
            min_schema = min_schema.min(curr.schema);
            if curr.uses_custom_buckets() != using_custom {
                annos.add(anno::mixed_exponential_custom(metric));
                return None;
            }
        }
    }
    let mut h = fh::copy_to_schema(last, min_schema);
    match fh::add(&mut h, &prev, true) {
        Err(_) => {
            annos.add(anno::mixed_exponential_custom(metric));
            return None;
        }
        Ok(c) if c.nhcb_bounds_reconciled => {
            annos.add(anno::mismatched_custom_buckets("subtraction"))
        }
        Ok(_) => {}
    }
    if counter {
        let mut prev_ref: &FloatHistogram = &prev;
        for (_, curr) in hw.get(1..).unwrap_or(&[]) {
            if fh::detect_reset(curr, prev_ref) {
                match fh::add(&mut h, prev_ref, false) {
                    Err(_) => {
                        annos.add(anno::mixed_exponential_custom(metric));
                        return None;
                    }
                    Ok(c) if c.nhcb_bounds_reconciled => {
                        annos.add(anno::mismatched_custom_buckets("addition"))
                    }
                    Ok(_) => {}
                }
            }
            prev_ref = curr;
        }
    } else if first.counter_reset_hint != gauge || last.counter_reset_hint != gauge {
        annos.add(anno::not_gauge(metric));
    }
    h.counter_reset_hint = gauge;
    fh::compact(&mut h);

    let n_minus_one = (hw.len() - 1) as f64;
    let mut to_start = (first_t - ctx.range_start) as f64 / 1000.0;
    let mut to_end = (ctx.range_end - last_t) as f64 / 1000.0;
    let sampled = (last_t - first_t) as f64 / 1000.0;
    let average = sampled / n_minus_one;
    let threshold = average * 1.1;
    if to_start >= threshold {
        to_start = average / 2.0;
    }
    if counter {
        let mut to_zero = to_start;
        if h.count > 0.0 && first.count >= 0.0 {
            to_zero = sampled * (first.count / h.count);
        }
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    if to_end >= threshold {
        to_end = average / 2.0;
    }
    let mut factor = 1.0;
    if sampled != 0.0 {
        factor = (sampled + to_start + to_end) / sampled;
    }
    if is_rate {
        factor /= ctx.range as f64 / 1000.0;
    }
    fh::mul(&mut h, factor);
    Some(h)
}
