//! How the tests query: an engine over a source, an instant query and its
//! only float or histogram, and a GET against the HTTP router.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use strata_codec::histogram::FloatHistogram;
use strata_promql::value::InstantSample;
use strata_promql::{Engine, MemSource, QueryLimits, QueryValue};
use tower::ServiceExt;

pub(crate) fn engine(src: MemSource) -> Engine {
    Engine::new(Arc::new(src), QueryLimits::default())
}

pub(crate) async fn instant(
    e: &Engine,
    q: &str,
    t: i64,
) -> (Vec<InstantSample>, strata_promql::Annotations) {
    let (v, stats) = e
        .instant_query_stats(q, t, None)
        .await
        .unwrap_or_else(|err| panic!("{q}: {err}"));
    match v {
        QueryValue::Vector(v) => (v, stats.annotations),
        other => panic!("{q}: not a vector: {other:?}"),
    }
}

/// The only float of an instant query.
pub(crate) async fn float(e: &Engine, q: &str, t: i64) -> f64 {
    let (v, _) = instant(e, q, t).await;
    match v.as_slice() {
        [s] if s.h.is_none() => s.v,
        other => panic!("{q}: expected one float, got {other:?}"),
    }
}

/// The only histogram of an instant query.
pub(crate) async fn histogram(e: &Engine, q: &str, t: i64) -> FloatHistogram {
    let (v, _) = instant(e, q, t).await;
    match v.as_slice() {
        [s] => {
            *s.h.clone()
                .unwrap_or_else(|| panic!("{q}: a float: {}", s.v))
        }
        other => panic!("{q}: expected one histogram, got {other:?}"),
    }
}

pub(crate) async fn get(app: axum::Router, uri: &str) -> String {
    let res = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}
