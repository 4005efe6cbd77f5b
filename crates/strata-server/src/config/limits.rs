//! `[limits]` and `[query]`: what one write or one query may take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::{Config, Overrides};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    pub max_decoded_bytes: usize,
    /// Most series in one remote-write request (413 above it).
    pub max_series_per_request: usize,
    /// Most samples in one remote-write request (413 above it).
    pub max_samples_per_request: usize,
    /// Longest label name, in bytes (the series is rejected above it).
    pub max_label_name_length: usize,
    /// Longest label value, in bytes.
    pub max_label_value_length: usize,
    /// Most labels on one series, `__name__` included.
    pub max_labels_per_series: usize,
    /// Samples later than now plus this are rejected.
    #[serde(with = "humantime_serde")]
    pub max_future: Duration,
    /// Samples per second each tenant may write; 0 = no limit.
    pub ingest_rate_limit: u64,
    pub ingest_burst: u64,
    /// Most active series per tenant; 0 = no limit.
    pub max_active_series: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueryConfig {
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    pub max_samples: usize,
    /// Longest regular expression in a matcher, in bytes.
    pub max_regex_bytes: usize,
    /// Most points a subquery may evaluate per series.
    pub max_subquery_points: usize,
    /// Most query requests running at once on the node; the others wait
    /// their turn in the queue.
    pub max_concurrent: usize,
    /// Most query requests running at once per tenant; 0: no limit of its
    /// own (the node's).
    pub max_concurrent_per_tenant: usize,
    /// Most query requests waiting for a turn; more are refused (503).
    pub max_queued: usize,
    /// Longest a query request waits for a turn before it is refused (503).
    #[serde(with = "humantime_serde")]
    pub queue_timeout: Duration,
    /// Most samples all running queries may hold loaded at once.
    pub max_samples_total: usize,
    /// Whether Prometheus' experimental PromQL functions and aggregations
    /// are evaluated (`--enable-feature=promql-experimental-functions`).
    pub experimental_functions: bool,
    /// Whether the `fill`, `fill_left` and `fill_right` modifiers of binary
    /// operators are evaluated
    /// (`--enable-feature=promql-binop-fill-modifiers`).
    pub binop_fill_modifiers: bool,
    /// Whether the `anchored` and `smoothed` selector modifiers are
    /// evaluated (`--enable-feature=promql-extended-range-selectors`,
    /// always on since Prometheus 3.16).
    pub extended_range_selectors: bool,
    /// Whether duration expressions (`x[5m * 2]`, `y offset step()`) are
    /// evaluated (`--enable-feature=promql-duration-expr`, always on since
    /// Prometheus 3.16).
    pub duration_expr: bool,
    /// Whether unquoted metric and label names may hold dots and Unicode
    /// letters (`--enable-feature=promql-unquoted-utf8-names`).
    pub unquoted_utf8_names: bool,
}

impl QueryConfig {
    /// The engine's limits these settings give, for the API and the rules.
    pub fn limits(&self) -> strata_promql::QueryLimits {
        strata_promql::QueryLimits {
            timeout: self.timeout,
            max_samples: self.max_samples,
            max_regex_bytes: self.max_regex_bytes,
            max_subquery_points: self.max_subquery_points,
            max_concurrent: self.max_concurrent,
            max_samples_total: self.max_samples_total,
            experimental_functions: self.experimental_functions,
            binop_fill_modifiers: self.binop_fill_modifiers,
            extended_range_selectors: self.extended_range_selectors,
            duration_expr: self.duration_expr,
            unquoted_utf8_names: self.unquoted_utf8_names,
            ..strata_promql::QueryLimits::default()
        }
    }
}

#[cfg(test)]
impl Default for QueryConfig {
    fn default() -> Self {
        #[allow(clippy::expect_used)]
        Config::load(None, Vec::new(), &Overrides::default())
            .expect("the built-in defaults load")
            .query
    }
}
