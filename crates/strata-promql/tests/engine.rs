//! Engine behaviour beyond single results: how data is read, limits, and
//! refusals.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use strata_codec::{Label, Matcher};
use strata_promql::{
    Engine, MemSource, QueryError, QueryLimits, QueryValue, Queryable, Series, SourceError,
};

/// A source that records every `select`.
struct Recording {
    inner: MemSource,
    selects: AtomicUsize,
    ranges: Mutex<Vec<(i64, i64)>>,
}

#[async_trait::async_trait]
impl Queryable for Recording {
    async fn select(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        self.selects.fetch_add(1, Ordering::SeqCst);
        self.ranges.lock().expect("lock").push((mint, maxt));
        self.inner.select(m, mint, maxt).await
    }
    async fn series(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError> {
        self.inner.series(m, mint, maxt).await
    }
    async fn label_names(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.inner.label_names(m, mint, maxt).await
    }
    async fn label_values(
        &self,
        n: &str,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.inner.label_values(n, m, mint, maxt).await
    }
}

fn recording() -> Arc<Recording> {
    let inner = MemSource::new();
    let labels = vec![Label::new("__name__", "c_total"), Label::new("job", "a")];
    for i in 0..=120 {
        inner.append(&labels, i * 60_000, i as f64);
    }
    Arc::new(Recording {
        inner,
        selects: AtomicUsize::new(0),
        ranges: Mutex::new(Vec::new()),
    })
}

#[tokio::test]
async fn each_selector_is_read_once_for_the_whole_range() {
    let src = recording();
    let engine = Engine::new(src.clone(), QueryLimits::default());
    let v = engine
        .range_query(
            "rate(c_total[5m]) + c_total offset 10m",
            3_600_000,
            7_200_000,
            60_000,
            None,
        )
        .await
        .expect("query");
    let QueryValue::Matrix(m) = v else {
        panic!("expected a matrix");
    };
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].points.len(), 61);
    assert_eq!(src.selects.load(Ordering::SeqCst), 2);
    let mut ranges = src.ranges.lock().expect("lock").clone();
    ranges.sort();
    // The range selector reads (start - 5m, end]; the offset selector
    // (start - 10m - 5m lookback, end - 10m].
    assert_eq!(
        ranges,
        vec![
            (3_600_000 - 600_000 - 300_000 + 1, 7_200_000 - 600_000),
            (3_600_000 - 300_000 + 1, 7_200_000),
        ]
    );
}

#[tokio::test]
async fn subquery_selectors_read_the_subquery_range_once() {
    let src = recording();
    let engine = Engine::new(src.clone(), QueryLimits::default());
    engine
        .range_query(
            "max_over_time(rate(c_total[2m])[10m:1m])",
            3_600_000,
            7_200_000,
            60_000,
            None,
        )
        .await
        .expect("query");
    assert_eq!(src.selects.load(Ordering::SeqCst), 1);
    let ranges = src.ranges.lock().expect("lock").clone();
    assert_eq!(ranges, vec![(3_600_000 - 600_000 - 120_000 + 1, 7_200_000)]);
}

#[tokio::test]
async fn anchored_and_smoothed_selectors_read_a_lookback_beyond_their_window() {
    let src = recording();
    let engine = Engine::new(src.clone(), QueryLimits::default());
    let q = "increase(c_total[5m] anchored) + rate(c_total[5m] smoothed) + c_total smoothed";
    engine
        .range_query(q, 3_600_000, 7_200_000, 60_000, None)
        .await
        .expect("query");
    let mut ranges = src.ranges.lock().expect("lock").clone();
    ranges.sort();
    // Anchored: a lookback (5m) before the window; smoothed: one after
    // too; a smoothed instant selector: a lookback either side.
    assert_eq!(
        ranges,
        vec![
            (3_600_000 - 600_000 + 1, 7_200_000),
            (3_600_000 - 600_000 + 1, 7_200_000 + 300_000),
            (3_600_000 - 300_000 + 1, 7_200_000 + 300_000),
        ]
    );
}

