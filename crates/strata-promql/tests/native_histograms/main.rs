//! Native histograms through the engine and the HTTP API. Expected values
//! are worked out by hand or taken from Prometheus' own
//! `native_histograms.test` cases (named after the series there).
//!
//! The tests are here; beside them: the series they read (`series`), how
//! they query (`query`), and the comparisons of floats and buckets
//! (`compare`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod compare;
mod query;
mod series;

use std::sync::Arc;

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Span};
use strata_promql::{router, MemSource, QueryLimits, QueryValue};

use compare::{assert_buckets, assert_close, populated};
use query::{engine, float, get, histogram, instant};
use series::{hist, incr, labels, name, single, MIN};

#[tokio::test]
async fn histogram_functions_of_one_histogram() {
    let e = engine(single());
    let t = MIN;
    assert_eq!(float(&e, "histogram_count(single_histogram)", t).await, 4.0);
    assert_eq!(float(&e, "histogram_sum(single_histogram)", t).await, 5.0);
    assert_eq!(float(&e, "histogram_avg(single_histogram)", t).await, 1.25);
    assert_eq!(
        float(&e, "histogram_fraction(1, 2, single_histogram)", t).await,
        0.5
    );
    assert_eq!(
        float(&e, "histogram_fraction(0, 8, single_histogram)", t).await,
        1.0
    );
    assert_close(
        float(&e, "histogram_quantile(0.5, single_histogram)", t).await,
        std::f64::consts::SQRT_2,
        "median",
    );
    assert_eq!(
        float(&e, "histogram_quantile(1.5, single_histogram)", t).await,
        f64::INFINITY
    );
    let (_, annos) = instant(&e, "histogram_quantile(1.5, single_histogram)", t).await;
    assert_eq!(
        annos.warnings,
        vec!["PromQL warning: quantile value should be between 0 and 1, got 1.5".to_string()]
    );
    // The selector itself returns the histogram with its name.
    let (v, _) = instant(&e, "single_histogram", t).await;
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].labels.as_ref(), name("single_histogram").as_slice());
    // Functions of floats leave histograms out.
    let (v, _) = instant(&e, "abs(single_histogram)", t).await;
    assert!(v.is_empty());
    // Past the lookback the series is gone.
    let (v, _) = instant(&e, "single_histogram", 6 * MIN).await;
    assert!(v.is_empty());
}

#[tokio::test]
async fn histogram_stddev_and_stdvar() {
    let src = MemSource::new();
    // histogram_stddev_stdvar_1: {1, 2, 3, 4} at low resolution.
    src.append_histogram(
        &name("sd1"),
        0,
        hist(
            2,
            4.0,
            10.0,
            0,
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0],
        ),
    );
    // histogram_stddev_stdvar_4: ten negative observations.
    let mut neg = hist(0, 10.0, -112946.0, 0, &[]);
    let n = [
        0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0,
    ];
    neg.negative_spans = vec![Span::new(0, n.len() as u32)];
    neg.negative_buckets = n.to_vec();
    src.append_histogram(&name("sd4"), 0, neg);
    let e = engine(src);
    let t = MIN;
    assert_close(
        float(&e, "histogram_stddev(sd1)", t).await,
        1.0787993180043811,
        "stddev 1",
    );
    assert_close(
        float(&e, "histogram_stdvar(sd1)", t).await,
        1.163807968526718,
        "stdvar 1",
    );
    assert_close(
        float(&e, "histogram_stdvar(sd4)", t).await,
        759352122.1939945,
        "stdvar 4",
    );
}

