//! Arbitrary bytes as the parameters of a query API request, sent through
//! the whole router (form parsing, time, duration and step handling,
//! `match[]` selectors, the engine) with tight limits, and straight to the
//! time and duration parsers. It must never panic or hang; every answer must
//! be Prometheus' JSON envelope, and a 5xx only a timeout.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use libfuzzer_sys::fuzz_target;
use strata_codec::Label;
use strata_promql::http::params::{parse_duration, parse_time};
use strata_promql::{router, MemSource, QueryLimits};
use tokio::runtime::Runtime;
use tower::ServiceExt;

const PATHS: [&str; 6] = [
    "/api/v1/query",
    "/api/v1/query_range",
    "/api/v1/series",
    "/api/v1/labels",
    "/api/v1/label/job/values",
    "/api/v1/label/__name__/values",
];

/// Parameter names, in the order the input's fields fill them; `match[]`
/// takes several.
const NAMES: [&str; 9] = [
    "query", "time", "start", "end", "step", "timeout", "match[]", "match[]", "match[]",
];

struct Harness {
    runtime: Runtime,
    app: Router,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let_caught_parser_panic_through();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let source = MemSource::new();
        for (job, instance) in [("api", "0"), ("api", "1"), ("db", "0")] {
            let labels = [
                Label::new("__name__", "up"),
                Label::new("job", job),
                Label::new("instance", instance),
            ];
            for minute in 0..=30 {
                source.append(&labels, 1_700_000_000_000 + minute * 60_000, minute as f64);
            }
        }
        let limits = QueryLimits {
            timeout: Duration::from_millis(500),
            max_samples: 20_000,
            max_points_per_series: 100,
            max_regex_bytes: 1024,
        };
        Harness {
            runtime,
            app: router(Arc::new(source), limits),
        }
    })
}

/// The time and duration parsers on their own, on every field.
fn parsers(field: &str) {
    let _ = parse_time(field);
    let _ = parse_duration(field);
}

/// libFuzzer aborts on every panic, even one the code under test catches.
/// promql-parser panics on a number of seconds out of range where a
/// duration goes (`x[1e30]`), and `parse_query` turns that panic into a
/// `bad_data` answer (see the `hostile_queries` tests); only that panic is
/// let through to the code that catches it.
fn let_caught_parser_panic_through() {
    let abort = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload_as_str().unwrap_or_default();
        if !message.starts_with("cannot convert float seconds to Duration") {
            abort(info);
        }
    }));
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let path = PATHS[usize::from(selector) % PATHS.len()];
    let fields: Vec<String> = rest
        .split(|&b| b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    for f in &fields {
        parsers(f);
    }

    let (uri, body) = if selector & 0x80 != 0 {
        // The rest verbatim as a form body: the decoder sees every byte.
        (path.to_owned(), Some(rest.to_vec()))
    } else {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in NAMES.iter().zip(&fields) {
            if !value.is_empty() {
                form.append_pair(name, value);
            }
        }
        let encoded = form.finish();
        if selector & 0x40 != 0 {
            (path.to_owned(), Some(encoded.into_bytes()))
        } else {
            (format!("{path}?{encoded}"), None)
        }
    };
    let request = match body {
        Some(b) => Request::post(uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(b)),
        None => Request::get(uri).body(Body::empty()),
    };
    let Ok(request) = request else {
        return;
    };

    let h = harness();
    h.runtime.block_on(async {
        let response = h.app.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let text = std::str::from_utf8(&bytes).expect("utf-8 answer");
        assert!(
            status != StatusCode::INTERNAL_SERVER_ERROR,
            "{status}: {text}"
        );
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert!(text.contains(r#""errorType":"timeout""#), "{text}");
        }
        let json: serde_json::Value = serde_json::from_str(text).expect("json answer");
        assert!(json.get("status").is_some(), "{text}");
    });
});
