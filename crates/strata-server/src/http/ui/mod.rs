//! The built-in web UI: a query page (table and graph), a cardinality
//! explorer and a status page. Plain HTML, CSS and JavaScript modules,
//! embedded in the binary so that nothing is fetched from elsewhere; the
//! pages read the same HTTP API as any client. They take the read
//! credentials (see `guard`), so a browser asks for them at the first
//! page and sends them with every API call after.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

/// The pages, each the same document: its script picks the page from the
/// path.
pub const PAGES: [&str; 6] = [
    "/",
    "/graph",
    "/cardinality",
    "/status",
    "/rules",
    "/alerts",
];

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!($name),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

static FILES: [Asset; 15] = [
    asset!("assets/index.html", "text/html; charset=utf-8"),
    asset!("assets/app.css", "text/css; charset=utf-8"),
    asset!("assets/main.js", JS),
    asset!("assets/api.js", JS),
    asset!("assets/format.js", JS),
    asset!("assets/query.js", JS),
    asset!("assets/table.js", JS),
    asset!("assets/graph.js", JS),
    asset!("assets/legend.js", JS),
    asset!("assets/complete.js", JS),
    asset!("assets/cardinality.js", JS),
    asset!("assets/status.js", JS),
    asset!("assets/rules.js", JS),
    asset!("vendor/uPlot.iife.min.js", JS),
    asset!("vendor/uPlot.min.css", "text/css; charset=utf-8"),
];

/// Each file's entity tag: a digest of its bytes, so that a browser
/// revalidates cheaply and sees a new build's files at once.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|f| {
            let digest = Sha256::digest(f.body);
            let hex: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
            format!("\"{hex}\"")
        })
        .collect()
});

/// Whether `path` is one of the UI's pages or files.
pub fn serves(path: &str) -> bool {
    PAGES.contains(&path) || path.starts_with("/ui/")
}

/// The pages and their files.
pub fn router() -> Router {
    let mut r = Router::new().route("/ui/{*path}", get(asset));
    for page in PAGES {
        r = r.route(page, get(index));
    }
    r
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

/// The file `name` (as `assets/` or `vendor/` names it from the prefix),
/// or 304 when the browser's copy is current.
fn serve(name: &str, headers: &HeaderMap) -> Response {
    let found = FILES
        .iter()
        .zip(ETAGS.iter())
        .find(|(f, _)| f.name == name || f.name.strip_prefix("assets/") == Some(name));
    let Some((file, etag)) = found else {
        return (StatusCode::NOT_FOUND, "no such file\n").into_response();
    };
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(file.content_type),
            )],
            file.body,
        )
            .into_response()
    };
    let h = response.headers_mut();
    // Revalidated on every load (a 304 is cheap), so an upgrade's pages
    // and scripts are never mixed with a cached older build's.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             frame-ancestors 'self'",
        ),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_found_by_its_served_name() {
        let none = HeaderMap::new();
        for name in ["index.html", "main.js", "vendor/uPlot.iife.min.js"] {
            assert_eq!(serve(name, &none).status(), StatusCode::OK, "{name}");
        }
        assert_eq!(serve("../mod.rs", &none).status(), StatusCode::NOT_FOUND);
        assert_eq!(serve("assets/main.js", &none).status(), StatusCode::OK);
    }

    #[test]
    fn a_current_copy_is_not_sent_again() {
        let first = serve("app.css", &HeaderMap::new());
        let etag = first.headers().get(header::ETAG).cloned().unwrap();
        let mut again = HeaderMap::new();
        again.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(serve("app.css", &again).status(), StatusCode::NOT_MODIFIED);
        let mut stale = HeaderMap::new();
        stale.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"0\""));
        assert_eq!(serve("app.css", &stale).status(), StatusCode::OK);
    }
}
