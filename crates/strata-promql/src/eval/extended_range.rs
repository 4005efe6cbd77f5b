//! Selectors under the `anchored` and `smoothed` modifiers
//! ([`crate::range_modifier`]), as Prometheus 3.16 evaluates them.
//!
//! Both look past the window by the lookback delta, so that its ends have
//! values:
//! - `anchored`: the window `(start, end]` also holds the last sample at or
//!   before `start`, which stands for the value at `start`. `rate`,
//!   `increase` and `delta` take the difference of the values at the two
//!   ends, plus counter resets, without extrapolation; `changes` and
//!   `resets` count from the anchor.
//! - `smoothed`: the values at `start` and `end` are interpolated between
//!   the samples on either side of each (within the lookback). A smoothed
//!   instant selector interpolates at each step.
//!
//! Start timestamps are not stored, so Prometheus' start-timestamp resets
//! never apply here.

use promql_parser::parser::{MatrixSelector, VectorSelector};

use super::extended_histogram::{
    extended_histogram_rate, interpolate as interpolate_histograms, HistBounds,
};
use super::hist_range::resets_or_changes;
use super::selector::{histogram_window, window, RangeSeries};
use super::{check_matrix_same_labelset, total_points, Evaluator, Result};
use strata_codec::histogram::{CounterResetHint, FloatHistogram};

use crate::annotations::{self as anno, Shared};
use crate::error::QueryError;
use crate::range_modifier::RangeMode;
use crate::value::{get_label, HPoint, Matrix, MatrixSeries, Point, Samples};

/// The functions Prometheus allows on an anchored range selector.
const ANCHORED_FUNCTIONS: &[&str] = &["changes", "delta", "increase", "rate", "resets"];
/// The functions Prometheus allows on a smoothed range selector.
const SMOOTHED_FUNCTIONS: &[&str] = &["delta", "increase", "rate"];

fn word(mode: RangeMode) -> &'static str {
    match mode {
        RangeMode::Anchored => "anchored",
        RangeMode::Smoothed => "smoothed",
        RangeMode::Plain => "plain",
    }
}

