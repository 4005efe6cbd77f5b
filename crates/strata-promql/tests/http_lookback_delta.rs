//! `lookback_delta` on `query` and `query_range`, as Prometheus 3.16 reads
//! it: a duration or float seconds that replaces the engine's 5 minute
//! lookback for that query (zero or less keeps it), and a 400 `bad_data`
//! with Prometheus' message when it does not parse.

use std::sync::Arc;

use axum::http::StatusCode;
use strata_codec::Label;
use strata_promql::MemSource;

#[path = "support/router_get.rs"]
mod router_get;
use router_get::get_text;

const T0_SECS: i64 = 1_700_000_000;

/// One sample of `up` at `T0_SECS`.
fn source() -> Arc<MemSource> {
    let s = MemSource::new();
    let labels = [Label::new("__name__", "up"), Label::new("job", "a")];
    s.append(&labels, T0_SECS * 1000, 1.0);
    Arc::new(s)
}

async fn get(uri: &str) -> (StatusCode, serde_json::Value) {
    let (status, body) = get_text(source(), uri).await;
    (status, serde_json::from_str(&body).expect("JSON"))
}

/// The timestamps (seconds after `T0_SECS`) the answer has `up` at.
async fn seen_at(uri: &str) -> Vec<i64> {
    let (status, json) = get(uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {json}");
    let result = json.pointer("/data/result").and_then(|r| r.as_array());
    let mut times = Vec::new();
    for series in result.into_iter().flatten() {
        let points = match series.get("values") {
            Some(values) => values.as_array().cloned().unwrap_or_default(),
            None => series.get("value").into_iter().cloned().collect(),
        };
        for p in points {
            let t = p.get(0).and_then(serde_json::Value::as_f64);
            times.extend(t.map(|t| t as i64 - T0_SECS));
        }
    }
    times
}

#[tokio::test]
async fn lookback_delta_replaces_the_default_for_one_query() {
    let instant =
        |at: i64, lookback: &str| format!("/api/v1/query?query=up&time={}{lookback}", T0_SECS + at);
    // Past the default 5 minutes, found with a longer lookback, as a
    // duration or as float seconds.
    assert_eq!(seen_at(&instant(360, "")).await, Vec::<i64>::new());
    for lookback in ["10m", "600", "360.5", "1h"] {
        let uri = instant(360, &format!("&lookback_delta={lookback}"));
        assert_eq!(seen_at(&uri).await, [360], "{uri}");
    }
    // A shorter one hides what the default finds; the window stays
    // left-open, `(t - lookback, t]`.
    assert_eq!(seen_at(&instant(120, "")).await, [120]);
    assert_eq!(
        seen_at(&instant(120, "&lookback_delta=1m")).await,
        Vec::<i64>::new()
    );
    assert_eq!(seen_at(&instant(59, "&lookback_delta=1m")).await, [59]);
    assert_eq!(
        seen_at(&instant(60, "&lookback_delta=1m")).await,
        Vec::<i64>::new()
    );
    // Zero or less keeps the engine's default.
    for lookback in ["0", "0s", "-60"] {
        let uri = instant(120, &format!("&lookback_delta={lookback}"));
        assert_eq!(seen_at(&uri).await, [120], "{uri}");
    }

    let range = |lookback: &str| {
        format!(
            "/api/v1/query_range?query=up&start={T0_SECS}&end={}&step=60{lookback}",
            T0_SECS + 600
        )
    };
    let minutes = |n: i64| (0..n).map(|m| m * 60).collect::<Vec<_>>();
    assert_eq!(seen_at(&range("")).await, minutes(5));
    assert_eq!(seen_at(&range("&lookback_delta=7m")).await, minutes(7));
    assert_eq!(seen_at(&range("&lookback_delta=90s")).await, minutes(2));
}

#[tokio::test]
async fn a_bad_lookback_delta_is_bad_data() {
    for (lookback, error) in [
        (
            "abc",
            "error parsing lookback delta duration: cannot parse \"abc\" to a valid duration",
        ),
        (
            "5 m",
            "error parsing lookback delta duration: cannot parse \"5 m\" to a valid duration",
        ),
        (
            "1e10",
            "error parsing lookback delta duration: cannot parse \"1e10\" to a valid duration. It overflows int64",
        ),
    ] {
        for uri in [
            // Read before the query is parsed, as Prometheus reads it.
            format!("/api/v1/query?query=sum(&time={T0_SECS}"),
            format!("/api/v1/query_range?query=sum(&start={T0_SECS}&end={T0_SECS}&step=1"),
        ] {
            let uri = format!("{uri}&lookback_delta={}", lookback.replace(' ', "%20"));
            let (status, json) = get(&uri).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {json}");
            assert_eq!(
                json,
                serde_json::json!({"status": "error", "errorType": "bad_data", "error": error}),
                "{uri}"
            );
        }
    }
    // After the timeout, as Prometheus reads them.
    let (_, json) = get("/api/v1/query?query=up&time=1&timeout=x&lookback_delta=x").await;
    assert_eq!(
        json.get("error").and_then(|e| e.as_str()),
        Some("invalid parameter \"timeout\": cannot parse \"x\" to a valid duration"),
    );
}
