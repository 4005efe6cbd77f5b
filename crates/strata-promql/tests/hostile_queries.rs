//! Queries that once crashed or could crash the engine, found by the
//! `promql_query` fuzz target or while writing it: each must be refused or
//! answered, never panic or overflow the stack.

use std::sync::Arc;

use strata_codec::Label;
use strata_promql::engine::{MAX_EXPR_DEPTH, MAX_OPERATORS};
use strata_promql::{Engine, MemSource, QueryError, QueryLimits};

fn engine() -> Engine {
    let s = MemSource::new();
    for minute in 0..=10 {
        s.append(&[Label::new("__name__", "up")], minute * 60_000, 1.0);
    }
    Engine::new(Arc::new(s), QueryLimits::default())
}

fn is_bad_data(r: &Result<strata_promql::QueryValue, QueryError>) -> bool {
    matches!(r, Err(QueryError::BadData(_)))
}

/// Queries nested `depth` levels deep, one per kind of node; a subquery
/// level is three nodes deep (call, subquery, parentheses), so that one is
/// nested to the last multiple of three at or past `depth`.
fn nested(depth: usize) -> Vec<(&'static str, String)> {
    let n = depth - 1;
    let k = n.div_ceil(3);
    vec![
        ("parens", format!("{}up{}", "(".repeat(n), ")".repeat(n))),
        ("unary", format!("{}up", "-".repeat(n))),
        ("binary", format!("up{}", " + up".repeat(n))),
        ("call", format!("{}up{}", "abs(".repeat(n), ")".repeat(n))),
        (
            "aggregate",
            format!("{}up{}", "sum(".repeat(n), ")".repeat(n)),
        ),
        (
            "subquery",
            format!("{}up{}", "max_over_time((".repeat(k), ")[2m:1m])".repeat(k)),
        ),
    ]
}

#[tokio::test]
async fn a_duration_out_of_range_is_bad_data() {
    let engine = engine();
    for q in [
        "up[1e30]",
        "up[NaN]",
        "up[Inf]",
        "up[0x1p70]",
        "up offset 1e300",
        "rate(up[5m])[1e30:1m]",
        "rate(up[5m])[5m:1e30]",
    ] {
        let r = engine.instant_query(q, 600_000, None).await;
        assert!(is_bad_data(&r), "{q}: {r:?}");
    }
}

#[tokio::test]
async fn nesting_at_the_limit_evaluates() {
    let engine = engine();
    // MAX_EXPR_DEPTH - 1 is a multiple of three, so that the subqueries
    // reach the limit exactly too.
    assert_eq!((MAX_EXPR_DEPTH - 1) % 3, 0);
    for (kind, q) in nested(MAX_EXPR_DEPTH) {
        let r = engine.instant_query(&q, 600_000, None).await;
        assert!(r.is_ok(), "{kind}: {r:?}");
        let r = engine.range_query(&q, 0, 600_000, 60_000, None).await;
        assert!(r.is_ok(), "{kind}: {r:?}");
    }
}

#[tokio::test]
async fn nesting_over_the_limit_is_bad_data() {
    let engine = engine();
    for depth in [MAX_EXPR_DEPTH + 1, 500, 5_000, 50_000] {
        for (kind, q) in nested(depth) {
            let r = engine.instant_query(&q, 600_000, None).await;
            assert!(is_bad_data(&r), "{kind} {depth}: {r:?}");
            let msg = r.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                msg.contains("nests") || msg.contains("operators, over the limit"),
                "{kind} {depth}: {msg}"
            );
        }
    }
}

#[tokio::test]
async fn brackets_in_strings_and_comments_do_not_count() {
    let engine = engine();
    let deep = "(".repeat(MAX_EXPR_DEPTH + 1);
    for q in [
        format!("label_replace(up, \"x\", \"{deep}\", \"y\", \".*\")"),
        format!("label_replace(up, 'x', '\\'{deep}', 'y', '.*')"),
        format!("label_replace(up, `x`, `{deep}`, `y`, `.*`)"),
        format!("up # {deep}\n"),
    ] {
        let r = engine.instant_query(&q, 600_000, None).await;
        assert!(r.is_ok(), "{q}: {r:?}");
    }
}

#[tokio::test]
async fn many_operators_are_bad_data() {
    let engine = engine();
    let q = format!("up{}", " and up".repeat(MAX_OPERATORS + 1));
    let r = engine.instant_query(&q, 600_000, None).await;
    assert!(is_bad_data(&r), "{r:?}");
    // Wide but shallow: operators in separate branches, under the limit.
    let term = "(up + up) * (up - up)";
    let q = vec![term; MAX_OPERATORS / 8].join(" or ");
    let r = engine
        .instant_query(&format!("sum({q})"), 600_000, None)
        .await;
    assert!(r.is_ok(), "{r:?}");
}

#[tokio::test]
async fn over_http_a_parser_panic_is_a_400() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    for uri in [
        "/api/v1/query?query=up%5B1e30%5D&time=60",
        "/api/v1/query_range?query=up%20offset%201e300&start=0&end=60&step=15",
        "/api/v1/series?match%5B%5D=up%5BNaN%5D",
    ] {
        let app = strata_promql::router(Arc::new(MemSource::new()), QueryLimits::default());
        let req = Request::get(uri).body(Body::empty()).expect("request");
        let resp = app.oneshot(req).await.expect("response");
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{uri}");
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains(r#""errorType":"bad_data""#), "{uri}: {body}");
    }
}
