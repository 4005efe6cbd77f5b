//! Limits that bound a query before it costs much: a subquery's points per
//! series (refused before anything is read), queries running at once (the
//! others wait their turn within their timeout), and the samples all
//! running queries hold together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata_codec::{Label, Matcher};
use strata_promql::{
    Engine, MemSource, QueryError, QueryGate, QueryLimits, Queryable, Series, SourceError,
};

/// A source whose `select` waits for `open` and counts its calls.
struct Held {
    inner: MemSource,
    open: tokio::sync::Semaphore,
    selects: AtomicUsize,
}

#[async_trait::async_trait]
impl Queryable for Held {
    async fn select(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        self.selects.fetch_add(1, Ordering::SeqCst);
        let _ = self.open.acquire().await.expect("open").forget();
        self.open.add_permits(1);
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

/// 100 series of 61 samples, minute apart; reads blocked until opened.
fn source(open: bool) -> Arc<Held> {
    let inner = MemSource::new();
    for s in 0..100 {
        let labels = vec![Label::new("__name__", "g"), Label::new("i", s.to_string())];
        for i in 0..=60 {
            inner.append(&labels, i * 60_000, i as f64);
        }
    }
    Arc::new(Held {
        inner,
        open: tokio::sync::Semaphore::new(usize::from(open)),
        selects: AtomicUsize::new(0),
    })
}

#[tokio::test]
async fn a_subquery_with_too_many_points_is_refused_before_reading() {
    let src = source(true);
    let engine = Engine::new(src.clone(), QueryLimits::default());
    let err = engine
        .instant_query(
            r#"count(last_over_time({__name__=~".+"}[30m:1ms]))"#,
            3_600_000,
            None,
        )
        .await
        .expect_err("refused");
    let QueryError::BadData(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("query.max_subquery_points (100000)"), "{msg}");
    assert!(msg.contains("1800000 points"), "{msg}");
    assert_eq!(src.selects.load(Ordering::SeqCst), 0, "nothing was read");
    // A range query's span counts: 1 h of 1 s steps over a 1 h range.
    let err = engine
        .range_query("max_over_time(g[1h:1s])", 0, 3_600_000 * 30, 600_000, None)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("max_subquery_points"), "{err}");
    // Within the limit, it runs.
    engine
        .instant_query("max_over_time(g[1h:1m])", 3_600_000, None)
        .await
        .expect("a subquery of 60 points per series");
}

#[tokio::test]
async fn queries_over_max_concurrent_wait_their_turn() {
    let src = source(false);
    let limits = QueryLimits {
        max_concurrent: 1,
        ..QueryLimits::default()
    };
    let gate = Arc::new(QueryGate::new(&limits));
    let engine = |l: &QueryLimits| Engine::with_gate(src.clone(), l.clone(), Arc::clone(&gate));
    let first = {
        let e = engine(&limits);
        tokio::spawn(async move { e.instant_query("sum(g)", 3_600_000, None).await })
    };
    while src.selects.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The second cannot start while the first runs: its timeout passes in
    // the queue.
    let err = engine(&limits)
        .instant_query("sum(g)", 3_600_000, Some(Duration::from_millis(100)))
        .await
        .expect_err("timed out in the queue");
    let QueryError::Timeout(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("query.max_concurrent"), "{msg}");
    assert_eq!(
        src.selects.load(Ordering::SeqCst),
        1,
        "the second never read"
    );
    // A third waits, and runs once the first is done.
    let third = {
        let e = engine(&limits);
        tokio::spawn(async move { e.instant_query("sum(g)", 3_600_000, None).await })
    };
    src.open.add_permits(1);
    first.await.unwrap().expect("first");
    third.await.unwrap().expect("third");
}

#[tokio::test]
async fn running_queries_share_one_samples_budget() {
    let src = source(true);
    // Each `g[1h]` holds 100 series x 60 samples = 6,000 (a function of it,
    // such as `count_over_time`, holds only its points: each series is
    // reduced as it is read).
    let limits = QueryLimits {
        max_samples_total: 10_000,
        ..QueryLimits::default()
    };
    let gate = Arc::new(QueryGate::new(&limits));
    let engine = Engine::with_gate(src.clone(), limits.clone(), Arc::clone(&gate));
    engine
        .instant_query("g[1h]", 3_600_000, None)
        .await
        .expect("alone it fits");
    assert_eq!(gate.held_samples(), 0, "given back");
    // While another query holds 6,000, this one does not fit.
    let _held = gate.reserve(6_000).expect("reserve");
    let err = engine
        .instant_query("g[1h]", 3_600_000, None)
        .await
        .expect_err("over the shared budget");
    let QueryError::Unavailable(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("query.max_samples_total (10000)"), "{msg}");
    // Reduced as it is read, the same selector holds 100 points.
    engine
        .instant_query("count_over_time(g[1h])", 3_600_000, None)
        .await
        .expect("its points fit beside the 6,000 held");
}
