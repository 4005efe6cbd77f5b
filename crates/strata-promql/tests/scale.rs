//! A range query over many series and steps finishes in reasonable time
//! (guards against per-step reloading or quadratic windows).

use std::sync::Arc;
use std::time::Instant;

use strata_codec::Label;
use strata_promql::{Engine, MemSource, QueryLimits, QueryValue};

#[tokio::test]
async fn many_series_many_steps() {
    let src = MemSource::new();
    for s in 0..200 {
        let labels = vec![
            Label::new("__name__", "req_total"),
            Label::new("instance", format!("i{s}")),
            Label::new("job", format!("j{}", s % 10)),
        ];
        let samples: Vec<(i64, f64)> = (0..2_000).map(|i| (i * 15_000, (i * s) as f64)).collect();
        src.add_series(&labels, &samples);
    }
    let engine = Engine::new(Arc::new(src), QueryLimits::default());
    let started = Instant::now();
    let v = engine
        .range_query(
            "sum by (job) (rate(req_total[5m])) / on(job) group_left count by (job) (req_total)",
            3_600_000,
            30_000_000,
            15_000,
            None,
        )
        .await
        .expect("query");
    let QueryValue::Matrix(m) = v else {
        panic!("expected a matrix");
    };
    assert_eq!(m.len(), 10);
    assert_eq!(m[0].points.len(), 1_761);
    // Generous: a debug build on a shared machine.
    assert!(
        started.elapsed().as_secs() < 60,
        "took {:?}",
        started.elapsed()
    );
    println!("took {:?}", started.elapsed());
}