impl Evaluator<'_> {
    /// The range function `name` of an anchored or smoothed selector.
    pub fn eval_extended_call(
        &mut self,
        name: &str,
        ms: &MatrixSelector,
        mode: RangeMode,
    ) -> Result<Matrix> {
        let allowed = match mode {
            RangeMode::Anchored => ANCHORED_FUNCTIONS,
            RangeMode::Smoothed => SMOOTHED_FUNCTIONS,
            RangeMode::Plain => &[],
        };
        if !allowed.contains(&name) {
            return Err(QueryError::exec(format!(
                "{} modifier can only be used with: {} - not with {name}",
                word(mode),
                allowed.join(", ")
            )));
        }
        let smoothed = mode == RangeMode::Smoothed;
        let input = self.range_input_from_selector(ms)?;
        let original = self.current_samples;
        let lookback = self.lookback;
        let steps: Vec<i64> = self.steps().collect();
        let mut out = Vec::new();
        for s in &input.series {
            self.check_deadline()?;
            let labels = s.labels.to_labels();
            let metric = get_label(&labels, "__name__");
            let samples = s.samples();
            let (mut points, mut histograms) = (Vec::new(), Vec::new());
            for &ts in &steps {
                let end = input.at.unwrap_or(ts).saturating_sub(input.offset);
                let start = end.saturating_sub(input.range);
                let maxt = if smoothed {
                    end.saturating_add(lookback)
                } else {
                    end
                };
                let mint = start.saturating_sub(lookback);
                let w = window(samples, mint, maxt);
                let hw = histogram_window(&s.h, mint, maxt);
                let bounds = Bounds {
                    start,
                    end,
                    smoothed,
                };
                let seconds = input.range as f64 / 1e3;
                let counter = name != "delta";
                let rate = (name == "rate").then_some(seconds);
                if matches!(name, "changes" | "resets") {
                    let Some((from, hfrom)) =
                        anchor(w.t, &hw.iter().map(|(t, _)| *t).collect::<Vec<_>>(), start)
                    else {
                        continue;
                    };
                    let (w, hw) = (w.slice(from, w.len()), hw.get(hfrom..).unwrap_or_default());
                    points.push(Point {
                        t: ts,
                        v: resets_or_changes(w, hw, name == "resets"),
                    });
                } else if hw.is_empty() {
                    if let Some(v) = extended_rate(w, bounds, counter) {
                        let v = rate.map_or(v, |seconds| v / seconds);
                        points.push(Point { t: ts, v });
                    }
                } else if !w.is_empty() {
                    self.annotations.add(anno::mixed_floats_histograms(metric));
                } else {
                    let b = HistBounds {
                        start,
                        end,
                        smoothed,
                    };
                    let annos = &self.annotations;
                    if let Some(h) = extended_histogram_rate(hw, b, counter, rate, metric, annos) {
                        histograms.push((ts, h));
                    }
                }
            }
            if !points.is_empty() || !histograms.is_empty() {
                self.add_samples(points.len() + histograms.len())?;
                out.push(MatrixSeries {
                    labels: s.labels.without_metric_name(),
                    points,
                    histograms,
                });
            }
        }
        check_matrix_same_labelset(&out)?;
        self.hold_samples(original + total_points(&out));
        Ok(out)
    }

    /// An anchored or smoothed range selector on its own (in an instant
    /// query): its samples inside the window, between the values at its
    /// two ends, as Prometheus' `extendFloats`.
    pub fn eval_extended_matrix_selector(
        &mut self,
        ms: &MatrixSelector,
        mode: RangeMode,
    ) -> Result<Matrix> {
        let input = self.range_input_from_selector(ms)?;
        let smoothed = mode == RangeMode::Smoothed;
        let end = input.at.unwrap_or(self.start).saturating_sub(input.offset);
        let start = end.saturating_sub(input.range);
        let maxt = if smoothed {
            end.saturating_add(self.lookback)
        } else {
            end
        };
        let mut out = Vec::new();
        for s in &input.series {
            if !s.h.is_empty() {
                return Err(QueryError::exec(format!(
                    "{} modifier is not supported with histograms",
                    word(mode)
                )));
            }
            let w = window(s.samples(), start.saturating_sub(self.lookback), maxt);
            let bounds = Bounds {
                start,
                end,
                smoothed,
            };
            let points = extend_floats(w, bounds);
            if !points.is_empty() {
                self.add_samples(points.len())?;
                out.push(MatrixSeries::floats(s.labels.to_labels(), points));
            }
        }
        Ok(out)
    }

    /// A smoothed instant selector: at each step, the value interpolated
    /// between the samples around the reference time (within the
    /// lookback either side), the last one when none follows, as
    /// Prometheus' `smoothSeries`.
    pub fn eval_smoothed_selector(&mut self, vs: &VectorSelector) -> Result<Matrix> {
        let at = self.at_ms(&vs.at);
        let offset = super::offset_ms(&vs.offset);
        let lookback = self.lookback;
        let steps: Vec<i64> = self.steps().collect();
        let mut out = Vec::new();
        for series in self.selector_series(vs)? {
            self.check_deadline()?;
            let s = RangeSeries::without_stale_markers(series);
            let samples = s.samples();
            let labels = s.labels.to_labels();
            let metric = get_label(&labels, "__name__");
            let (mut points, mut histograms) = (Vec::new(), Vec::new());
            for &ts in &steps {
                let r = at.unwrap_or(ts).saturating_sub(offset);
                let (mint, maxt) = (r.saturating_sub(lookback), r.saturating_add(lookback));
                let w = window(samples, mint, maxt);
                let hw = histogram_window(&s.h, mint, maxt);
                if !w.is_empty() && !hw.is_empty() {
                    self.annotations.add(anno::mixed_floats_histograms(metric));
                } else if hw.is_empty() {
                    if let Some(v) = value_at(w, r) {
                        points.push(Point { t: ts, v });
                    }
                } else if let Some(h) = histogram_at(hw, r, metric, &self.annotations) {
                    histograms.push((ts, h));
                }
            }
            if !points.is_empty() || !histograms.is_empty() {
                self.add_samples(points.len() + histograms.len())?;
                out.push(MatrixSeries {
                    labels,
                    points,
                    histograms,
                });
            }
        }
        Ok(out)
    }
}

