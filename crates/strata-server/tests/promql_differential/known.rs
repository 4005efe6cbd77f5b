//! The queries expected to answer differently from Prometheus 2.42, each
//! with the entry of docs/promql.md that says why.

/// Queries expected to differ, with the entry of "Known differences from
/// Prometheus" in docs/promql.md that says why. Strata follows Prometheus
/// 3.x; the reference is Debian's 2.42.
pub(crate) const KNOWN_DIFFERENT: &[(&str, &str)] = &[
    // Range windows, lookback and subquery ranges are left-open in 3.x,
    // (t - range, t]; 2.x also takes a sample exactly at t - range.
    // `diff_aligned` has samples on whole multiples of 15 s, and subquery
    // steps fall on multiples of their step, so these windows start on a
    // sample.
    (
        "count_over_time(diff_aligned[1m])",
        "docs/promql.md: left-open windows",
    ),
    (
        "sum_over_time(diff_aligned[5m])",
        "docs/promql.md: left-open windows",
    ),
    (
        "min_over_time(diff_aligned[1m])",
        "docs/promql.md: left-open windows",
    ),
    ("diff_aligned[1m]", "docs/promql.md: left-open windows"),
    (
        "max_over_time(rate(diff_requests_total[5m])[30m:1m])",
        "docs/promql.md: left-open windows",
    ),
    (
        "deriv(sum(diff_requests_total)[15m:30s])",
        "docs/promql.md: left-open windows",
    ),
    (
        "rate(diff_requests_total[5m:15s])",
        "docs/promql.md: left-open windows",
    ),
    (
        "max_over_time(max_over_time(diff_temperature[5m])[20m:2m])",
        "docs/promql.md: left-open windows",
    ),
    (
        "count_over_time(diff_flaky[30m:1m])",
        "docs/promql.md: left-open windows",
    ),
    (
        "avg_over_time(diff_temperature[10m:])",
        "docs/promql.md: left-open windows",
    ),
    (
        "min_over_time(sum(diff_temperature)[20m:45s] offset 3m)",
        "docs/promql.md: left-open windows",
    ),
    // 3.x caps the extrapolation to the window start before clamping it at
    // the counter's zero point; 2.42 clamps first.
    (
        "rate(diff_young_total[5m])",
        "docs/promql.md: rate zero point",
    ),
    (
        "increase(diff_young_total[10m])",
        "docs/promql.md: rate zero point",
    ),
    (
        "rate(diff_young_total[5m] offset -10m)",
        "docs/promql.md: rate zero point",
    ),
    // 3.x drops the metric name for `atan2` as for other arithmetic.
    (
        "diff_temperature atan2 diff_temperature",
        "docs/promql.md: atan2 metric name",
    ),
    // 3.x accepts any UTF-8 label name; 2.42 refuses `1bad`.
    (
        "label_replace(diff_temperature, \"1bad\", \"x\", \"zone\", \".*\")",
        "docs/promql.md: UTF-8 label names",
    ),
];
