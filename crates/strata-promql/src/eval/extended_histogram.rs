//! `rate`, `increase` and `delta` of native histograms over anchored and
//! smoothed windows, as Prometheus' `extendedHistogramRate`: the
//! histograms at the window's two ends (picked, or interpolated bucket by
//! bucket when smoothed) subtracted, plus, for a counter, the histogram
//! before each reset in between. See [`super::extended_range`] for the
//! windows.

use strata_codec::histogram::{CounterResetHint, FloatHistogram};

use crate::annotations::{self as anno, Shared};
use crate::float_histogram as fh;
use crate::value::HPoint;

/// A window's range `(start, end]` and how its ends are read.
#[derive(Clone, Copy)]
pub(crate) struct HistBounds {
    pub start: i64,
    pub end: i64,
    pub smoothed: bool,
}

/// Why a window gives no histogram: exponential and custom buckets met.
pub(crate) struct Incompatible;

/// `increase` (`counter`) or `delta` of the histograms `h` of one window
/// (at least one), per second of `rate_seconds` when given; `None`, with
/// Prometheus' annotations, when there is none.
pub(crate) fn extended_histogram_rate(
    h: &[HPoint],
    b: HistBounds,
    counter: bool,
    rate_seconds: Option<f64>,
    metric: &str,
    annos: &Shared,
) -> Option<FloatHistogram> {
    let mut last = h.len().checked_sub(1)?;
    let head = h.get(..last)?;
    let first = head
        .partition_point(|(t, _)| *t <= b.start)
        .saturating_sub(1);
    if b.smoothed {
        last = head.partition_point(|(t, _)| *t < b.end);
    }
    let in_window = h.get(first..=last)?;
    let (start_sample, end_sample) = (in_window.first()?, in_window.last()?);
    if end_sample.0 <= b.start || (b.smoothed && start_sample.0 > b.end) {
        return None;
    }
    let custom = start_sample.1.uses_custom_buckets();
    for (_, x) in in_window {
        if x.uses_custom_buckets() != custom {
            annos.add(anno::mixed_exponential_custom(metric));
            return None;
        }
        if counter && x.counter_reset_hint == CounterResetHint::Gauge {
            annos.add(anno::not_counter(metric));
        }
    }
    let ends = Ends {
        first,
        last,
        start_sample,
        end_sample,
    };
    let Ok(mut result) = rate_of(h, ends, b, counter, metric, annos) else {
        annos.add(anno::mixed_exponential_custom(metric));
        return None;
    };
    if let Some(seconds) = rate_seconds {
        fh::div(&mut result, seconds);
    }
    result.counter_reset_hint = CounterResetHint::Gauge;
    fh::compact(&mut result);
    Some(result)
}

/// The samples that stand for a window's ends, and where they are.
struct Ends<'h> {
    first: usize,
    last: usize,
    start_sample: &'h HPoint,
    end_sample: &'h HPoint,
}

/// The difference across the window of `ends`, counter resets made up
/// for.
fn rate_of(
    h: &[HPoint],
    ends: Ends<'_>,
    b: HistBounds,
    counter: bool,
    metric: &str,
    annos: &Shared,
) -> Result<FloatHistogram, Incompatible> {
    let Ends {
        first,
        last,
        start_sample,
        end_sample,
    } = ends;
    let left = match h.get(first + 1) {
        Some(next) if b.smoothed && start_sample.0 < b.start => {
            interpolate(start_sample, next, b.start, counter, annos)?
        }
        _ => start_sample.1.clone(),
    };
    let before_end = last.checked_sub(1).and_then(|i| h.get(i));
    let right = match before_end {
        Some(prev) if b.smoothed && end_sample.0 > b.end => {
            interpolate(prev, end_sample, b.end, counter, annos)?
        }
        _ => end_sample.1.clone(),
    };
    let gauge = CounterResetHint::Gauge;
    if !counter && (left.counter_reset_hint != gauge || right.counter_reset_hint != gauge) {
        annos.add(anno::not_gauge(metric));
    }
    let mut result = right.clone();
    combine(&mut result, &left, true, annos)?;
    if counter {
        if let Some(correction) = resets_correction(h, first, last, &left, &right, b, annos)? {
            combine(&mut result, &correction, false, annos)?;
        }
    }
    Ok(result)
}

