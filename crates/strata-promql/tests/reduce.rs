//! Selectors reduced as they are read (`rate(x[5m])`, `sum(x)`): the source
//! gets a function that turns each series into its points at the query's
//! steps, and the answer is exactly the one evaluated over whole series.
//! Inside a subquery nothing is reduced, so a range query and the same
//! expression as a subquery over the same steps must agree point for point.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use strata_codec::{Label, Matcher, SeriesMap};
use strata_promql::{
    Engine, MemSource, QueryLimits, QueryValue, Queryable, Series, SourceError, STALE_NAN_BITS,
};

/// A source that counts whole and reduced reads.
struct Counting {
    inner: MemSource,
    whole: AtomicUsize,
    reduced: AtomicUsize,
}

#[async_trait::async_trait]
impl Queryable for Counting {
    async fn select(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        self.whole.fetch_add(1, Ordering::SeqCst);
        self.inner.select(m, mint, maxt).await
    }
    async fn select_mapped(
        &self,
        m: &[Matcher],
        mint: i64,
        maxt: i64,
        map: SeriesMap,
    ) -> Result<Vec<Series>, SourceError> {
        self.reduced.fetch_add(1, Ordering::SeqCst);
        self.inner.select_mapped(m, mint, maxt, map).await
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

/// A small deterministic generator (xorshift), so failures repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Counters with resets and gauges, 15 s apart with jitter, gaps and stale
/// markers, over four hours.
fn source(seed: u64) -> Arc<Counting> {
    let inner = MemSource::new();
    let mut rng = Rng(seed);
    for i in 0..12 {
        let name = if i % 2 == 0 { "c" } else { "g" };
        let labels = vec![
            Label::new("__name__", name),
            Label::new("host", format!("h{}", i % 3)),
            Label::new("i", i.to_string()),
        ];
        let mut v = 0.0;
        let mut t = rng.below(15_000) as i64;
        while t < 4 * 3_600_000 {
            match rng.below(100) {
                // A gap of a few minutes.
                0 => t += 60_000 * (1 + rng.below(8) as i64),
                // The series went away for a moment.
                1 => inner.append(&labels, t, f64::from_bits(STALE_NAN_BITS)),
                // A counter restart.
                2 if name == "c" => v = 0.0,
                _ => {
                    v += if name == "c" {
                        rng.below(100) as f64
                    } else {
                        rng.below(200) as f64 - 100.0
                    };
                    inner.append(&labels, t, v);
                }
            }
            t += 15_000 + rng.below(2_000) as i64 - 1_000;
        }
    }
    Arc::new(Counting {
        inner,
        whole: AtomicUsize::new(0),
        reduced: AtomicUsize::new(0),
    })
}

const START: i64 = 3_600_000;
const END: i64 = 3 * 3_600_000;
const STEP: i64 = 60_000;

/// Every point of a matrix answer, as comparable text (bits of the value,
/// so NaN equals NaN and -0 differs from 0).
fn points(v: QueryValue) -> Vec<(String, Vec<(i64, u64)>)> {
    let QueryValue::Matrix(m) = v else {
        panic!("not a matrix: {v:?}")
    };
    let mut out: Vec<_> = m
        .into_iter()
        .map(|s| {
            let labels = format!("{:?}", s.labels);
            let points = s.points.iter().map(|p| (p.t, p.v.to_bits())).collect();
            (labels, points)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn reduced_reads_answer_what_whole_series_answer() {
    let queries = [
        "c",
        "g offset 3m",
        "sum by (host) (g)",
        "rate(c[5m])",
        "increase(c[10m])",
        "irate(c[2m])",
        "resets(c[30m])",
        "changes(g[7m])",
        "delta(g[10m])",
        "idelta(g[1m])",
        "deriv(g[10m])",
        "count_over_time(g[7m])",
        "avg_over_time(g[3m] offset 2m)",
        "max_over_time(g[5m] @ 7200)",
        "min_over_time(g[5m])",
        "sum_over_time(c[1h])",
        "stddev_over_time(g[15m])",
        "last_over_time(g[1m])",
        "present_over_time(g[30s])",
        "sum by (host) (rate(c[5m]))",
        "topk(2, increase(c[1h]))",
        "rate(c[5m]) / on (i) group_left () count_over_time(c[5m])",
    ];
    for seed in [7, 11, 1_234_567] {
        let src = source(seed);
        let engine = Engine::new(src.clone(), QueryLimits::default());
        for q in queries {
            let reduced = engine
                .range_query(q, START, END, STEP, None)
                .await
                .unwrap_or_else(|e| panic!("{q}: {e}"));
            // The same steps as a subquery: `(start - step/2, end]` at
            // multiples of the step.
            let range_s = (END - START + STEP / 2) / 1000;
            let sub = format!("({q})[{range_s}s:{}s]", STEP / 1000);
            let whole = engine
                .instant_query(&sub, END, None)
                .await
                .unwrap_or_else(|e| panic!("{sub}: {e}"));
            let (reduced, whole) = (points(reduced), points(whole));
            assert!(!reduced.is_empty(), "{q}: no series");
            assert_eq!(reduced, whole, "{q} (seed {seed})");
        }
    }
}

#[tokio::test]
async fn only_selectors_used_at_the_query_steps_are_reduced() {
    let src = source(3);
    let engine = Engine::new(src.clone(), QueryLimits::default());
    // (query, reads reduced, reads whole)
    let cases = [
        ("rate(c[5m])", 1, 0),
        ("sum(g)", 1, 0),
        ("rate(c[5m]) + g", 2, 0),
        ("timestamp(g)", 0, 1),
        ("quantile_over_time(0.5, g[5m])", 0, 1),
        ("absent_over_time(g[5m])", 0, 1),
        ("max_over_time(rate(c[5m])[30m:1m])", 0, 1),
        ("max_over_time(rate(c[5m])[30m:1m]) + sum(g)", 1, 1),
    ];
    for (q, reduced, whole) in cases {
        src.reduced.store(0, Ordering::SeqCst);
        src.whole.store(0, Ordering::SeqCst);
        engine
            .range_query(q, START, END, STEP, None)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(
            (
                src.reduced.load(Ordering::SeqCst),
                src.whole.load(Ordering::SeqCst)
            ),
            (reduced, whole),
            "{q}"
        );
    }
    // A range selector on its own returns its samples.
    src.reduced.store(0, Ordering::SeqCst);
    let v = engine
        .instant_query("g[5m]", END, None)
        .await
        .expect("g[5m]");
    assert_eq!(src.reduced.load(Ordering::SeqCst), 0);
    let QueryValue::Matrix(m) = v else { panic!() };
    assert!(m.iter().all(|s| s.points.len() > 1), "raw samples");
}