#[tokio::test]
async fn rate_of_a_histogram_counter() {
    let e = engine(incr());
    let t = 50 * MIN;
    assert_eq!(float(&e, "histogram_count(incr_histogram)", t).await, 14.0);
    assert_eq!(float(&e, "histogram_sum(incr_histogram)", t).await, 24.0);
    // Read whole, reduced as read, and through a subquery.
    for q in [
        "rate(incr_histogram[10m])",
        "rate(incr_histogram[10m]) * 1",
        "rate(incr_histogram[10m:5m])",
    ] {
        let h = histogram(&e, q, t).await;
        assert_close(h.count, 1.0 / 300.0, q);
        assert_close(h.sum, 2.0 / 300.0, q);
        assert_buckets(
            &populated(&h.positive_spans, &h.positive_buckets),
            &[(1, 1.0 / 300.0)],
            q,
        );
        assert_eq!(h.counter_reset_hint, CounterResetHint::Gauge, "{q}");
    }
    let h = histogram(&e, "increase(incr_histogram[10m])", t).await;
    assert_close(h.count, 2.0, "increase");
    assert_close(
        float(&e, "histogram_quantile(0.5, rate(incr_histogram[10m]))", t).await,
        std::f64::consts::SQRT_2,
        "quantile of rate",
    );
    let (_, annos) = instant(&e, "rate(incr_histogram[10m])", t).await;
    assert!(annos.is_empty(), "{annos:?}");
    // delta expects gauges.
    let (_, annos) = instant(&e, "delta(incr_histogram[10m])", t).await;
    assert_eq!(
        annos.warnings,
        vec![
            "PromQL warning: this native histogram metric is not a gauge: \"incr_histogram\""
                .to_string()
        ]
    );
    // irate from the last two samples.
    let h = histogram(&e, "irate(incr_histogram[10m])", t).await;
    assert_close(h.count, 1.0 / 300.0, "irate");
    assert_eq!(float(&e, "resets(incr_histogram[1h])", t).await, 0.0);
    assert_eq!(float(&e, "changes(incr_histogram[1h])", t).await, 10.0);
    assert_eq!(
        float(&e, "count_over_time(incr_histogram[1h])", t).await,
        11.0
    );
    let last = histogram(&e, "last_over_time(incr_histogram[1h])", t).await;
    assert_eq!(last.count, 14.0);
    // A range query: one histogram per step, none before two samples.
    let v = e
        .range_query("rate(incr_histogram[10m])", 0, t, 5 * MIN, None)
        .await
        .unwrap();
    let QueryValue::Matrix(m) = v else { panic!() };
    assert_eq!(m.len(), 1);
    assert!(m[0].points.is_empty());
    assert_eq!(m[0].histograms.len(), 10);
}

#[tokio::test]
async fn rate_over_a_counter_reset_and_schemas() {
    let src = MemSource::new();
    let l = name("reset_histogram");
    src.append_histogram(&l, 0, hist(1, 10.0, 10.0, 1, &[5.0, 5.0]));
    // A reset: counts drop.
    src.append_histogram(&l, MIN, hist(1, 2.0, 2.0, 1, &[1.0, 1.0]));
    // A coarser schema: the rate is at schema 0.
    src.append_histogram(&l, 2 * MIN, hist(0, 6.0, 6.0, 1, &[6.0]));
    let e = engine(src);
    let h = histogram(&e, "increase(reset_histogram[3m])", 2 * MIN).await;
    assert_eq!(h.schema, 0);
    // Raw increase: 6 - 10 + 10 (the value before the reset) = 6 over
    // 120 s of samples, extrapolated: to the start by the 60 s average
    // (the zero point is further away), to the end by nothing.
    let factor = (120.0 + 60.0 + 0.0) / 120.0;
    assert_close(h.count, 6.0 * factor, "count");
    assert_buckets(
        &populated(&h.positive_spans, &h.positive_buckets),
        &[(1, 6.0 * factor)],
        "buckets",
    );
    assert_eq!(float(&e, "resets(reset_histogram[3m])", 2 * MIN).await, 1.0);
}

/// `histogram_rate` of Prometheus' tests: schema 1, zero and negative
/// buckets, every 15 s.
#[tokio::test]
async fn rate_with_zero_and_negative_buckets() {
    let src = MemSource::new();
    for k in 0..=100 {
        let k = f64::from(k);
        let mut h = hist(
            1,
            12.0 + 9.0 * k,
            18.4 + 18.4 * k,
            0,
            &[1.0 + k, 2.0 + k, 0.0, 1.0 + k, 1.0 + k],
        );
        h.zero_count = 2.0 + k;
        h.negative_spans = h.positive_spans.clone();
        h.negative_buckets = h.positive_buckets.clone();
        src.append_histogram(&name("histogram_rate"), (k as i64) * 15_000, h);
    }
    let e = engine(src);
    let h = histogram(&e, "rate(histogram_rate[45s])", 5 * MIN).await;
    let r = 0.06666666666666667;
    assert_close(h.count, 0.6, "count");
    assert_close(h.sum, 1.2266666666666652, "sum");
    assert_close(h.zero_count, r, "zero");
    let want = [(0, r), (1, r), (3, r), (4, r)];
    assert_buckets(
        &populated(&h.positive_spans, &h.positive_buckets),
        &want,
        "pos",
    );
    assert_buckets(
        &populated(&h.negative_spans, &h.negative_buckets),
        &want,
        "neg",
    );
}