/// A window's range `(start, end]` and how its ends are read.
#[derive(Clone, Copy)]
struct Bounds {
    start: i64,
    end: i64,
    smoothed: bool,
}

/// The histogram at `r` from the samples around it, as Prometheus'
/// `smoothSeries`: a sample at `r`; else interpolated between the samples
/// either side (as a counter unless both are gauges); else the last
/// before, its counter-reset hint forgotten.
fn histogram_at(hw: &[HPoint], r: i64, metric: &str, annos: &Shared) -> Option<FloatHistogram> {
    let i = hw.partition_point(|(t, _)| *t < r);
    if let Some((t, h)) = hw.get(i) {
        if *t == r {
            return Some(h.clone());
        }
    }
    let prev = hw.get(i.checked_sub(1)?)?;
    let Some(next) = hw.get(i) else {
        let mut h = prev.1.clone();
        h.counter_reset_hint = CounterResetHint::Unknown;
        return Some(h);
    };
    let gauge = CounterResetHint::Gauge;
    let counter = prev.1.counter_reset_hint != gauge || next.1.counter_reset_hint != gauge;
    if prev.1.uses_custom_buckets() != next.1.uses_custom_buckets() {
        annos.add(anno::mixed_exponential_custom(metric));
        return None;
    }
    match interpolate_histograms(prev, next, r, counter, annos) {
        Ok(h) => Some(h),
        Err(_) => {
            annos.add(anno::mixed_exponential_custom(metric));
            None
        }
    }
}

/// The value at `r` from the samples around it: a sample at `r`, else
/// interpolated between the samples either side, else the last before.
fn value_at(w: Samples<'_>, r: i64) -> Option<f64> {
    let i = w.t.partition_point(|&t| t < r);
    if w.t.get(i) == Some(&r) {
        return w.v.get(i).copied();
    }
    let prev = point(w, i.checked_sub(1)?)?;
    match point(w, i) {
        Some(next) => Some(interpolate(prev, next, r, false)),
        None => Some(prev.1),
    }
}

/// Sample `i` of `w`.
fn point(w: Samples<'_>, i: usize) -> Option<(i64, f64)> {
    Some((*w.t.get(i)?, *w.v.get(i)?))
}

/// The value at `t` on the line through two samples; for a counter that
/// reset between them, from zero.
fn interpolate((t1, y1): (i64, f64), (t2, y2): (i64, f64), t: i64, counter: bool) -> f64 {
    let y1 = if counter && y2 < y1 { 0.0 } else { y1 };
    y1 + (y2 - y1) * (t - t1) as f64 / (t2 - t1) as f64
}

/// Where an anchored `changes` or `resets` starts in a window's floats
/// (`t`) and histograms (`ht`), as Prometheus' `pickFirstSampleIndices`:
/// at the last sample of either kind at or before `start`, the anchor,
/// then those after it; none without a sample after `start`.
fn anchor(t: &[i64], ht: &[i64], start: i64) -> Option<(usize, usize)> {
    let (floats_before, hists_before) = (
        t.partition_point(|&x| x <= start),
        ht.partition_point(|&x| x <= start),
    );
    if floats_before >= t.len() && hists_before >= ht.len() {
        return None;
    }
    let last_float = floats_before.checked_sub(1).and_then(|i| t.get(i));
    let last_hist = hists_before.checked_sub(1).and_then(|i| ht.get(i));
    Some(match (last_float, last_hist) {
        (None, None) => (0, 0),
        (Some(f), h) if h.is_none_or(|h| f >= h) => (floats_before - 1, hists_before),
        _ => (floats_before, hists_before.saturating_sub(1)),
    })
}

