//! Annotations: the warnings and infos a query returns beside its result,
//! with the texts of Prometheus 3's `util/annotations` (without the
//! position suffix Prometheus appends, as the parser gives no positions).

use std::sync::{Arc, Mutex};

use crate::float_histogram::{go_g, go_g_precision};
use crate::functions::histogram::MonotonicityFix;

/// The warnings and infos of one query, each text once, in the order met.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
}

impl Annotations {
    pub fn is_empty(&self) -> bool {
        self.warnings.is_empty() && self.infos.is_empty()
    }

    /// Adds an annotation: a warning or an info by its prefix.
    pub fn add(&mut self, text: String) {
        let list = if text.starts_with(INFO) {
            &mut self.infos
        } else {
            &mut self.warnings
        };
        if !list.contains(&text) {
            list.push(text);
        }
    }

    pub fn merge(&mut self, other: Annotations) {
        for t in other.warnings.into_iter().chain(other.infos) {
            self.add(t);
        }
    }
}

/// Annotations shared by the evaluator and the threads it starts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shared(Arc<Mutex<Collected>>);

/// What a query's evaluation has met so far.
#[derive(Debug, Default)]
struct Collected {
    annotations: Annotations,
    /// Classic buckets made monotonic, over all steps and series: one
    /// info, written when the query ends (Prometheus merges them so).
    monotonicity: Option<ForcedMonotonicity>,
}

impl Shared {
    pub fn add(&self, text: String) {
        if let Ok(mut c) = self.0.lock() {
            c.annotations.add(text);
        }
    }

    /// Records classic buckets that `histogram_quantile` made monotonic at
    /// `t_ms`.
    pub fn forced_monotonicity(&self, t_ms: i64, fix: MonotonicityFix) {
        if let Ok(mut c) = self.0.lock() {
            let m = c.monotonicity.get_or_insert(ForcedMonotonicity {
                min_t: t_ms,
                max_t: t_ms,
                fix,
                samples: 0,
            });
            m.min_t = m.min_t.min(t_ms);
            m.max_t = m.max_t.max(t_ms);
            m.fix.min_bucket = m.fix.min_bucket.min(fix.min_bucket);
            m.fix.max_bucket = m.fix.max_bucket.max(fix.max_bucket);
            m.fix.max_diff = m.fix.max_diff.max(fix.max_diff);
            m.samples += 1;
        }
    }

    pub fn take(&self) -> Annotations {
        self.0
            .lock()
            .map(|mut c| {
                let mut a = std::mem::take(&mut c.annotations);
                if let Some(m) = c.monotonicity.take() {
                    a.add(m.text());
                }
                a
            })
            .unwrap_or_default()
    }
}

/// Prometheus' `histogramQuantileForcedMonotonicityErr`.
#[derive(Debug)]
struct ForcedMonotonicity {
    min_t: i64,
    max_t: i64,
    fix: MonotonicityFix,
    samples: usize,
}

impl ForcedMonotonicity {
    fn text(&self) -> String {
        let time = |t: i64| {
            // Go's integer division, as Prometheus' `time.Unix(t/1000, 0)`.
            chrono::DateTime::from_timestamp(t / 1000, 0)
                .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_default()
        };
        format!(
            "{INFO}: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile), from buckets {} to {}, with a max diff of {}, over {} samples from {} to {}",
            go_g(self.fix.min_bucket),
            go_g(self.fix.max_bucket),
            go_g_precision(self.fix.max_diff, 2),
            self.samples,
            time(self.min_t),
            time(self.max_t),
        )
    }
}

const WARNING: &str = "PromQL warning";
const INFO: &str = "PromQL info";

/// Go's `%q` of a plain string.
fn quote(s: &str) -> String {
    format!("{s:?}")
}

pub(crate) fn mixed_floats_histograms(metric: &str) -> String {
    format!(
        "{WARNING}: encountered a mix of histograms and floats for metric name {}",
        quote(metric)
    )
}