#[tokio::test]
async fn sums_and_averages_of_histograms() {
    let src = MemSource::new();
    // incr_sum_histogram{number="1"/"2"}.
    for k in 0..=10 {
        let k_f = f64::from(k);
        for (n, step) in [("1", 1.0), ("2", 2.0)] {
            src.append_histogram(
                &labels(&[("__name__", "incr_sum_histogram"), ("number", n)]),
                i64::from(k) * 5 * MIN,
                hist(0, k_f, step * k_f, 0, &[1.0 + k_f]),
            );
        }
    }
    let e = engine(src);
    let t = 50 * MIN;
    assert_eq!(
        float(&e, "histogram_sum(sum(incr_sum_histogram))", t).await,
        30.0
    );
    assert_eq!(
        float(
            &e,
            "histogram_sum(sum(last_over_time(incr_sum_histogram[5m])))",
            t
        )
        .await,
        30.0
    );
    let avg = histogram(&e, "avg(incr_sum_histogram)", t).await;
    assert_eq!((avg.count, avg.sum), (10.0, 15.0));
    assert_eq!(avg.positive_buckets, vec![11.0]);
    assert_eq!(float(&e, "count(incr_sum_histogram)", t).await, 2.0);
    assert_eq!(float(&e, "group(incr_sum_histogram)", t).await, 1.0);
    let over = histogram(
        &e,
        "sum_over_time(incr_sum_histogram{number=\"1\"}[10m])",
        t,
    )
    .await;
    assert_eq!((over.count, over.sum), (19.0, 19.0));
    let avg_over = histogram(
        &e,
        "avg_over_time(incr_sum_histogram{number=\"1\"}[10m])",
        t,
    )
    .await;
    assert_eq!(avg_over.count, 9.5);
    // max ignores histograms, with an info.
    let (v, annos) = instant(&e, "max(incr_sum_histogram)", t).await;
    assert!(v.is_empty());
    assert_eq!(
        annos.infos,
        vec!["PromQL info: ignored histogram in max aggregation".to_string()]
    );
    // So do min_over_time and friends, on histograms alone without info.
    let (v, annos) = instant(&e, "max_over_time(incr_sum_histogram[10m])", t).await;
    assert!(v.is_empty() && annos.is_empty());
}

#[tokio::test]
async fn floats_and_histograms_mixed() {
    let src = MemSource::new();
    src.append(&labels(&[("__name__", "mixed"), ("i", "a")]), 0, 1.0);
    src.append_histogram(
        &labels(&[("__name__", "mixed"), ("i", "b")]),
        0,
        hist(0, 1.0, 1.0, 0, &[1.0]),
    );
    // One series turning from floats to histograms.
    let l = name("turning");
    src.append(&l, 0, 1.0);
    src.append(&l, MIN, 2.0);
    src.append_histogram(&l, 2 * MIN, hist(0, 1.0, 1.0, 0, &[1.0]));
    src.append_histogram(&l, 3 * MIN, hist(0, 2.0, 2.0, 0, &[2.0]));
    let e = engine(src);
    let (v, annos) = instant(&e, "sum(mixed)", MIN).await;
    assert!(v.is_empty());
    assert_eq!(
        annos.warnings,
        vec![
            "PromQL warning: encountered a mix of histograms and floats for aggregation"
                .to_string()
        ]
    );
    assert_eq!(float(&e, "count(mixed)", MIN).await, 2.0);
    let (v, _) = instant(&e, "sum by (i) (mixed)", MIN).await;
    assert_eq!(v.len(), 2);
    // The newest sample in the lookback, float or histogram.
    assert_eq!(float(&e, "turning", 90_000).await, 2.0);
    assert_eq!(histogram(&e, "turning", 3 * MIN).await.count, 2.0);
    let (v, annos) = instant(&e, "rate(turning[5m])", 3 * MIN).await;
    assert!(v.is_empty());
    assert_eq!(
        annos.warnings,
        vec![
            "PromQL warning: encountered a mix of histograms and floats for metric name \"turning\""
                .to_string()
        ]
    );
    assert_eq!(
        float(&e, "count_over_time(turning[5m])", 3 * MIN).await,
        4.0
    );
    assert_eq!(float(&e, "changes(turning[5m])", 3 * MIN).await, 3.0);
    let (v, annos) = instant(&e, "max_over_time(turning[5m])", 3 * MIN).await;
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].v, 2.0);
    assert_eq!(
        annos.infos,
        vec!["PromQL info: ignored histograms in a range containing both floats and histograms for metric name \"turning\"".to_string()]
    );
    // A window of histograms only: rate of histograms.
    assert_close(
        histogram(&e, "rate(turning[90s])", 3 * MIN).await.count,
        (1.0 + 0.5) / 90.0,
        "rate of the histogram part",
    );
}