/// The first and last samples that stand for the window's ends: the last
/// at or before the start (else the first), and for a smoothed window the
/// first at or after the end (else the last).
fn ends(w: Samples<'_>, b: Bounds) -> Option<(usize, usize)> {
    let mut last = w.len().checked_sub(1)?;
    let head = w.t.get(..last)?;
    let first = head.partition_point(|&t| t <= b.start).saturating_sub(1);
    if b.smoothed {
        last = head.partition_point(|&t| t < b.end);
    }
    let (first_t, last_t) = (*w.t.get(first)?, *w.t.get(last)?);
    if last_t <= b.start || (b.smoothed && first_t > b.end) {
        return None;
    }
    Some((first, last))
}

/// The value at the window's start: sample `first`, or for a smoothed
/// window one interpolated up to the start.
fn value_at_start(w: Samples<'_>, first: usize, b: Bounds, counter: bool) -> Option<f64> {
    let (t, v) = point(w, first)?;
    if b.smoothed && t < b.start {
        if let Some(next) = point(w, first + 1) {
            return Some(interpolate((t, v), next, b.start, counter));
        }
    }
    Some(v)
}

/// The value at the window's end: sample `last`, or when that is past the
/// end (smoothed) one interpolated back to it.
fn value_at_end(w: Samples<'_>, last: usize, b: Bounds, counter: bool) -> Option<f64> {
    let (t, v) = point(w, last)?;
    let prev = last.checked_sub(1).and_then(|p| point(w, p));
    match prev {
        Some(prev) if t > b.end && b.smoothed => Some(interpolate(prev, (t, v), b.end, counter)),
        Some(prev) if t > b.end => Some(prev.1),
        _ => Some(v),
    }
}

/// The samples strictly inside the window, `lo..hi`, between the two that
/// stand for its ends.
fn inside(w: Samples<'_>, (first, last): (usize, usize), b: Bounds) -> Option<(usize, usize)> {
    let lo = if *w.t.get(first)? <= b.start {
        first + 1
    } else {
        first
    };
    let hi = if *w.t.get(last)? >= b.end {
        last
    } else {
        last + 1
    };
    Some((lo, hi.max(lo)))
}

/// `increase` (`counter`) or `delta` over an anchored or smoothed window,
/// as Prometheus' `extendedRate`: the difference of the values at its ends,
/// plus, for a counter, the value before each reset.
fn extended_rate(w: Samples<'_>, b: Bounds, counter: bool) -> Option<f64> {
    let (first, last) = ends(w, b)?;
    let left = value_at_start(w, first, b, counter)?;
    let right = value_at_end(w, last, b, counter)?;
    let mut result = right - left;
    if counter {
        // The ends are the values just found.
        let (lo, hi) = inside(w, (first, last), b)?;
        let mut prev = left;
        for &v in w.v.get(lo..hi).unwrap_or_default().iter().chain([&right]) {
            if v < prev {
                result += prev;
            }
            prev = v;
        }
    }
    Some(result)
}

