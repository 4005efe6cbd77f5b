//! Differential test of the PromQL engine: the same deterministic series are
//! remote-written to Strata and to the real Prometheus, then a few hundred
//! queries (instant at several times, range at several steps) run on both
//! and must agree value by value (relative tolerance 1e-9).
//!
//! Queries whose answers differ for a documented reason (see "Known
//! differences from Prometheus" in docs/promql.md) are listed in
//! [`KNOWN_DIFFERENT`]; they must still differ, so the list stays honest.
//! Any other difference fails the test.
//!
//! With `PROMQL_DIFF_HOLD=<seconds>` the test keeps both servers up that
//! long after writing (ports on stderr, run with `--nocapture`), to explore
//! a difference by hand.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::time::Instant;

use strata_codec::rand::SplitMix64;

use common::promql_compare::{answer_diff, query_answer, remote_write, WriteSeries};
use common::{api_time, now_ms, query_string, PrometheusProcess, StrataProcess};

/// The scrape interval of the generated series.
const INTERVAL_MS: i64 = 15_000;
/// Length of the generated history.
const SPAN_MS: i64 = 2 * 3600 * 1000;
/// Prometheus' stale marker.
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// Queries expected to differ, with the entry of "Known differences from
/// Prometheus" in docs/promql.md that says why. Strata follows Prometheus
/// 3.x; the reference is Debian's 2.42.
const KNOWN_DIFFERENT: &[(&str, &str)] = &[
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

fn labels(name: &str, pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out = vec![("__name__".to_owned(), name.to_owned())];
    out.extend(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    out
}

/// Scrape timestamps in `[start, end]` for the `idx`-th series: a fixed
/// phase and a few milliseconds of jitter, never on a whole second, so
/// query times (whole or half seconds) never fall on a window edge.
fn scrape_times(rng: &mut SplitMix64, idx: i64, start: i64, end: i64) -> Vec<i64> {
    let phase = 1 + (idx * 1733) % 14_000;
    let mut out = Vec::new();
    let mut t = start + phase;
    while t <= end {
        let mut ts = t + rng.below(40) as i64;
        if ts % 500 == 0 {
            ts += 1;
        }
        out.push(ts);
        t += INTERVAL_MS;
    }
    out
}

/// The generated data set: 41 series over [start, end].
fn generate(start: i64, end: i64) -> Vec<WriteSeries> {
    let mut rng = SplitMix64::new(0x05EE_D0F5_7A7A);
    let mut out = Vec::new();
    let mut idx = 0i64;
    let mut next_idx = || {
        idx += 1;
        idx
    };

    // Counters: 2 jobs × 3 instances × 2 methods; two of them reset.
    for job in ["api", "web"] {
        for instance in ["i0", "i1", "i2"] {
            for method in ["get", "post"] {
                let i = next_idx();
                let times = scrape_times(&mut rng, i, start, end);
                let reset_at = match i {
                    2 => Some(times.len() / 3),
                    7 => Some(times.len() * 3 / 4),
                    _ => None,
                };
                let mut v = (rng.below(1000)) as f64;
                let samples = times
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| {
                        if Some(k) == reset_at {
                            v = rng.below(3) as f64;
                        } else {
                            // Mostly whole increments, sometimes halves, now
                            // and then none.
                            v += (rng.below(40) as f64) * if k % 7 == 0 { 0.5 } else { 1.0 };
                        }
                        (t, v)
                    })
                    .collect();
                out.push(WriteSeries {
                    labels: labels(
                        "diff_requests_total",
                        &[("job", job), ("instance", instance), ("method", method)],
                    ),
                    samples,
                });
            }
        }
    }

    // Gauges: a random walk around a per-series level, some below zero.
    for instance in ["i0", "i1", "i2"] {
        for zone in ["a", "b"] {
            let i = next_idx();
            let times = scrape_times(&mut rng, i, start, end);
            let mut v = 10.0 * (i as f64) - 70.0;
            let samples = times
                .iter()
                .map(|&t| {
                    v += (rng.unit() - 0.5) * 4.0;
                    (t, (v * 1000.0).round() / 1000.0)
                })
                .collect();
            out.push(WriteSeries {
                labels: labels(
                    "diff_temperature",
                    &[("instance", instance), ("zone", zone)],
                ),
                samples,
            });
        }
    }

    // A classic histogram per job: cumulative buckets, _sum and _count.
    let bounds = ["0.1", "0.25", "0.5", "1", "2.5", "+Inf"];
    for job in ["api", "web"] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        // A long-running process: counts far from zero, so the extrapolation
        // of rate() never reaches the zero point (see `diff_young_total`).
        let mut counts = [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0];
        let mut sum = 4000.0;
        let mut bucket_samples: Vec<Vec<(i64, f64)>> = vec![Vec::new(); 6];
        let mut sum_samples = Vec::new();
        let mut count_samples = Vec::new();
        for &t in &times {
            let n = rng.below(20);
            for _ in 0..n {
                let obs = rng.unit().powi(2) * if job == "api" { 1.5 } else { 3.0 };
                sum += obs;
                for (b, bound) in bounds.iter().enumerate() {
                    let le: f64 = bound.parse().unwrap_or(f64::INFINITY);
                    if obs <= le {
                        counts[b] += 1.0;
                    }
                }
            }
            for b in 0..6 {
                bucket_samples[b].push((t, counts[b]));
            }
            sum_samples.push((t, sum));
            count_samples.push((t, counts[5]));
        }
        for (b, bound) in bounds.iter().enumerate() {
            out.push(WriteSeries {
                labels: labels(
                    "diff_latency_seconds_bucket",
                    &[("job", job), ("le", bound)],
                ),
                samples: std::mem::take(&mut bucket_samples[b]),
            });
        }
        out.push(WriteSeries {
            labels: labels("diff_latency_seconds_sum", &[("job", job)]),
            samples: sum_samples,
        });
        out.push(WriteSeries {
            labels: labels("diff_latency_seconds_count", &[("job", job)]),
            samples: count_samples,
        });
    }

    // A gauge that goes stale (a stale marker), stays away 20 minutes and
    // comes back; another with a 10-minute gap and no marker.
    for instance in ["i0", "i1"] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        let n = times.len();
        let mut samples = Vec::new();
        for (k, &t) in times.iter().enumerate() {
            let v = (k % 17) as f64 * 1.25 - 3.0;
            if instance == "i0" {
                if k == n * 2 / 5 {
                    samples.push((t, f64::from_bits(STALE_NAN)));
                    continue;
                }
                if k > n * 2 / 5 && k < n * 2 / 5 + 80 {
                    continue;
                }
            } else if k > n / 2 && k < n / 2 + 40 {
                continue;
            }
            samples.push((t, v));
        }
        out.push(WriteSeries {
            labels: labels("diff_flaky", &[("instance", instance)]),
            samples,
        });
    }

    // A counter of a process started an hour into the data, from zero:
    // rate() extrapolates towards its zero point.
    let i = next_idx();
    let times = scrape_times(&mut rng, i, start + SPAN_MS / 2, end);
    let mut v = 0.0;
    out.push(WriteSeries {
        labels: labels("diff_young_total", &[("instance", "i0")]),
        samples: times
            .iter()
            .map(|&t| {
                // The first value puts the zero point 7.5 to 16.5 s before the
                // first sample, where the two orders of clamping disagree.
                v += if v == 0.0 { 10.0 } else { rng.below(30) as f64 };
                (t, v)
            })
            .collect(),
    });

    // Info-style series for group_left joins.
    for (instance, version) in [("i0", "1.0"), ("i1", "1.1"), ("i2", "2.0")] {
        let i = next_idx();
        let times = scrape_times(&mut rng, i, start, end);
        out.push(WriteSeries {
            labels: labels(
                "diff_build_info",
                &[("instance", instance), ("version", version)],
            ),
            samples: times.iter().map(|&t| (t, 1.0)).collect(),
        });
    }

    // Samples exactly on multiples of 15 s: windows start on a sample.
    let first = start.div_euclid(INTERVAL_MS) * INTERVAL_MS + INTERVAL_MS;
    out.push(WriteSeries {
        labels: labels("diff_aligned", &[("instance", "i0")]),
        samples: (0..)
            .map(|k| first + k * INTERVAL_MS)
            .take_while(|&t| t <= end)
            .map(|t| (t, ((t / INTERVAL_MS) % 11) as f64))
            .collect(),
    });
    out
}

