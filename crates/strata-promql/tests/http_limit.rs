//! The `limit` parameter as Prometheus 3.16 answers it: `query` and
//! `query_range` return at most `limit` series, `series`, `labels` and
//! `label/{name}/values` at most `limit` entries, each with the warning
//! `results truncated due to limit` only when more existed; `0` is no
//! limit; a negative or non-integer limit is a 400 `bad_data` naming the
//! parameter. `status/tsdb` takes `limit` as the length of its top lists,
//! 1 to 10,000, with Prometheus' own messages.
// Functions of these tests may index: a panic is a failed test.
#![allow(clippy::indexing_slicing)]

use std::sync::Arc;

use axum::http::StatusCode;
use strata_codec::Label;
use strata_promql::MemSource;

#[path = "support/router_get.rs"]
mod router_get;
use router_get::get_text;

const T0: i64 = 1_700_000_000_000;
const WARNING: &str = r#","warnings":["results truncated due to limit"]}"#;

fn source() -> Arc<MemSource> {
    let s = MemSource::new();
    for job in ["a", "b", "c"] {
        let labels = [Label::new("__name__", "up"), Label::new("job", job)];
        for i in 0..3 {
            s.append(&labels, T0 + i * 15_000, 1.0);
        }
    }
    let labels = [Label::new("__name__", "load"), Label::new("host", "h")];
    s.append(&labels, T0, 0.5);
    Arc::new(s)
}

async fn get(uri: &str) -> (StatusCode, String) {
    get_text(source(), uri).await
}

/// The answer's `data` and whether it carries the truncation warning (and
/// nothing else beside `data`).
async fn data_and_warning(uri: &str) -> (serde_json::Value, bool) {
    let (status, body) = get(uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let warned = body.ends_with(WARNING);
    if !warned {
        assert!(json.get("warnings").is_none(), "{uri}: {body}");
    }
    (json["data"].clone(), warned)
}

fn count(data: &serde_json::Value) -> usize {
    let list = data.get("result").unwrap_or(data);
    list.as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn results_are_cut_to_the_limit_with_a_warning_when_more_existed() {
    let instant = "/api/v1/query?query=up&time=1700000030";
    let range = "/api/v1/query_range?query=up&start=1700000000&end=1700000030&step=15";
    // (endpoint, how many results it has unlimited)
    for (uri, all) in [
        (instant, 3),
        (range, 3),
        ("/api/v1/series?match[]=up", 3),
        ("/api/v1/series?match[]=up&match[]=load", 4),
        ("/api/v1/labels", 3),
        ("/api/v1/labels?match[]=up", 2),
        ("/api/v1/label/__name__/values", 2),
        ("/api/v1/label/job/values", 3),
    ] {
        for (limit, want, warned) in [
            ("", all, false),
            ("&limit=0", all, false),
            ("&limit=1", 1, true),
            (&format!("&limit={}", all - 1), all - 1, true),
            (&format!("&limit={all}"), all, false),
            ("&limit=100", all, false),
        ] {
            let uri = if uri.contains('?') {
                format!("{uri}{limit}")
            } else {
                format!("{uri}?{}", limit.trim_start_matches('&'))
            };
            let (data, warning) = data_and_warning(&uri).await;
            assert_eq!((count(&data), warning), (want, warned), "{uri}: {data}");
        }
    }

    // The first series in label order are the ones kept.
    let (_, body) = get("/api/v1/series?match[]=up&match[]=load&limit=2").await;
    assert_eq!(
        body,
        format!(
            r#"{{"status":"success","data":[{{"__name__":"load","host":"h"}},{{"__name__":"up","job":"a"}}]{WARNING}"#
        )
    );
    let (_, body) = get("/api/v1/label/job/values?limit=2").await;
    assert_eq!(
        body,
        format!(r#"{{"status":"success","data":["a","b"]{WARNING}"#)
    );
    let (_, body) = get(&format!("{range}&limit=1")).await;
    assert_eq!(
        body,
        format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"up","job":"a"}},"values":[[1700000000,"1"],[1700000015,"1"],[1700000030,"1"]]}}]}}{WARNING}"#
        )
    );

    // A scalar has no series to cut.
    let (data, warned) = data_and_warning("/api/v1/query?query=1&time=1&limit=1").await;
    assert_eq!(
        (data["resultType"].as_str(), warned),
        (Some("scalar"), false)
    );

    // The warning sits beside the query's own annotations.
    let (_, body) =
        get("/api/v1/query?query=quantile(2,up)%20or%20up&time=1700000030&limit=1").await;
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let warnings = json["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 2, "{body}");
    assert_eq!(warnings[1], "results truncated due to limit", "{body}");
}

#[tokio::test]
async fn a_bad_limit_is_bad_data_before_anything_else() {
    let not_negative = "invalid parameter \\\"limit\\\": limit must be non-negative";
    let syntax = |v: &str| {
        format!(
            "invalid parameter \\\"limit\\\": strconv.Atoi: parsing \\\"{v}\\\": invalid syntax"
        )
    };
    for uri in [
        // Read before the time, the step and the query, as Prometheus does.
        "/api/v1/query?query=sum(&time=yesterday",
        "/api/v1/query_range?query=up&start=1&end=0&step=0",
        "/api/v1/series?match[]=up&start=x",
        "/api/v1/labels?start=x",
        "/api/v1/label/job/values?start=x",
    ] {
        for (limit, error) in [
            ("-1", not_negative.to_string()),
            ("1.5", syntax("1.5")),
            ("ten", syntax("ten")),
            (
                "99999999999999999999",
                "invalid parameter \\\"limit\\\": strconv.Atoi: parsing \\\"99999999999999999999\\\": value out of range".to_string(),
            ),
        ] {
            let uri = format!("{uri}&limit={limit}");
            let (status, body) = get(&uri).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
            assert_eq!(
                body,
                format!(r#"{{"status":"error","errorType":"bad_data","error":"{error}"}}"#),
                "{uri}"
            );
        }
    }
    // `series` says a missing `match[]` first.
    let (_, body) = get("/api/v1/series?limit=-1").await;
    assert!(body.contains("no match[] parameter provided"), "{body}");
}

#[tokio::test]
async fn tsdb_status_limit_is_the_length_of_its_lists() {
    let lists = |data: &serde_json::Value| {
        data["seriesCountByLabelValuePair"]
            .as_array()
            .map_or(0, Vec::len)
    };
    // Label pairs: up, load, job=a, job=b, job=c, host=h.
    let (data, warned) = data_and_warning("/api/v1/status/tsdb").await;
    assert_eq!((lists(&data), warned), (6, false));
    let (data, warned) = data_and_warning("/api/v1/status/tsdb?limit=2").await;
    assert_eq!((lists(&data), warned), (2, false));
    assert_eq!(data["headStats"]["numSeries"], 4);
    let (data, _) = data_and_warning("/api/v1/status/tsdb?limit=10000").await;
    assert_eq!(lists(&data), 6);
    for (limit, error) in [
        ("0", "limit must be a positive number"),
        ("-3", "limit must be a positive number"),
        ("x", "limit must be a positive number"),
        ("10001", "limit must not exceed 10000"),
    ] {
        let (status, body) = get(&format!("/api/v1/status/tsdb?limit={limit}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{limit}: {body}");
        assert_eq!(
            body,
            format!(r#"{{"status":"error","errorType":"bad_data","error":"{error}"}}"#)
        );
    }
}