#[tokio::test]
async fn stale_markers_end_histogram_series() {
    let src = MemSource::new();
    let l = name("h");
    src.append_histogram(&l, 0, hist(0, 1.0, 1.0, 0, &[1.0]));
    src.append_histogram(&l, MIN, FloatHistogram::stale_marker());
    let e = engine(src);
    assert_eq!(histogram(&e, "h", 30_000).await.count, 1.0);
    let (v, _) = instant(&e, "h", 2 * MIN).await;
    assert!(v.is_empty());
    // A range leaves the marker out.
    assert_eq!(float(&e, "count_over_time(h[5m])", 2 * MIN).await, 1.0);
}

#[tokio::test]
async fn binary_operators_with_histograms() {
    let src = single();
    src.append_histogram(&name("other"), 0, hist(0, 2.0, 1.0, 1, &[2.0]));
    src.append(&name("f"), 0, 3.0);
    let e = engine(src);
    let t = MIN;
    for q in ["single_histogram * 2", "2 * single_histogram"] {
        let h = histogram(&e, q, t).await;
        assert_eq!((h.count, h.sum), (8.0, 10.0), "{q}");
        assert_eq!(h.positive_buckets, vec![2.0, 4.0, 2.0], "{q}");
    }
    let h = histogram(&e, "single_histogram / 2", t).await;
    assert_eq!(h.positive_buckets, vec![0.5, 1.0, 0.5]);
    let h = histogram(&e, "single_histogram + ignoring(__name__) other", t).await;
    assert_eq!((h.count, h.sum), (6.0, 6.0));
    assert_eq!(h.positive_buckets, vec![1.0, 4.0, 1.0]);
    let h = histogram(&e, "single_histogram - ignoring(__name__) other", t).await;
    assert_eq!(h.counter_reset_hint, CounterResetHint::Gauge);
    assert_eq!(h.positive_buckets, vec![1.0, 1.0]);
    let h = histogram(&e, "single_histogram == single_histogram", t).await;
    assert_eq!(h.count, 4.0);
    let (v, _) = instant(&e, "single_histogram != single_histogram", t).await;
    assert!(v.is_empty());
    assert_eq!(
        float(&e, "single_histogram == bool single_histogram", t).await,
        1.0
    );
    let (v, annos) = instant(&e, "single_histogram > 1", t).await;
    assert!(v.is_empty());
    assert_eq!(
        annos.infos,
        vec!["PromQL info: incompatible sample types encountered for binary operator \">\": histogram > float".to_string()]
    );
    let (v, annos) = instant(&e, "single_histogram + on() f", t).await;
    assert!(v.is_empty());
    assert_eq!(
        annos.infos,
        vec!["PromQL info: incompatible sample types encountered for binary operator \"+\": histogram + float".to_string()]
    );
    let h = histogram(&e, "-single_histogram", t).await;
    assert_eq!(h.count, -4.0);
    // Float-only operations are unchanged.
    assert_eq!(float(&e, "f * 2", t).await, 6.0);
}