pub(crate) fn mixed_floats_histograms_agg() -> String {
    format!("{WARNING}: encountered a mix of histograms and floats for aggregation")
}

pub(crate) fn mixed_classic_native(metric: &str) -> String {
    let base = format!("{WARNING}: vector contains a mix of classic and native histograms");
    if metric.is_empty() {
        base
    } else {
        format!("{base} for metric name {}", quote(metric))
    }
}

pub(crate) fn not_counter(metric: &str) -> String {
    format!(
        "{WARNING}: this native histogram metric is not a counter: {}",
        quote(metric)
    )
}

pub(crate) fn not_gauge(metric: &str) -> String {
    format!(
        "{WARNING}: this native histogram metric is not a gauge: {}",
        quote(metric)
    )
}

pub(crate) fn mixed_exponential_custom(metric: &str) -> String {
    format!(
        "{WARNING}: vector contains a mix of histograms with exponential and custom buckets schemas for metric name {}",
        quote(metric)
    )
}

pub(crate) fn incompatible_bucket_layout(op: &str) -> String {
    format!("{WARNING}: incompatible bucket layout encountered for binary operator {op}")
}

pub(crate) fn incompatible_types_in_bin_op(lhs: &str, op: &str, rhs: &str) -> String {
    format!(
        "{INFO}: incompatible sample types encountered for binary operator {}: {lhs} {op} {rhs}",
        quote(op)
    )
}

pub(crate) fn histogram_ignored_in_aggregation(aggregation: &str) -> String {
    format!("{INFO}: ignored histogram in {aggregation} aggregation")
}

pub(crate) fn histogram_ignored_in_mixed_range(metric: &str) -> String {
    format!(
        "{INFO}: ignored histograms in a range containing both floats and histograms for metric name {}",
        quote(metric)
    )
}

fn maybe_metric(base: String, metric: &str) -> String {
    if metric.is_empty() {
        base
    } else {
        format!("{base} for metric name {}", quote(metric))
    }
}

pub(crate) fn quantile_nan_result(metric: &str) -> String {
    maybe_metric(
        format!("{INFO}: input to histogram_quantile has NaN observations, result is NaN"),
        metric,
    )
}

pub(crate) fn quantile_nan_skew(metric: &str) -> String {
    maybe_metric(
        format!(
            "{INFO}: input to histogram_quantile has NaN observations, result is skewed higher"
        ),
        metric,
    )
}

pub(crate) fn fraction_nans(metric: &str) -> String {
    maybe_metric(
        format!("{INFO}: input to histogram_fraction has NaN observations, which are excluded from all fractions"),
        metric,
    )
}

/// `operation`: "addition", "subtraction" or "aggregation".
pub(crate) fn counter_reset_collision(operation: &str) -> String {
    format!("{WARNING}: conflicting counter resets during histogram {operation}")
}

pub(crate) fn mismatched_custom_buckets(operation: &str) -> String {
    format!("{INFO}: mismatched custom buckets were reconciled during {operation}")
}

pub(crate) fn sort_in_range_query() -> String {
    format!(
        "{WARNING}: sort is ineffective for range queries since results are always ordered by labels"
    )
}

pub(crate) fn invalid_quantile(q: f64) -> String {
    format!(
        "{WARNING}: quantile value should be between 0 and 1, got {}",
        crate::functions::format_go_float(q)
    )
}

/// `limit_ratio`'s ratio `r` outside [-1, 1], capped `to` -1 or 1.
pub(crate) fn invalid_ratio(r: f64, to: f64) -> String {
    format!(
        "{WARNING}: ratio value should be between -1 and 1, got {}, capping to {}",
        go_g(r),
        go_g(to)
    )
}

pub(crate) fn invalid_integral_strategy(strategy: f64) -> String {
    format!(
        "{WARNING}: strategy should be 0, 1, or 2 (default), using 2, got {}",
        go_g(strategy)
    )
}

pub(crate) fn bad_bucket_label(value: &str) -> String {
    format!(
        "{WARNING}: bucket label \"le\" is missing or has a malformed value of {}",
        quote(value)
    )
}