#[tokio::test]
async fn anchored_and_smoothed_take_only_prometheus_functions() {
    let engine = Engine::new(recording(), QueryLimits::default());
    for (q, msg) in [
        (
            "deriv(c_total[5m] anchored)",
            "anchored modifier can only be used with: changes, delta, increase, rate, resets - not with deriv",
        ),
        (
            "changes(c_total[5m] smoothed)",
            "smoothed modifier can only be used with: delta, increase, rate - not with changes",
        ),
    ] {
        match engine.instant_query(q, 3_600_000, None).await {
            Err(QueryError::Execution(m)) => assert_eq!(m, msg, "{q}"),
            other => panic!("{q}: expected an execution error, got {other:?}"),
        }
    }
    // c_total rises by 1 a minute. At 60m30s, anchored reads 55 (at 55m)
    // and 60; smoothed interpolates 55.5 and 60.5: 5 both ways.
    for q in [
        "increase(c_total[5m] anchored)",
        "increase(c_total[5m] smoothed)",
    ] {
        let Ok(QueryValue::Vector(v)) = engine.instant_query(q, 3_630_000, None).await else {
            panic!("{q}: expected a vector");
        };
        assert_eq!(v.len(), 1, "{q}");
        assert!((v[0].v - 5.0).abs() < 1e-9, "{q}: {}", v[0].v);
    }
}

#[tokio::test]
async fn extended_range_selectors_off_are_refused_as_prometheus_refused_them() {
    let limits = QueryLimits {
        extended_range_selectors: false,
        ..QueryLimits::default()
    };
    let engine = Engine::new(recording(), limits);
    for (q, msg) in [
        (
            "rate(c_total[5m] anchored)",
            "anchored modifier is experimental and not enabled",
        ),
        (
            "c_total smoothed",
            "smoothed modifier is experimental and not enabled",
        ),
    ] {
        match engine.instant_query(q, 0, None).await {
            Err(QueryError::BadData(m)) => {
                assert!(m.ends_with(&format!("parse error: {msg}")), "{q}: {m}")
            }
            other => panic!("{q}: expected bad_data, got {other:?}"),
        }
    }
    assert!(engine
        .instant_query("rate(c_total[5m])", 0, None)
        .await
        .is_ok());
}

#[tokio::test]
async fn duration_expressions_take_the_query_step_and_range() {
    let engine = Engine::new(recording(), QueryLimits::default());
    // c_total rises by 1 a minute: [step() * 5] = [5m] holds 5 samples, 4
    // changes; step() is 0 in an instant query, where the range is refused.
    let v = engine
        .range_query(
            "changes(c_total[step() * 5])",
            3_600_000,
            3_720_000,
            60_000,
            None,
        )
        .await
        .expect("query");
    let QueryValue::Matrix(m) = v else {
        panic!("expected a matrix");
    };
    assert!(m[0].points.iter().all(|p| p.v == 4.0), "{:?}", m[0].points);
    match engine
        .instant_query("changes(c_total[step() * 5])", 3_600_000, None)
        .await
    {
        Err(QueryError::BadData(msg)) => {
            assert!(msg.ends_with("duration must be greater than 0"), "{msg}")
        }
        other => panic!("expected bad_data, got {other:?}"),
    }
    let off = Engine::new(
        recording(),
        QueryLimits {
            duration_expr: false,
            ..QueryLimits::default()
        },
    );
    match off
        .instant_query("c_total offset (1m * 2)", 3_600_000, None)
        .await
    {
        Err(QueryError::BadData(msg)) => assert!(
            msg.ends_with("parse error: experimental duration expression is not enabled"),
            "{msg}"
        ),
        other => panic!("expected bad_data, got {other:?}"),
    }
    assert!(off
        .instant_query("c_total offset 2m", 3_600_000, None)
        .await
        .is_ok());
}

#[tokio::test]
async fn unquoted_utf8_names_select_as_their_quoted_spelling() {
    let src = MemSource::new();
    let labels = [
        Label::new("__name__", "http.requests"),
        Label::new("service.name", "api"),
    ];
    src.append(&labels, 0, 7.0);
    let engine = Engine::new(Arc::new(src), QueryLimits::default());
    let q = "sum by (service.name) (http.requests{service.name=\"api\"})";
    let Ok(QueryValue::Vector(v)) = engine.instant_query(q, 0, None).await else {
        panic!("expected a vector");
    };
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].v, 7.0);
    assert_eq!(v[0].labels[0].name, "service.name");
    let off = Engine::new(
        Arc::new(MemSource::new()),
        QueryLimits {
            unquoted_utf8_names: false,
            ..QueryLimits::default()
        },
    );
    assert!(matches!(
        off.instant_query(q, 0, None).await,
        Err(QueryError::BadData(_))
    ));
}

