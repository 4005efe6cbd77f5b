//! The API calls run on both servers: each expression as instant queries
//! at two of a few times, and as range queries over two of a few ranges
//! and steps.

use crate::common::{api_time, query_string};
use crate::expressions::expressions;

/// One API call to run on both servers.
pub(crate) struct Call {
    pub(crate) expr: String,
    pub(crate) ordered: bool,
    pub(crate) path: String,
    pub(crate) what: String,
}

pub(crate) fn calls(start: i64, end: i64) -> Vec<Call> {
    // Instant query times: whole and half seconds, inside the data, near
    // its start (partial windows), and after its end (lookback running out).
    let times = [
        end - 90_000,
        end - 47 * 60_000 + 500,
        start + 30 * 60_000 + 321_000,
        end + 4 * 60_000,
        start + 3 * 60_000,
        end - 61 * 60_000,
    ];
    // Range queries: (start, end, step) with steps that do and do not divide
    // the range.
    let ranges = [
        (start + 10 * 60_000, end, 60_000),
        (end - 30 * 60_000, end + 2 * 60_000, 15_000),
        (start, end, 137_000),
        (start + 20 * 60_000 + 500, start + 80 * 60_000, 15_000),
        (end - 90 * 60_000, end - 10 * 60_000, 300_000),
    ];
    let mut out = Vec::new();
    for (i, (expr, ordered)) in expressions().into_iter().enumerate() {
        for t in [times[i % times.len()], times[(i + 3) % times.len()]] {
            out.push(Call {
                path: format!(
                    "/api/v1/query?{}",
                    query_string(&[("query", &expr), ("time", &api_time(t))])
                ),
                what: format!("instant at {}", api_time(t)),
                expr: expr.clone(),
                ordered,
            });
        }
        for (s, e, step) in [ranges[i % ranges.len()], ranges[(i + 2) % ranges.len()]] {
            out.push(Call {
                path: format!(
                    "/api/v1/query_range?{}",
                    query_string(&[
                        ("query", &expr),
                        ("start", &api_time(s)),
                        ("end", &api_time(e)),
                        ("step", &format!("{}", step as f64 / 1000.0)),
                    ])
                ),
                what: format!(
                    "range {}..{} step {}s",
                    api_time(s),
                    api_time(e),
                    step / 1000
                ),
                expr: expr.clone(),
                // Range results are sorted by labels; `sort` does not apply.
                ordered: false,
            });
        }
    }
    out
}
