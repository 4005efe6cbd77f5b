//! The expressions compared: selectors, range and instant functions,
//! aggregations, histograms, binary operators, subqueries, errors both must
//! refuse, and windows starting on a sample.

/// The expressions compared, each run as instant queries and as a range
/// query. `ordered` marks those whose vector order Prometheus guarantees.
pub(crate) fn expressions() -> Vec<(String, bool)> {
    let mut e: Vec<String> = Vec::new();
    let mut push = |s: &str| e.push(s.to_owned());

    // Literals and selectors.
    for s in [
        "1",
        "-2.5",
        "1 + 2 * 3",
        "2 ^ 3 ^ 2",
        "7 % 3",
        "\"a string\"",
        "diff_temperature",
        "diff_requests_total{method=\"get\"}",
        "diff_requests_total{method!=\"get\", job=~\"a.*\"}",
        "diff_requests_total{instance!~\"i[01]\"}",
        "{__name__=~\"diff_temp.*\"}",
        "{__name__=\"diff_requests_total\", job=\"web\"}",
        "diff_temperature offset 10m",
        "diff_temperature offset -5m",
        "diff_flaky",
        "diff_flaky offset 3m",
        "diff_build_info",
        "diff_latency_seconds_bucket{job=\"api\"}",
        "diff_nonexistent",
        "-diff_temperature",
        "diff_aligned",
    ] {
        push(s);
    }

    // Range-vector functions on counters.
    for f in [
        "rate", "irate", "increase", "resets", "changes", "delta", "idelta", "deriv",
    ] {
        for r in ["1m", "5m", "20m"] {
            push(&format!("{f}(diff_requests_total[{r}])"));
        }
    }
    push("predict_linear(diff_requests_total[10m], 600)");
    push("rate(diff_requests_total[1h])");
    push("increase(diff_requests_total{job=\"web\"}[30m] offset 7m)");
    push("rate(diff_latency_seconds_sum[5m]) / rate(diff_latency_seconds_count[5m])");

    // Range-vector functions on gauges, also across the stale marker and
    // the gap.
    for f in [
        "avg_over_time",
        "min_over_time",
        "max_over_time",
        "sum_over_time",
        "count_over_time",
        "last_over_time",
        "present_over_time",
        "stddev_over_time",
        "stdvar_over_time",
        "delta",
        "idelta",
        "deriv",
        "changes",
        "resets",
    ] {
        push(&format!("{f}(diff_temperature[5m])"));
        push(&format!("{f}(diff_flaky[10m])"));
    }
    for s in [
        "avg_over_time(diff_temperature[30m])",
        "stddev_over_time(diff_temperature[1h])",
        "quantile_over_time(0.9, diff_temperature[10m])",
        "quantile_over_time(0.25, diff_flaky[15m])",
        "quantile_over_time(0, diff_temperature[5m])",
        "quantile_over_time(1, diff_temperature[5m])",
        "predict_linear(diff_temperature[15m], 3600)",
        "absent_over_time(diff_flaky[5m])",
        "absent_over_time(diff_nonexistent[5m])",
        "absent_over_time(diff_temperature{zone=\"a\"}[1m])",
        "last_over_time(diff_flaky[1h])",
    ] {
        push(s);
    }

    // Instant-vector functions.
    for f in [
        "abs", "ceil", "floor", "round", "sgn", "sqrt", "ln", "log2", "log10", "exp", "sin", "cos",
        "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "deg",
        "rad",
    ] {
        push(&format!("{f}(diff_temperature / 100)"));
    }
    for s in [
        "round(diff_temperature, 0.5)",
        "round(diff_temperature, 3)",
        "exp(diff_temperature)",
        "sqrt(diff_temperature)",
        "ln(diff_temperature)",
        "clamp(diff_temperature, -20, 20)",
        "clamp(diff_temperature, 5, -5)",
        "clamp_min(diff_temperature, 0)",
        "clamp_max(diff_temperature, 0)",
        "pi()",
        "time()",
        "timestamp(diff_temperature)",
        "timestamp(diff_flaky)",
        "vector(1)",
        "vector(time())",
        "scalar(sum(diff_temperature))",
        "scalar(diff_temperature)",
        "absent(diff_nonexistent{job=\"x\"})",
        "absent(diff_temperature)",
        "absent(sum(diff_nonexistent))",
        "sort(diff_temperature)",
        "sort_desc(diff_temperature)",
        "sort_desc(rate(diff_requests_total[5m]))",
        "label_replace(diff_temperature, \"host\", \"h-$1\", \"instance\", \"i(.*)\")",
        "label_replace(diff_temperature, \"zone\", \"\", \"zone\", \".*\")",
        "label_replace(diff_temperature, \"x\", \"$1\", \"instance\", \"nomatch(.*)\")",
        "label_join(diff_temperature, \"iz\", \"-\", \"instance\", \"zone\")",
        "label_join(diff_requests_total, \"all\", \",\", \"job\", \"method\", \"instance\")",
        "minute()",
        "hour()",
        "day_of_week()",
        "day_of_month()",
        "day_of_year()",
        "days_in_month()",
        "month()",
        "year()",
        "minute(timestamp(diff_temperature))",
        "hour(diff_temperature * 1e7)",
        "day_of_week(diff_temperature * 1e7)",
        "day_of_month(diff_temperature * 1e7)",
        "day_of_year(diff_temperature * 1e7)",
        "days_in_month(diff_temperature * 1e7)",
        "month(diff_temperature * 1e7)",
        "year(diff_temperature * 1e7)",
    ] {
        push(s);
    }

    // Aggregations.
    for op in [
        "sum", "avg", "min", "max", "count", "group", "stddev", "stdvar",
    ] {
        push(&format!("{op}(diff_temperature)"));
        push(&format!("{op} by (job) (rate(diff_requests_total[5m]))"));
        push(&format!("{op} without (instance) (diff_requests_total)"));
    }
    for s in [
        "sum by (job, method) (increase(diff_requests_total[10m]))",
        "avg by (zone) (diff_temperature)",
        "count by (__name__) ({__name__=~\"diff_.*\"})",
        "topk(3, diff_temperature)",
        "bottomk(2, diff_temperature)",
        "topk by (job) (2, rate(diff_requests_total[5m]))",
        "bottomk without (method) (1, diff_requests_total)",
        "topk(1000, diff_temperature)",
        "quantile(0.3, diff_temperature)",
        "quantile by (job) (0.9, rate(diff_requests_total[5m]))",
        "quantile(2, diff_temperature)",
        "count_values(\"value\", round(diff_temperature))",
        "count_values by (zone) (\"v\", ceil(diff_temperature / 10))",
        "sum(diff_flaky)",
        "max by (instance) (diff_flaky)",
    ] {
        push(s);
    }

    // Histograms.
    for q in ["0", "0.5", "0.9", "0.99", "1"] {
        push(&format!(
            "histogram_quantile({q}, rate(diff_latency_seconds_bucket[5m]))"
        ));
    }
    for s in [
        "histogram_quantile(0.9, sum by (le) (rate(diff_latency_seconds_bucket[10m])))",
        "histogram_quantile(0.75, sum by (job, le) (increase(diff_latency_seconds_bucket[1h])))",
        "histogram_quantile(0.5, diff_latency_seconds_bucket)",
        "histogram_quantile(1.5, rate(diff_latency_seconds_bucket[5m]))",
        "histogram_quantile(-1, rate(diff_latency_seconds_bucket[5m]))",
    ] {
        push(s);
    }

    // Binary operators and vector matching.
    for s in [
        "diff_temperature * 2 - 1",
        "2 / diff_temperature",
        "diff_temperature % 3",
        "diff_temperature ^ 2",
        "atan2(diff_temperature, 10)",
        "diff_temperature atan2 diff_temperature",
        "diff_temperature > 0",
        "diff_temperature > bool 0",
        "diff_temperature == bool diff_temperature",
        "0 < diff_temperature",
        "1 < bool 2",
        "diff_temperature != -1000",
        "diff_temperature <= 5 or diff_temperature >= 10",
        "diff_requests_total{method=\"get\"} + ignoring(method) diff_requests_total{method=\"post\"}",
        "diff_requests_total{method=\"get\"} / on(job, instance) diff_requests_total{method=\"post\"}",
        "sum by (instance) (diff_requests_total) / on(instance) group_left sum by (instance, zone) (diff_temperature)",
        "diff_requests_total * on(instance) group_left(version) diff_build_info",
        "diff_build_info * on(instance) group_right(version) diff_requests_total",
        "diff_temperature and diff_temperature > 0",
        "diff_temperature and on(instance) diff_build_info{version=\"2.0\"}",
        "diff_temperature or diff_build_info",
        "diff_temperature unless on(zone) diff_temperature{zone=\"a\"}",
        "diff_requests_total unless ignoring(method) diff_requests_total{method=\"post\"}",
        "diff_flaky or vector(0)",
        "rate(diff_requests_total[5m]) > bool 0.5",
        "sum(rate(diff_requests_total[5m])) by (job) / ignoring(job) group_left sum(rate(diff_requests_total[5m]))",
    ] {
        push(s);
    }

    // Subqueries, @ and offsets on them.
    for s in [
        "max_over_time(rate(diff_requests_total[5m])[30m:1m])",
        "avg_over_time(diff_temperature[10m:])",
        "min_over_time(sum(diff_temperature)[20m:45s] offset 3m)",
        "min_over_time(sum(diff_temperature)[19m59s500ms:45s] offset 3m)",
        "deriv(sum(diff_requests_total)[15m:30s])",
        "rate(diff_requests_total[5m:15s])",
        "max_over_time(max_over_time(diff_temperature[5m])[20m:2m])",
        "count_over_time(diff_flaky[30m:1m])",
        "last_over_time(diff_temperature[10m:1m] @ start())",
        "diff_temperature @ end()",
        "diff_temperature @ start() offset 1m",
        "rate(diff_requests_total[5m] @ end())",
        // Ranges that are not a multiple of the step: no window starts on a
        // subquery point.
        "max_over_time(rate(diff_requests_total[5m])[29m59s500ms:1m])",
        "deriv(sum(diff_requests_total)[14m59s500ms:30s])",
        "rate(diff_requests_total[4m59s500ms:15s])",
        "max_over_time(max_over_time(diff_temperature[5m])[19m59s500ms:2m])",
        "count_over_time(diff_flaky[29m59s500ms:1m])",
        "sum_over_time(diff_temperature[9m59s500ms:10s])",
        "quantile_over_time(0.5, rate(diff_requests_total[2m])[59m59s500ms:1m])",
        "rate(diff_young_total[5m])",
        "increase(diff_young_total[10m])",
        "rate(diff_young_total[5m] offset -10m)",
    ] {
        push(s);
    }

    // Errors both must refuse alike.
    for s in [
        "rate(diff_temperature)",
        "sum(",
        "diff_requests_total{method=\"get\"} + on(job) diff_requests_total",
        "label_replace(diff_temperature, \"1bad\", \"x\", \"zone\", \".*\")",
        "label_replace(diff_temperature, \"\", \"x\", \"zone\", \".*\")",
        "label_replace(diff_temperature, \"x\", \"y\", \"zone\", \"(\")",
        "histogram_quantile(0.5, diff_temperature)",
        "topk(diff_temperature, diff_temperature)",
        "sum(diff_temperature) by (zone) + on(zone) group_left diff_temperature",
    ] {
        push(s);
    }

    // Windows starting exactly on a sample (see KNOWN_DIFFERENT).
    for s in [
        "count_over_time(diff_aligned[1m])",
        "sum_over_time(diff_aligned[5m])",
        "min_over_time(diff_aligned[1m])",
        "diff_aligned[1m]",
        "diff_temperature[2m]",
        "diff_flaky[5m]",
    ] {
        push(s);
    }

    e.into_iter()
        .map(|s| {
            let ordered = s.starts_with("sort");
            (s, ordered)
        })
        .collect()
}
