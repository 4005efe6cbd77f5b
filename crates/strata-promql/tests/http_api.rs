//! The Prometheus HTTP API: envelopes byte for byte, error types and status
//! codes, value formatting, limits.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use strata_codec::{Label, Matcher};
use strata_promql::{
    router, MemSource, QueryLimits, Queryable, Series, SourceError, STALE_NAN_BITS,
};
use tower::ServiceExt;

const T0: i64 = 1_700_000_000_000;

fn labels(pairs: &[(&str, &str)]) -> Vec<Label> {
    pairs.iter().map(|(n, v)| Label::new(*n, *v)).collect()
}

/// Percent-encodes a query for a URL.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn source() -> Arc<MemSource> {
    let s = MemSource::new();
    s.append(&labels(&[("__name__", "up"), ("job", "a")]), T0 + 123, 1.5);
    s.append(&labels(&[("__name__", "up"), ("job", "b")]), T0 + 123, 0.0);
    for i in 0..10 {
        s.append(
            &labels(&[("__name__", "c_total"), ("instance", "x")]),
            T0 + i * 15_000,
            (i * 10) as f64,
        );
    }
    s.append(
        &labels(&[("__name__", "odd"), ("path", "<a&b>")]),
        T0,
        f64::from_bits(STALE_NAN_BITS),
    );
    s.append(
        &labels(&[("__name__", "odd"), ("path", "<a&b>")]),
        T0 - 1000,
        2.0,
    );
    Arc::new(s)
}

async fn call_with(
    app: axum::Router,
    method: &str,
    uri: &str,
    form: Option<&str>,
) -> (StatusCode, String) {
    let mut req = Request::builder().method(method).uri(uri);
    let body = match form {
        Some(f) => {
            req = req.header("content-type", "application/x-www-form-urlencoded");
            Body::from(f.to_string())
        }
        None => Body::empty(),
    };
    send(app, req.body(body).expect("request")).await
}

/// Sends `req` and reads the JSON answer's status and body.
async fn send(app: axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let resp = app.oneshot(req).await.expect("response");
    let status = resp.status();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_string());
    assert_eq!(content_type.as_deref(), Some("application/json"));
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, String::from_utf8(bytes.to_vec()).expect("utf8"))
}

async fn get(uri: &str) -> (StatusCode, String) {
    call_with(router(source(), QueryLimits::default()), "GET", uri, None).await
}

#[tokio::test]
async fn instant_vector_envelope() {
    let (status, body) = get("/api/v1/query?query=up&time=1700000000.123").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1700000000.123,"1.5"]},{"metric":{"__name__":"up","job":"b"},"value":[1700000000.123,"0"]}]}}"#
    );
}

#[tokio::test]
async fn empty_vector_is_an_empty_list() {
    let (status, body) = get("/api/v1/query?query=nothing&time=1700000000").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#
    );
}

#[tokio::test]
async fn scalar_and_special_values() {
    for (q, want) in [
        ("1/0", "+Inf"),
        ("-1/0", "-Inf"),
        ("0/0", "NaN"),
        ("0.1%2B0.2", "0.30000000000000004"),
        ("1e-7", "1e-07"),
        ("0.000001", "0.000001"),
        ("1e21", "1e+21"),
        ("123456789012", "123456789012"),
        ("-2.5e-300", "-2.5e-300"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
    ] {
        let (status, body) = get(&format!("/api/v1/query?query={q}&time=1700000000")).await;
        assert_eq!(status, StatusCode::OK, "{q}");
        assert_eq!(
            body,
            format!(
                r#"{{"status":"success","data":{{"resultType":"scalar","result":[1700000000,"{want}"]}}}}"#
            ),
            "{q}"
        );
    }
}

#[tokio::test]
async fn string_result() {
    let (status, body) = get("/api/v1/query?query=%22hi%22&time=1700000000.5").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"string","result":[1700000000.500,"hi"]}}"#
    );
}

#[tokio::test]
async fn range_query_post_form_and_rfc3339() {
    let app = router(source(), QueryLimits::default());
    let (status, body) = call_with(
        app,
        "POST",
        "/api/v1/query_range",
        Some("query=c_total&start=2023-11-14T22:13:20Z&end=1700000030&step=15s"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"c_total","instance":"x"},"values":[[1700000000,"0"],[1700000015,"10"],[1700000030,"20"]]}]}}"#
    );
}