#[tokio::test]
async fn histogram_quantile_of_classic_and_native() {
    let src = single();
    for (le, c) in [("1", 1.0), ("2", 3.0), ("+Inf", 4.0)] {
        src.append(
            &labels(&[("__name__", "classic_bucket"), ("job", "a"), ("le", le)]),
            0,
            c,
        );
    }
    let e = engine(src);
    let (v, _) = instant(
        &e,
        "histogram_quantile(0.5, {__name__=~\"single_histogram|classic_bucket\"})",
        MIN,
    )
    .await;
    assert_eq!(v.len(), 2);
    assert!(v[0].labels.is_empty());
    assert_eq!(v[1].labels.as_ref(), labels(&[("job", "a")]).as_slice());
    assert_close(v[0].v, std::f64::consts::SQRT_2, "native");
    assert_close(v[1].v, 1.5, "classic");
    let (v, _) = instant(
        &e,
        "histogram_fraction(1, 2, {__name__=~\"single_histogram|classic_bucket\"})",
        MIN,
    )
    .await;
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].v, v[1].v), (0.5, 0.5));
    // A native histogram with the labels of a classic group drops both.
    let src = single();
    src.append(
        &labels(&[("__name__", "single_histogram"), ("le", "+Inf")]),
        0,
        4.0,
    );
    let (v, annos) = instant(
        &engine(src),
        "histogram_quantile(0.5, single_histogram)",
        MIN,
    )
    .await;
    assert!(v.is_empty());
    assert_eq!(
        annos.warnings,
        vec!["PromQL warning: vector contains a mix of classic and native histograms".to_string()]
    );
}

#[tokio::test]
async fn histograms_in_json() {
    let src = single();
    let mut wide = hist(0, 6.0, 3.5, 0, &[3.0, 0.0]);
    wide.zero_count = 1.0;
    wide.negative_spans = vec![Span::new(1, 1)];
    wide.negative_buckets = vec![2.0];
    src.append_histogram(&name("wide"), 0, wide);
    src.append_histogram(
        &name("nhcb"),
        0,
        FloatHistogram {
            schema: -53,
            count: 6.0,
            sum: 1e-7,
            positive_spans: vec![Span::new(0, 3)],
            positive_buckets: vec![1.0, 2.0, 3.0],
            custom_values: vec![0.5, 1e21],
            ..FloatHistogram::default()
        },
    );
    src.append(&name("fl"), 0, 1.0);
    src.append(&name("mixed_series"), 0, 1.0);
    src.append_histogram(&name("mixed_series"), 60_000, hist(0, 1.0, 1.0, 0, &[1.0]));
    let app = router(Arc::new(src), QueryLimits::default());
    assert_eq!(
        get(app.clone(), "/api/v1/query?query=single_histogram&time=60").await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"single_histogram\"},\"histogram\":[60,{\"count\":\"4\",\"sum\":\"5\",\"buckets\":[[0,\"0.5\",\"1\",\"1\"],[0,\"1\",\"2\",\"2\"],[0,\"2\",\"4\",\"1\"]]}]}]}}"
    );
    // Negative buckets first, then the zero bucket, then positive ones;
    // empty buckets are left out.
    assert_eq!(
        get(app.clone(), "/api/v1/query?query=wide&time=60").await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"wide\"},\"histogram\":[60,{\"count\":\"6\",\"sum\":\"3.5\",\"buckets\":[[1,\"-2\",\"-1\",\"2\"],[3,\"-0.001\",\"0.001\",\"1\"],[0,\"0.5\",\"1\",\"3\"]]}]}]}}"
    );
    // Custom buckets: the first includes its lower bound, -Inf.
    assert_eq!(
        get(app.clone(), "/api/v1/query?query=nhcb&time=60").await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"nhcb\"},\"histogram\":[60,{\"count\":\"6\",\"sum\":\"1e-07\",\"buckets\":[[3,\"-Inf\",\"0.5\",\"1\"],[0,\"0.5\",\"1e+21\",\"2\"],[0,\"1e+21\",\"+Inf\",\"3\"]]}]}]}}"
    );
    // A matrix: values and histograms side by side.
    assert_eq!(
        get(
            app.clone(),
            "/api/v1/query_range?query=mixed_series&start=0&end=60&step=60"
        )
        .await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"__name__\":\"mixed_series\"},\"values\":[[0,\"1\"]],\"histograms\":[[60,{\"count\":\"1\",\"sum\":\"1\",\"buckets\":[[0,\"0.5\",\"1\",\"1\"]]}]]}]}}"
    );
    // Warnings and infos end the answer.
    assert_eq!(
        get(app.clone(), "/api/v1/query?query=max(wide)&time=60").await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]},\"infos\":[\"PromQL info: ignored histogram in max aggregation\"]}"
    );
    assert_eq!(
        get(
            app,
            "/api/v1/query_range?query=sum(%7B__name__%3D~%22fl%7Cwide%22%7D)&start=60&end=60&step=60"
        )
        .await,
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]},\"warnings\":[\"PromQL warning: encountered a mix of histograms and floats for aggregation\"]}"
    );
}
