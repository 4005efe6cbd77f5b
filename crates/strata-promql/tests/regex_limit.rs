//! The regular-expression limit: a `=~`/`!~` pattern longer than
//! `QueryLimits::max_regex_bytes`, in a query or in a `match[]` selector, is
//! a 400 `bad_data` naming the limit; one at the limit works; a short
//! pattern that compiles too big is a 400 as well.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use strata_codec::Label;
use strata_promql::{router, MemSource, QueryLimits};
use tower::ServiceExt;

const T0_SECS: i64 = 1_700_000_000;

fn source() -> Arc<MemSource> {
    let s = MemSource::new();
    for job in ["a", "b"] {
        let labels = [Label::new("__name__", "up"), Label::new("job", job)];
        s.append(&labels, T0_SECS * 1000, 1.0);
    }
    Arc::new(s)
}

/// Form-encodes one value.
fn encode(v: &str) -> String {
    url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// POSTs a form to `path` on a router with `limits`; status and body.
async fn post(limits: QueryLimits, path: &str, form: &str) -> (StatusCode, String) {
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form.to_owned()))
        .expect("request");
    let resp = router(source(), limits)
        .oneshot(req)
        .await
        .expect("response");
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, String::from_utf8(bytes.to_vec()).expect("utf8"))
}

/// A pattern of exactly `len` bytes that matches the job "a" only.
fn pattern(len: usize) -> String {
    format!("a|{}", "x".repeat(len - 2))
}

fn assert_over_limit(status: StatusCode, body: &str, len: usize, limit: usize) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.starts_with(r#"{"status":"error","errorType":"bad_data","error":"#),
        "{body}"
    );
    assert!(body.contains("max_regex_bytes"), "{body}");
    assert!(body.contains(&format!("is {len} bytes")), "{body}");
    assert!(body.contains(&format!("limit of {limit} bytes")), "{body}");
    // The answer does not echo the pattern back.
    assert!(body.len() < 1024, "{} bytes", body.len());
}

#[tokio::test]
async fn huge_regex_in_query_is_bad_data() {
    let limit = QueryLimits::default().max_regex_bytes;
    let len = limit + 1;
    for query in [
        format!("up{{job=~\"{}\"}}", pattern(len)),
        format!("sum(rate(up{{job!~\"{}\"}}[5m]))", pattern(len)),
        format!("up{{job=\"a\" or job=~\"{}\"}}", pattern(len)),
    ] {
        let form = format!("query={}&time={T0_SECS}", encode(&query));
        let (status, body) = post(QueryLimits::default(), "/api/v1/query", &form).await;
        assert_over_limit(status, &body, len, limit);

        let form = format!(
            "query={}&start={T0_SECS}&end={}&step=15",
            encode(&query),
            T0_SECS + 60
        );
        let (status, body) = post(QueryLimits::default(), "/api/v1/query_range", &form).await;
        assert_over_limit(status, &body, len, limit);
    }
}

#[tokio::test]
async fn huge_regex_in_match_is_bad_data() {
    let limit = QueryLimits::default().max_regex_bytes;
    let len = limit + 1;
    let form = format!(
        "match[]={}",
        encode(&format!("up{{job=~\"{}\"}}", pattern(len)))
    );
    for path in [
        "/api/v1/series",
        "/api/v1/labels",
        "/api/v1/label/job/values",
    ] {
        let (status, body) = post(QueryLimits::default(), path, &form).await;
        assert_over_limit(status, &body, len, limit);
        assert!(body.contains(r#"invalid parameter \"match[]\""#), "{body}");
    }
}

#[tokio::test]
async fn regex_at_the_limit_works() {
    let limit = QueryLimits::default().max_regex_bytes;
    let selector = format!("up{{job=~\"{}\"}}", pattern(limit));

    let form = format!("query={}&time={T0_SECS}", encode(&selector));
    let (status, body) = post(QueryLimits::default(), "/api/v1/query", &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""job":"a""#), "{body}");
    assert!(!body.contains(r#""job":"b""#), "{body}");

    let form = format!("match[]={}", encode(&selector));
    let (status, body) = post(QueryLimits::default(), "/api/v1/label/job/values", &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, r#"{"status":"success","data":["a"]}"#);
}

#[tokio::test]
async fn configured_limit_applies() {
    let limits = QueryLimits {
        max_regex_bytes: 8,
        ..QueryLimits::default()
    };
    let form = format!("query={}&time={T0_SECS}", encode("up{job=~\"a|xxxxxx\"}"));
    let (status, body) = post(limits.clone(), "/api/v1/query", &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let form = format!("query={}&time={T0_SECS}", encode("up{job=~\"a|xxxxxxx\"}"));
    let (status, body) = post(limits, "/api/v1/query", &form).await;
    assert_over_limit(status, &body, 9, 8);
}

#[tokio::test]
async fn pattern_that_compiles_too_big_is_bad_data() {
    // Twenty bytes that would compile to a million states.
    let selector = "up{job=~\"((a{100}){100}){100}\"}";
    let form = format!("query={}&time={T0_SECS}", encode(selector));
    let (status, body) = post(QueryLimits::default(), "/api/v1/query", &form).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains(r#""errorType":"bad_data""#), "{body}");

    let form = format!("match[]={}", encode(selector));
    let (status, body) = post(QueryLimits::default(), "/api/v1/series", &form).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains(r#""errorType":"bad_data""#), "{body}");
}
