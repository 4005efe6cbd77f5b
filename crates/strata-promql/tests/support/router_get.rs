//! One GET against the query API's router over a source, answered as its
//! status and body text.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use strata_promql::{router, MemSource, QueryLimits};
use tower::ServiceExt;

pub async fn get_text(source: Arc<MemSource>, uri: &str) -> (StatusCode, String) {
    let app = router(source, QueryLimits::default());
    let req = Request::builder()
        .uri(uri)
        .body(Body::empty())
        .expect("request");
    let resp = app.oneshot(req).await.expect("response");
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, String::from_utf8(bytes.to_vec()).expect("utf8"))
}
