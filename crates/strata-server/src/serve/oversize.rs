//! The other half of [`super::heads`]: a URL query moved out of an
//! over-long target becomes a [`LongUrlQuery`] for the query API, and a
//! refused head is answered with a message naming the limit (hyper's own
//! answers have no body).

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use strata_promql::http::params::LongUrlQuery;

use super::heads::{Refusal, MAX_HEAD, MAX_URI, QUERY_HEADER, REFUSED_HEADER};

/// Middleware in front of every route.
pub async fn restore(mut req: Request, next: Next) -> Response {
    if let Some(why) = req.headers_mut().remove(REFUSED_HEADER) {
        let why = Refusal::ALL
            .into_iter()
            .find(|r| r.name().as_bytes() == why.as_bytes())
            .unwrap_or(Refusal::Head);
        return refused(why);
    }
    if let Some(query) = req.headers_mut().remove(QUERY_HEADER) {
        // The scanner took it from a request target: ASCII.
        let query = String::from_utf8_lossy(query.as_bytes()).into_owned();
        req.extensions_mut().insert(LongUrlQuery(query));
    }
    next.run(req).await
}

fn refused(why: Refusal) -> Response {
    let (status, msg) = match why {
        Refusal::RequestLine => (
            StatusCode::URI_TOO_LONG,
            format!("the request line is longer than {MAX_HEAD} bytes (1 MiB), the most this server reads; send a long query as a POST form body instead"),
        ),
        Refusal::Head => (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("the request line and headers are longer than {MAX_HEAD} bytes (1 MiB), the most this server reads"),
        ),
        Refusal::Path => (
            StatusCode::URI_TOO_LONG,
            format!("the URL path is longer than {MAX_URI} bytes"),
        ),
    };
    tracing::debug!(%status, "{msg}");
    (status, msg + "\n").into_response()
}