#[tokio::test]
async fn instant_range_selector_returns_a_matrix() {
    let (status, body) = get("/api/v1/query?query=c_total[30s]&time=1700000030").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"c_total","instance":"x"},"values":[[1700000015,"10"],[1700000030,"20"]]}]}}"#
    );
}

/// `stats=all` adds Prometheus' `stats` object to `data`: timings, the
/// samples the selectors loaded and the most samples held at once
/// (`peakSamples`, after `totalQueryableSamples` as Prometheus places it);
/// without it the answer is unchanged. Prometheus 3.16 answers the same
/// peaks for the first three, 32 and 19 for the last two.
#[tokio::test]
async fn stats_when_asked() {
    let range = "start=1700000000&end=1700000135&step=15&stats=all";
    for (uri, loaded, peak) in [
        (
            "/api/v1/query?query=c_total[30s]&time=1700000030&stats=all".to_string(),
            2,
            2,
        ),
        (
            "/api/v1/query?query=up&time=1700000000.123&stats=all".into(),
            2,
            2,
        ),
        (format!("/api/v1/query_range?query=c_total&{range}"), 10, 10),
        // The selector's points, the scalar's and the product's, held
        // together while the product is made.
        (format!("/api/v1/query_range?query=c_total*2&{range}"), 10, 30),
        // A subquery's points held beside the function's output.
        (
            "/api/v1/query_range?query=max_over_time(c_total[1m:15s])&start=1700000060&end=1700000135&step=15&stats=all".into(),
            10,
            15,
        ),
    ] {
        let (status, body) = get(&uri).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            body.contains(&format!(
                r#""samples":{{"totalQueryableSamples":{loaded},"peakSamples":{peak}}}"#
            )),
            "{uri}: {body}"
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let stats = &v["data"]["stats"];
        for t in [
            "evalTotalTime",
            "queryPreparationTime",
            "innerEvalTime",
            "execQueueTime",
            "execTotalTime",
        ] {
            assert!(
                stats["timings"][t].as_f64().is_some_and(|s| s >= 0.0),
                "{t}: {body}"
            );
        }
        assert!(v["data"]["result"].is_array(), "{body}");
        let (_, plain) = get(&uri.replace("&stats=all", "")).await;
        assert!(!plain.contains("stats"), "{plain}");
    }
}

#[tokio::test]
async fn go_json_escaping_and_staleness() {
    let (_, body) = get("/api/v1/query?query=odd&time=1699999999.5").await;
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"odd","path":"\u003ca\u0026b\u003e"},"value":[1699999999.500,"2"]}]}}"#
    );
    // The stale marker at T0 hides the older sample.
    let (_, body) = get("/api/v1/query?query=odd&time=1700000001").await;
    assert_eq!(
        body,
        r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#
    );
}