/// `h += other` (`-=` when `negate`), with the info Prometheus gives when
/// custom bounds were reconciled.
fn combine(
    h: &mut FloatHistogram,
    other: &FloatHistogram,
    negate: bool,
    annos: &Shared,
) -> Result<(), Incompatible> {
    let c = fh::add(h, other, negate).map_err(|_| Incompatible)?;
    if c.nhcb_bounds_reconciled {
        let operation = if negate { "subtraction" } else { "addition" };
        annos.add(anno::mismatched_custom_buckets(operation));
    }
    Ok(())
}

/// The histogram at `t` between samples `a` and `b`, as Prometheus'
/// `interpolateHistograms`: for a counter that reset between them, `b`
/// scaled from zero.
pub(crate) fn interpolate(
    (t1, h1): &HPoint,
    (t2, h2): &HPoint,
    t: i64,
    counter: bool,
    annos: &Shared,
) -> Result<FloatHistogram, Incompatible> {
    if t == *t1 {
        return Ok(h1.clone());
    }
    if t == *t2 {
        return Ok(h2.clone());
    }
    let fraction = (t - t1) as f64 / (t2 - t1) as f64;
    let mut out = h2.clone();
    if counter && fh::detect_reset(h2, h1) {
        fh::mul(&mut out, fraction);
        return Ok(out);
    }
    combine(&mut out, h1, true, annos)?;
    fh::mul(&mut out, fraction);
    combine(&mut out, h1, false, annos)?;
    Ok(out)
}

/// The sum of the histograms just before each counter reset strictly
/// inside the window, as Prometheus' `correctForCounterResetsHistogram`;
/// `None` when there is none.
fn resets_correction(
    h: &[HPoint],
    first: usize,
    last: usize,
    left: &FloatHistogram,
    right: &FloatHistogram,
    b: HistBounds,
    annos: &Shared,
) -> Result<Option<FloatHistogram>, Incompatible> {
    let mut from = first + 1;
    let mut prev = left;
    // A smoothed start interpolated across a reset has counted it.
    if let (Some((t, h_first)), Some((_, next))) = (h.get(first), h.get(first + 1)) {
        if b.smoothed && *t < b.start && fh::detect_reset(next, h_first) {
            prev = next;
            from += 1;
        }
    }
    // The last sample is `right` (or what it was interpolated from).
    let Some(between) = h.get(from..last) else {
        return Ok(None);
    };
    let mut correction: Option<FloatHistogram> = None;
    let mut add = |x: &FloatHistogram| -> Result<(), Incompatible> {
        match correction.as_mut() {
            None => correction = Some(x.clone()),
            Some(c) => combine(c, x, false, annos)?,
        }
        Ok(())
    };
    for (_, x) in between {
        if fh::detect_reset(x, prev) {
            add(prev)?;
        }
        prev = x;
    }
    if fh::detect_reset(right, prev) {
        add(prev)?;
    }
    Ok(correction)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A histogram of `count` observations of 1 each (in the zero bucket).
    fn hist(count: f64) -> FloatHistogram {
        FloatHistogram {
            count,
            sum: count,
            zero_count: count,
            zero_threshold: 1e-128,
            ..FloatHistogram::default()
        }
    }

    fn counts(h: &[(i64, f64)]) -> Vec<HPoint> {
        h.iter().map(|&(t, c)| (t, hist(c))).collect()
    }

    #[test]
    fn anchored_increase_adds_the_histogram_before_a_reset() {
        // 10 at the start, 14 then a reset to 2, 5 at the end: 5 - 10 + 14.
        let h = counts(&[(0, 10.0), (20_000, 14.0), (40_000, 2.0), (60_000, 5.0)]);
        let b = HistBounds {
            start: 0,
            end: 60_000,
            smoothed: false,
        };
        let annos = Shared::default();
        let got = extended_histogram_rate(&h, b, true, None, "m", &annos).expect("a result");
        assert_eq!(got.count, 9.0);
        assert_eq!(got.counter_reset_hint, CounterResetHint::Gauge);
        let rate = extended_histogram_rate(&h, b, true, Some(60.0), "m", &annos).expect("a rate");
        assert_eq!(rate.count, 9.0 / 60.0);
    }

    #[test]
    fn a_smoothed_end_is_interpolated_and_a_reset_starts_from_zero() {
        let annos = Shared::default();
        let (a, b) = ((0, hist(10.0)), (10_000, hist(20.0)));
        let mid = interpolate(&a, &b, 5_000, true, &annos)
            .ok()
            .expect("interpolated");
        assert_eq!(mid.count, 15.0);
        let reset = (10_000, hist(4.0));
        let mid = interpolate(&a, &reset, 5_000, true, &annos)
            .ok()
            .expect("interpolated");
        assert_eq!(mid.count, 2.0);
    }
}
