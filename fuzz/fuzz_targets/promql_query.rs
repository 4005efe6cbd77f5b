//! A PromQL query of arbitrary text, parsed as the HTTP API parses it and
//! evaluated against a few in-memory series, as an instant query and as a
//! short range query, under tight limits. It must never panic, hang or take
//! unbounded memory, and an error must be the caller's (`bad_data`,
//! `execution`) or a limit's (`timeout`), never an internal one.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use strata_codec::Label;
use strata_promql::{Engine, MemSource, QueryError, QueryLimits, STALE_NAN_BITS};
use tokio::runtime::Runtime;

/// Evaluation time of the instant query and end of the range query (ms).
const T: i64 = 3_600_000;

struct Harness {
    runtime: Runtime,
    engine: Engine,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let_caught_parser_panic_through();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let limits = QueryLimits {
            timeout: Duration::from_millis(500),
            max_samples: 20_000,
            max_points_per_series: 100,
            max_regex_bytes: 1024,
        };
        Harness {
            runtime,
            engine: Engine::new(Arc::new(series()), limits),
        }
    })
}

/// A handful of series over the hour before `T`, one sample a minute: the
/// names the engine's test data uses, counters with a reset, a stale
/// marker, and a classic histogram.
fn series() -> MemSource {
    let source = MemSource::new();
    let add = |pairs: &[(&str, &str)], value: &dyn Fn(i64) -> f64| {
        let labels: Vec<Label> = pairs.iter().map(|(n, v)| Label::new(*n, *v)).collect();
        for minute in 0..=60 {
            source.append(&labels, minute * 60_000, value(minute));
        }
    };
    add(
        &[("__name__", "up"), ("job", "api"), ("instance", "0")],
        &|_| 1.0,
    );
    add(
        &[("__name__", "up"), ("job", "db"), ("instance", "1")],
        &|m| (m % 2) as f64,
    );
    add(
        &[
            ("__name__", "http_requests"),
            ("job", "api"),
            ("group", "canary"),
        ],
        &|m| (m * 10) as f64,
    );
    add(
        &[
            ("__name__", "http_requests"),
            ("job", "db"),
            ("group", "production"),
        ],
        &|m| ((m % 20) * 3) as f64,
    );
    add(&[("__name__", "gauge"), ("le", "x")], &|m| {
        if m == 30 {
            f64::from_bits(STALE_NAN_BITS)
        } else {
            (m as f64).sin() * 1e300
        }
    });
    for (le, f) in [("0.1", 1), ("1", 5), ("+Inf", 9)] {
        add(&[("__name__", "latency_bucket"), ("le", le)], &move |m| {
            (m * f) as f64
        });
    }
    source
}

fn check(result: Result<strata_promql::QueryValue, QueryError>) {
    if let Err(QueryError::Internal(e) | QueryError::Unavailable(e)) = result {
        panic!("internal error: {e}");
    }
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
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    let h = harness();
    h.runtime.block_on(async {
        check(h.engine.instant_query(query, T, None).await);
        check(
            h.engine
                .range_query(query, T - 300_000, T, 60_000, None)
                .await,
        );
    });
});