#[tokio::test]
async fn bad_data_errors() {
    let cases = [
        ("/api/v1/query?query=sum(&time=1", None),
        (
            "/api/v1/query_range?query=up&start=1&end=2",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"step\": cannot parse \"\" to a valid duration"}"#,
            ),
        ),
        (
            "/api/v1/query_range?query=up&start=1&end=2&step=0",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer"}"#,
            ),
        ),
        (
            "/api/v1/query_range?query=up&start=0&end=11001&step=1",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}"#,
            ),
        ),
        (
            "/api/v1/query_range?query=up&start=10&end=1&step=1",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"end\": end timestamp must not be before start time"}"#,
            ),
        ),
        (
            "/api/v1/query?query=up&time=yesterday",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"time\": invalid time value for 'time': cannot parse \"yesterday\" to a valid timestamp"}"#,
            ),
        ),
        (
            "/api/v1/query_range?query=up[5m]&start=1&end=2&step=1",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": invalid expression type \"range vector\" for range query, must be Scalar or instant Vector"}"#,
            ),
        ),
        (
            "/api/v1/series",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"no match[] parameter provided"}"#,
            ),
        ),
        (
            "/api/v1/series?match[]=%7Bjob%3D~%22.*%22%7D",
            Some(
                r#"{"status":"error","errorType":"bad_data","error":"match[] must contain at least one non-empty matcher"}"#,
            ),
        ),
    ];
    for (uri, want) in cases {
        let (status, body) = get(uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert!(
            body.starts_with(r#"{"status":"error","errorType":"bad_data","error":""#),
            "{body}"
        );
        if let Some(want) = want {
            assert_eq!(body, want, "{uri}");
        }
    }
}

#[tokio::test]
async fn unsupported_features_are_refused_by_name() {
    for (q, name) in [("start_timestamp(up)", "start_timestamp")] {
        let (status, body) = get(&format!(
            "/api/v1/query?query={}&time=1700000000",
            encode(q)
        ))
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{q}: {body}");
        assert!(body.contains(name), "{body}");
        assert!(body.contains("not supported"), "{body}");
    }
}

#[tokio::test]
async fn execution_errors_are_422() {
    let (status, body) = get("/api/v1/query?query=up%20%2B%20on()%20up&time=1700000000.123").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body.starts_with(r#"{"status":"error","errorType":"execution","error":"found duplicate series for the match group {} on the right hand-side"#),
        "{body}"
    );
}

#[tokio::test]
async fn too_many_samples() {
    let limits = QueryLimits {
        max_samples: 5,
        ..QueryLimits::default()
    };
    let app = router(source(), limits);
    let (status, body) = call_with(
        app,
        "GET",
        "/api/v1/query?query=sum_over_time(c_total[5m])&time=1700000200",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        body,
        r#"{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}"#
    );
}

#[tokio::test]
async fn custom_point_limit() {
    let limits = QueryLimits {
        max_points_per_series: 100,
        ..QueryLimits::default()
    };
    let app = router(source(), limits);
    let (status, body) = call_with(
        app,
        "GET",
        "/api/v1/query_range?query=up&start=0&end=101&step=1",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("exceeded maximum resolution of 100 points"),
        "{body}"
    );
}

/// A source whose reads fail or hang.
struct Broken {
    unavailable: bool,
    delay: Duration,
}

#[async_trait::async_trait]
impl Queryable for Broken {
    async fn select(&self, _: &[Matcher], _: i64, _: i64) -> Result<Vec<Series>, SourceError> {
        tokio::time::sleep(self.delay).await;
        if self.unavailable {
            Err(SourceError::Unavailable("bucket offline".into()))
        } else {
            Err(SourceError::Internal("corrupt chunk".into()))
        }
    }
    async fn series(&self, _: &[Matcher], _: i64, _: i64) -> Result<Vec<Vec<Label>>, SourceError> {
        Err(SourceError::Unavailable("bucket offline".into()))
    }
    async fn label_names(&self, _: &[Matcher], _: i64, _: i64) -> Result<Vec<String>, SourceError> {
        Err(SourceError::Internal("corrupt index".into()))
    }
    async fn label_values(
        &self,
        _: &str,
        _: &[Matcher],
        _: i64,
        _: i64,
    ) -> Result<Vec<String>, SourceError> {
        Err(SourceError::Internal("corrupt index".into()))
    }
}

#[tokio::test]
async fn storage_errors_and_timeouts() {
    let broken = |unavailable, delay| -> axum::Router {
        router(
            Arc::new(Broken { unavailable, delay }),
            QueryLimits::default(),
        )
    };
    let (status, body) = call_with(
        broken(true, Duration::ZERO),
        "GET",
        "/api/v1/query?query=up&time=1",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        r#"{"status":"error","errorType":"unavailable","error":"storage unavailable: bucket offline"}"#
    );

    let (status, body) =
        call_with(broken(false, Duration::ZERO), "GET", "/api/v1/labels", None).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body,
        r#"{"status":"error","errorType":"internal","error":"corrupt index"}"#
    );

    let (status, body) = call_with(
        broken(false, Duration::from_secs(5)),
        "GET",
        "/api/v1/query?query=up&time=1&timeout=50ms",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        r#"{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}"#
    );
}