/// An anchored or smoothed selector's samples: the value at the window's
/// start, the samples strictly inside, and the value at its end, as
/// Prometheus' `extendFloats` (for which no series is a counter).
fn extend_floats(w: Samples<'_>, b: Bounds) -> Vec<Point> {
    let framed = || {
        let (first, last) = ends(w, b)?;
        let left = value_at_start(w, first, b, false)?;
        let right = value_at_end(w, last, b, false)?;
        Some((left, right, inside(w, (first, last), b)?))
    };
    let Some((left, right, (lo, hi))) = framed() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(hi - lo + 2);
    out.push(Point {
        t: b.start,
        v: left,
    });
    out.extend(w.slice(lo, hi).points());
    out.push(Point { t: b.end, v: right });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(points: &[(i64, f64)]) -> (Vec<i64>, Vec<f64>) {
        points.iter().copied().unzip()
    }

    #[test]
    fn anchored_increase_takes_the_value_at_the_start_and_adds_resets() {
        // 10 at 0 s anchors (0, 60 s]; the reset at 40 s adds 14.
        let (t, v) = samples(&[
            (0, 10.0),
            (20_000, 12.0),
            (30_000, 14.0),
            (40_000, 3.0),
            (60_000, 5.0),
        ]);
        let b = Bounds {
            start: 0,
            end: 60_000,
            smoothed: false,
        };
        assert_eq!(
            extended_rate(Samples::new(&t, &v), b, true),
            Some(5.0 - 10.0 + 14.0)
        );
        assert_eq!(extended_rate(Samples::new(&t, &v), b, false), Some(-5.0));
    }

    #[test]
    fn smoothed_increase_interpolates_both_ends() {
        // Samples every 10 s rising by 1; the window (5 s, 25 s] reads
        // 1.5 at its start and 3.5 at its end.
        let (t, v) = samples(&[(0, 1.0), (10_000, 2.0), (20_000, 3.0), (30_000, 4.0)]);
        let b = Bounds {
            start: 5_000,
            end: 25_000,
            smoothed: true,
        };
        assert_eq!(extended_rate(Samples::new(&t, &v), b, true), Some(2.0));
    }

    #[test]
    fn a_counter_reset_is_interpolated_from_zero() {
        let (t, v) = samples(&[(0, 10.0), (10_000, 2.0)]);
        let (a, b) = (point(Samples::new(&t, &v), 0).unwrap(), (10_000, 2.0));
        assert_eq!(interpolate(a, b, 5_000, true), 1.0);
        assert_eq!(interpolate(a, b, 5_000, false), 6.0);
    }

    #[test]
    fn no_sample_after_the_start_gives_nothing() {
        let (t, v) = samples(&[(0, 1.0), (10_000, 2.0)]);
        let b = Bounds {
            start: 10_000,
            end: 20_000,
            smoothed: false,
        };
        assert_eq!(extended_rate(Samples::new(&t, &v), b, true), None);
        assert!(anchor(&t, &[], 10_000).is_none());
    }

    #[test]
    fn the_anchor_is_the_last_sample_of_either_kind_at_the_start() {
        // Floats at 0 and 20 s, histograms at 10 and 30 s; the window
        // starts at 15 s: the histogram at 10 s anchors it.
        assert_eq!(
            anchor(&[0, 20_000], &[10_000, 30_000], 15_000),
            Some((1, 0))
        );
        assert_eq!(
            anchor(&[0, 20_000], &[10_000, 30_000], 25_000),
            Some((1, 1))
        );
        assert_eq!(anchor(&[20_000], &[30_000], 5_000), Some((0, 0)));
    }

    #[test]
    fn extended_floats_frame_the_window() {
        let (t, v) = samples(&[(0, 1.0), (10_000, 2.0), (20_000, 3.0), (30_000, 4.0)]);
        let b = Bounds {
            start: 5_000,
            end: 25_000,
            smoothed: true,
        };
        let got: Vec<(i64, f64)> = extend_floats(Samples::new(&t, &v), b)
            .iter()
            .map(|p| (p.t, p.v))
            .collect();
        assert_eq!(
            got,
            [(5_000, 1.5), (10_000, 2.0), (20_000, 3.0), (25_000, 3.5)]
        );
    }

    #[test]
    fn a_smoothed_value_is_carried_forward_past_the_last_sample() {
        let (t, v) = samples(&[(0, 1.0), (10_000, 2.0)]);
        let w = Samples::new(&t, &v);
        assert_eq!(value_at(w, 5_000), Some(1.5));
        assert_eq!(value_at(w, 10_000), Some(2.0));
        assert_eq!(value_at(w, 15_000), Some(2.0));
        assert_eq!(value_at(Samples::new(&t[1..], &v[1..]), 5_000), None);
    }
}