/// The expressions compared, each run as instant queries and as a range
/// query. `ordered` marks those whose vector order Prometheus guarantees.
fn expressions() -> Vec<(String, bool)> {
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

/// One API call to run on both servers.
struct Call {
    expr: String,
    ordered: bool,
    path: String,
    what: String,
}

fn calls(start: i64, end: i64) -> Vec<Call> {
    // Instant query times: whole and half seconds, inside the data, near
    // its start (partial windows), and after its end (lookback running out).
    let times = [
        end - 90_000,
        end - 47 * 60_000 + 500,
        start + 30 * 60_000 + 321_000,
        end + 4 * 60_000,
        start + 3 * 60_000,
        end - 61 * 60_000,
    ];
    // Range queries: (start, end, step) with steps that do and do not divide
    // the range.
    let ranges = [
        (start + 10 * 60_000, end, 60_000),
        (end - 30 * 60_000, end + 2 * 60_000, 15_000),
        (start, end, 137_000),
        (start + 20 * 60_000 + 500, start + 80 * 60_000, 15_000),
        (end - 90 * 60_000, end - 10 * 60_000, 300_000),
    ];
    let mut out = Vec::new();
    for (i, (expr, ordered)) in expressions().into_iter().enumerate() {
        for t in [times[i % times.len()], times[(i + 3) % times.len()]] {
            out.push(Call {
                path: format!(
                    "/api/v1/query?{}",
                    query_string(&[("query", &expr), ("time", &api_time(t))])
                ),
                what: format!("instant at {}", api_time(t)),
                expr: expr.clone(),
                ordered,
            });
        }
        for (s, e, step) in [ranges[i % ranges.len()], ranges[(i + 2) % ranges.len()]] {
            out.push(Call {
                path: format!(
                    "/api/v1/query_range?{}",
                    query_string(&[
                        ("query", &expr),
                        ("start", &api_time(s)),
                        ("end", &api_time(e)),
                        ("step", &format!("{}", step as f64 / 1000.0)),
                    ])
                ),
                what: format!(
                    "range {}..{} step {}s",
                    api_time(s),
                    api_time(e),
                    step / 1000
                ),
                expr: expr.clone(),
                // Range results are sorted by labels; `sort` does not apply.
                ordered: false,
            });
        }
    }
    out
}

#[test]
fn promql_matches_prometheus() {
    common::require_binary(common::PROMETHEUS_BIN, "prometheus");
    let started = Instant::now();
    // End on a whole hour at least five minutes ago, so that every query
    // time, even past the end of the data, is in the past, and every step
    // grid (subquery steps divide an hour) falls at the same place relative
    // to the data on every run: the answers do not depend on the clock.
    let end = ((now_ms() - 5 * 60_000) / 3_600_000) * 3_600_000;
    let start = end - SPAN_MS;
    let data = generate(start, end);
    let samples: usize = data.iter().map(|s| s.samples.len()).sum();

    let dir = tempfile::tempdir().expect("temp dir");
    let strata = StrataProcess::start(dir.path(), &[]);
    let prometheus = PrometheusProcess::start(
        "global:\n  scrape_interval: 1h\n",
        &["--web.enable-remote-write-receiver"],
    );
    // One request: a fresh Prometheus head accepts any time range in its
    // first append, and Strata has no bucket sealed yet.
    remote_write(strata.port, &data);
    remote_write(prometheus.port, &data);

    if let Ok(secs) = std::env::var("PROMQL_DIFF_HOLD") {
        eprintln!(
            "strata :{}, prometheus :{}, data {start}..{end}",
            strata.port, prometheus.port
        );
        std::thread::sleep(std::time::Duration::from_secs(secs.parse().unwrap_or(600)));
    }
    let calls = calls(start, end);
    let mut unexpected = Vec::new();
    let mut known_seen = std::collections::BTreeSet::new();
    let mut compared = 0usize;
    for call in &calls {
        let want = query_answer(prometheus.port, &call.path);
        let got = query_answer(strata.port, &call.path);
        compared += 1;
        let Some(diff) = answer_diff(&want, &got, call.ordered) else {
            continue;
        };
        if KNOWN_DIFFERENT.iter().any(|(q, _)| *q == call.expr) {
            known_seen.insert(call.expr.as_str());
            continue;
        }
        unexpected.push(format!(
            "{} ({}):\n  {}",
            call.expr,
            call.what,
            diff.replace('\n', "\n  ")
        ));
    }
    let stale: Vec<&str> = KNOWN_DIFFERENT
        .iter()
        .map(|(q, _)| *q)
        .filter(|q| !known_seen.contains(q))
        .collect();
    eprintln!(
        "promql_differential: {} series, {samples} samples; {compared} calls ({} expressions) \
         compared in {:?}; {} known differences seen, {} unexpected",
        data.len(),
        expressions().len(),
        started.elapsed(),
        known_seen.len(),
        unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} answers differ from Prometheus:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed as known differences but now agree with Prometheus (remove them from \
         KNOWN_DIFFERENT and docs/promql.md): {stale:?}"
    );
}