#[tokio::test]
async fn metadata_apis() {
    let (status, body) = get("/api/v1/labels").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"status":"success","data":["__name__","instance","job","path"]}"#
    );

    let (_, body) = get("/api/v1/labels?match[]=up").await;
    assert_eq!(body, r#"{"status":"success","data":["__name__","job"]}"#);

    let (_, body) = get("/api/v1/label/__name__/values").await;
    assert_eq!(
        body,
        r#"{"status":"success","data":["c_total","odd","up"]}"#
    );

    let (_, body) = get("/api/v1/label/job/values?match[]=up%7Bjob%3D%22b%22%7D").await;
    assert_eq!(body, r#"{"status":"success","data":["b"]}"#);

    let (_, body) = get("/api/v1/label/nope/values").await;
    assert_eq!(body, r#"{"status":"success","data":[]}"#);

    let (_, body) = get("/api/v1/series?match[]=up&match[]=c_total").await;
    assert_eq!(
        body,
        r#"{"status":"success","data":[{"__name__":"c_total","instance":"x"},{"__name__":"up","job":"a"},{"__name__":"up","job":"b"}]}"#
    );

    let (_, body) = get("/api/v1/series?match[]=up&start=1800000000").await;
    assert_eq!(body, r#"{"status":"success","data":[]}"#);

    let (status, body) = get("/api/v1/metadata").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, r#"{"status":"success","data":{}}"#);
}

/// Prometheus' pretty-printer, as promtool 3.16's `promql format` prints
/// each of these.
#[tokio::test]
async fn format_query_pretty_prints() {
    for (q, want) in [
        (
            r#"sum(rate(foo{a="b"}[5m])) by (job)"#,
            r#"sum by (job) (rate(foo{a=\"b\"}[5m]))"#,
        ),
        ("up  ==   1", "up == 1"),
        ("a offset 5m", "a offset 5m"),
    ] {
        for (status, body) in [
            get(&format!("/api/v1/format_query?query={}", encode(q))).await,
            call_with(
                router(source(), QueryLimits::default()),
                "POST",
                "/api/v1/format_query",
                Some(&format!("query={}", encode(q))),
            )
            .await,
        ] {
            assert_eq!(status, StatusCode::OK, "{q}: {body}");
            assert_eq!(body, format!(r#"{{"status":"success","data":"{want}"}}"#));
        }
    }
    let (status, body) = get("/api/v1/format_query?query=sum(").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.starts_with(
            r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": "#
        ),
        "{body}"
    );
}

/// A multipart form body is read as a URL-encoded one is (Go's
/// `ParseMultipartForm`), its values before the URL's.
#[tokio::test]
async fn multipart_form_bodies() {
    let body = "--strata\r\n\
        Content-Disposition: form-data; name=\"query\"\r\n\r\n\
        up{job=\"a\"}\r\n\
        --strata\r\n\
        Content-Disposition: form-data; name=\"time\"\r\n\r\n\
        1700000000.123\r\n\
        --strata--\r\n";
    let req = Request::builder()
        .method("POST")
        .uri("/api/v1/query?query=nothing")
        .header("content-type", "multipart/form-data; boundary=strata")
        .body(Body::from(body))
        .expect("request");
    let (status, got) = send(router(source(), QueryLimits::default()), req).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(
        got,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1700000000.123,"1.5"]}]}}"#
    );
    let req = Request::builder()
        .method("POST")
        .uri("/api/v1/query")
        .header("content-type", "multipart/form-data; boundary=strata")
        .body(Body::from("--strata\r\nno end"))
        .expect("request");
    let (status, got) = send(router(source(), QueryLimits::default()), req).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{got}");
    assert!(
        got.contains("error parsing form values: multipart"),
        "{got}"
    );
}

/// A [`LongUrlQuery`] extension stands in for the URL query.
#[tokio::test]
async fn long_url_query_extension() {
    let mut req = Request::builder()
        .uri("/api/v1/query")
        .body(Body::empty())
        .expect("request");
    req.extensions_mut()
        .insert(strata_promql::http::params::LongUrlQuery(
            "query=up&time=1700000000.123".into(),
        ));
    let (status, got) = send(router(source(), QueryLimits::default()), req).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert!(got.contains(r#""job":"b""#), "{got}");
}