#[tokio::test]
async fn sample_limit_applies_to_range_queries() {
    let src = recording();
    let limits = QueryLimits {
        max_samples: 100,
        ..QueryLimits::default()
    };
    let engine = Engine::new(src, limits);
    let err = engine
        .range_query("c_total", 0, 7_200_000, 60_000, None)
        .await
        .expect_err("too many samples");
    assert_eq!(
        err,
        QueryError::Execution(
            "query processing would load too many samples into memory in query execution".into()
        )
    );
    // A smaller range fits.
    engine
        .range_query("c_total", 0, 1_800_000, 60_000, None)
        .await
        .expect("fits");
}

#[tokio::test]
async fn unsupported_constructs_name_themselves() {
    let engine = Engine::new(recording(), QueryLimits::default());
    for (q, what) in [("holt_winters(c_total[5m], 0.5, 0.5)", "holt_winters")] {
        match engine.instant_query(q, 0, None).await {
            Err(QueryError::BadData(msg)) => {
                assert!(msg.contains(what), "{q}: {msg}");
            }
            other => panic!("{q}: expected bad_data, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn experimental_functions_off_are_refused_as_prometheus_refuses_them() {
    let limits = QueryLimits {
        experimental_functions: false,
        ..QueryLimits::default()
    };
    let engine = Engine::new(recording(), limits);
    for (q, msg) in [
        (
            "sort_by_label(c_total, \"job\")",
            "function \"sort_by_label\" is not enabled",
        ),
        ("c_total * step()", "function \"step\" is not enabled"),
        ("min_of(1, 2)", "function \"min_of\" is not enabled"),
        (
            "sum(limitk(1, c_total))",
            "limitk() is experimental and must be enabled with \
             --enable-feature=promql-experimental-functions",
        ),
    ] {
        match engine.instant_query(q, 0, None).await {
            Err(QueryError::BadData(m)) => assert!(m.ends_with(msg), "{q}: {m}"),
            other => panic!("{q}: expected bad_data, got {other:?}"),
        }
    }
    assert!(engine.instant_query("sort(c_total)", 0, None).await.is_ok());
}

#[tokio::test]
async fn fill_modifiers_off_are_refused_as_prometheus_refuses_them() {
    let limits = QueryLimits {
        binop_fill_modifiers: false,
        ..QueryLimits::default()
    };
    let engine = Engine::new(recording(), limits);
    for q in [
        "c_total + fill(0) c_total",
        "c_total / on(job) fill_left(1) c_total",
    ] {
        match engine.instant_query(q, 0, None).await {
            Err(QueryError::BadData(m)) => assert!(
                m.ends_with("parse error: binop fill modifiers are experimental and not enabled"),
                "{q}: {m}"
            ),
            other => panic!("{q}: expected bad_data, got {other:?}"),
        }
    }
    assert!(engine
        .instant_query("c_total + c_total", 0, None)
        .await
        .is_ok());
}

#[tokio::test]
async fn or_matchers_union_their_series() {
    let src = MemSource::new();
    src.append(&[Label::new("__name__", "m"), Label::new("a", "1")], 0, 1.0);
    src.append(&[Label::new("__name__", "m"), Label::new("b", "2")], 0, 2.0);
    src.append(&[Label::new("__name__", "m"), Label::new("c", "3")], 0, 3.0);
    let engine = Engine::new(Arc::new(src), QueryLimits::default());
    let v = engine
        .instant_query("sum(m{a=\"1\" or b=\"2\"})", 0, None)
        .await;
    match v {
        Ok(QueryValue::Vector(v)) => assert_eq!(v[0].v, 3.0),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn extreme_times_do_not_overflow() {
    let engine = Engine::new(recording(), QueryLimits::default());
    for q in [
        "c_total offset 100000y",
        "c_total offset -100000y",
        "rate(c_total[100000y])",
        "c_total @ 9000000000000000",
        "max_over_time(c_total[100000y:1d] offset 100000y)",
    ] {
        match engine.instant_query(q, 0, None).await {
            Ok(_) | Err(QueryError::BadData(_)) => {}
            Err(e) => panic!("{q}: {e}"),
        }
    }
    let r = engine
        .range_query("c_total", i64::MIN / 2, i64::MAX / 2, 1, None)
        .await;
    assert!(matches!(r, Err(QueryError::BadData(_))));
}
