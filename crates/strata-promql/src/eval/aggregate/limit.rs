//! `limitk` and `limit_ratio`: at each step, some samples of each group,
//! floats and histograms alike, kept whole with their own labels, as
//! Prometheus' `aggregationK` picks them. `limitk` takes the first `k` in
//! input order; `limit_ratio` takes each series whose label hash falls in
//! the ratio, so that the same series are taken at every step.

use promql_parser::parser::Expr;
use strata_codec::Label;

use super::{group_series, next_histogram, next_value, Grouping};
use crate::annotations::{self as anno, Shared};
use crate::error::QueryError;
use crate::eval::{Evaluator, Result};
use crate::value::{Matrix, MatrixSeries, Point};

/// Which of the two aggregations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    K,
    Ratio,
}

/// Checks the ratio of every step as Prometheus does before reading the
/// input: `false` when every step's is 0 (nothing to evaluate), an error
/// when one is NaN, a warning for the greatest above 1 and the least
/// below -1, which are capped.
pub(super) fn any_ratio(params: &[f64], annos: &Shared) -> Result<bool> {
    let (mut min, mut max) = (f64::MAX, -f64::MAX);
    for &p in params {
        // Go's math.Max/Min: NaN wins.
        (min, max) = if p.is_nan() {
            (f64::NAN, f64::NAN)
        } else {
            (min.min(p), max.max(p))
        };
        if min.is_nan() {
            break;
        }
    }
    if params.is_empty() || (min == 0.0 && max == 0.0) {
        return Ok(false);
    }
    if min.is_nan() {
        return Err(QueryError::exec("Ratio value is NaN"));
    }
    if max > 1.0 {
        annos.add(anno::invalid_ratio(max, 1.0));
    }
    if min < -1.0 {
        annos.add(anno::invalid_ratio(min, -1.0));
    }
    Ok(true)
}

/// Where a series falls in [0, 1]: its labels' hash over the largest hash,
/// as Prometheus' `HashRatioSampler`. The hash is Prometheus' `Labels.Hash`
/// in its default (`stringlabels`) build: xxHash64 of each name and value
/// in label order, each after its length (one byte below 255, else 255 and
/// three bytes little-endian).
fn sample_offset(labels: &[Label]) -> f64 {
    let mut bytes = Vec::with_capacity(
        labels
            .iter()
            .map(|l| l.name.len() + l.value.len() + 8)
            .sum(),
    );
    for s in labels.iter().flat_map(|l| [&l.name, &l.value]) {
        let len = s.len();
        match u8::try_from(len) {
            Ok(short) if short < 255 => bytes.push(short),
            _ => bytes.extend_from_slice(&[255, len as u8, (len >> 8) as u8, (len >> 16) as u8]),
        }
        bytes.extend_from_slice(s.as_bytes());
    }
    twox_hash::XxHash64::oneshot(0, &bytes) as f64 / u64::MAX as f64
}

/// Whether `limit_ratio(ratio, ...)` takes a series at `offset`: below a
/// positive ratio, or at or above one plus a negative one, so that `r`
/// and `r - 1` take complementary sets.
fn in_ratio(ratio: f64, offset: f64) -> bool {
    (ratio >= 0.0 && offset < ratio) || (ratio < 0.0 && offset >= 1.0 + ratio)
}

impl Evaluator<'_> {
    /// `limitk` or `limit_ratio` of `expr`, `params` holding each step's
    /// `k` or ratio (already checked).
    pub(super) fn eval_limit(
        &mut self,
        limit: Limit,
        expr: &Expr,
        grouping: &Grouping,
        params: &[f64],
    ) -> Result<Matrix> {
        let input = self.eval_matrix(expr)?;
        let (series_group, group_labels) = group_series(grouping, &input);
        let offsets: Vec<f64> = match limit {
            Limit::K => Vec::new(),
            Limit::Ratio => input.iter().map(|s| sample_offset(&s.labels)).collect(),
        };
        let mut out: Matrix = input
            .iter()
            .map(|s| MatrixSeries::floats(s.labels.clone(), Vec::new()))
            .collect();
        let mut cursors = vec![(0usize, 0usize); input.len()];
        let mut taken = vec![0usize; group_labels.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            let param = params.get(step).copied().unwrap_or(0.0);
            let k = match limit {
                Limit::K => (param as i64).min(input.len() as i64),
                Limit::Ratio => 0,
            };
            let ratio = param.clamp(-1.0, 1.0);
            if (limit == Limit::K && k < 1) || (limit == Limit::Ratio && param == 0.0) {
                continue;
            }
            taken.iter_mut().for_each(|n| *n = 0);
            let series = input.iter().zip(&mut cursors).zip(&series_group);
            for (si, ((s, (fc, hc)), &gi)) in series.enumerate() {
                let f = next_value(ts, &s.points, fc);
                let h = next_histogram(ts, &s.histograms, hc);
                if f.is_none() && h.is_none() {
                    continue;
                }
                let take = match limit {
                    Limit::K => taken.get_mut(gi).is_some_and(|n| {
                        *n += 1;
                        *n as i64 <= k
                    }),
                    Limit::Ratio => offsets.get(si).is_some_and(|&o| in_ratio(ratio, o)),
                };
                let Some(o) = out.get_mut(si).filter(|_| take) else {
                    continue;
                };
                match (f, h) {
                    (_, Some(h)) => o.histograms.push((ts, h.clone())),
                    (Some(v), None) => o.points.push(Point { t: ts, v }),
                    (None, None) => {}
                }
            }
        }
        out.retain(|s| !s.is_empty());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opposite_ratios_take_complementary_series() {
        for offset in [0.0, 0.1999, 0.2, 0.5, 0.8, 0.9999] {
            assert!(in_ratio(0.2, offset) != in_ratio(-0.8, offset), "{offset}");
        }
        assert!(in_ratio(1.0, 0.9999) && in_ratio(-1.0, 0.0));
    }

    #[test]
    fn offsets_are_prometheus_label_hashes() {
        // `labels.FromStrings(...).Hash()` of Prometheus 3.16's default build.
        let cases: [(&[(&str, &str)], u64); 3] = [
            (&[("__name__", "up")], 17066213849227247093),
            (
                &[
                    ("__name__", "http_requests"),
                    ("group", "canary"),
                    ("instance", "0"),
                    ("job", "api-server"),
                ],
                18045460440772787801,
            ),
            (&[("a", &"\0".repeat(300))], 15460099879258727816),
        ];
        for (labels, hash) in cases {
            let labels: Vec<Label> = labels.iter().map(|(n, v)| Label::new(*n, *v)).collect();
            assert_eq!(sample_offset(&labels), hash as f64 / u64::MAX as f64);
        }
    }
}
