//! The web UI in a real browser: headless Chromium, driven over WebDriver,
//! against a `strata` process holding remote-written series. Every page's
//! content is checked against the API's own answers; screenshots are
//! saved in `target/web-ui-screenshots/` for a person to look at.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

#[path = "../common/mod.rs"]
mod common;
mod pages;

use std::path::PathBuf;
use std::time::Instant;

use base64::Engine as _;
use common::inproc::{body, ts};
use common::webdriver::Browser;
use common::{http_request, now_ms, query_string, StrataProcess};
use serde_json::{json, Value};

/// Series of the small metrics: `ui_requests_total` (6 series),
/// `ui_temperature_celsius` (2) and `ui.utf8_total` (1); then
/// `ui_many_series` (10 000).
pub const MANY: usize = 10_000;

/// Where screenshots go: `target/web-ui-screenshots/` beside the test
/// binary's `target/<profile>/deps/`.
pub fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    target.join("web-ui-screenshots")
}

pub struct Api {
    port: u16,
}

impl Api {
    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let r = http_request(
            self.port,
            "GET",
            &format!("{path}?{}", query_string(params)),
            &[],
            &[],
        )
        .unwrap();
        r.json()
    }

    pub fn data(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let v = self.get(path, params);
        assert_eq!(v["status"], "success", "{path}: {v}");
        v["data"].clone()
    }

    pub fn write(&self, series: Vec<strata_remote_write::proto::v1::TimeSeries>) {
        self.write_as(series, &[]);
    }

    /// Remote-writes `series` with more `headers` (a tenant).
    pub fn write_as(
        &self,
        series: Vec<strata_remote_write::proto::v1::TimeSeries>,
        headers: &[(&str, &str)],
    ) {
        let mut all = vec![
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ];
        all.extend_from_slice(headers);
        let r = http_request(self.port, "POST", "/api/v1/write", &all, &body(series)).unwrap();
        assert_eq!(r.status, 204, "{}", r.text());
    }
}

/// A series as the UI writes it: `name{a="b", c="d"}`, labels in the
/// API's order, values quoted as JSON strings.
pub fn series_text(metric: &Value) -> String {
    let plain = |name: &str, colon: bool| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    };
    let m = metric.as_object().unwrap();
    let name = m.get("__name__").and_then(Value::as_str).unwrap_or("");
    let pairs: Vec<String> = m
        .iter()
        .filter(|(k, _)| *k != "__name__")
        .map(|(k, v)| {
            if plain(k, false) {
                format!("{k}={v}")
            } else {
                format!("{}={v}", Value::from(k.as_str()))
            }
        })
        .collect();
    // Prometheus 3 writes a UTF-8 name quoted inside the braces.
    if !name.is_empty() && !plain(name, true) {
        let name = Value::from(name).to_string();
        return format!("{{{}}}", [vec![name], pairs].concat().join(", "));
    }
    if pairs.is_empty() {
        return name.to_owned();
    }
    format!("{name}{{{}}}", pairs.join(", "))
}

pub fn texts(b: &Browser, css: &str) -> Vec<String> {
    let v = b.eval(&format!(
        "return [...document.querySelectorAll({})].map(e => e.textContent)",
        json!(css)
    ));
    serde_json::from_value(v).unwrap()
}

/// The console's errors, but those `allowed` says were expected.
pub fn console_errors(b: &Browser, allowed: impl Fn(&str) -> bool) -> Vec<String> {
    b.console()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
        .filter(|m| !allowed(m))
        .collect()
}

/// Writes the series every page shows; the newest samples are a minute
/// old, so that a query now and one a little later see the same values.
fn write_series(api: &Api) {
    let last = now_ms() / 1000 * 1000 - 60_000;
    let mut small = Vec::new();
    for (j, job) in ["api", "web"].into_iter().enumerate() {
        for (i, instance) in ["a:9100", "b:9100", "c:9100"].into_iter().enumerate() {
            let rate = (j * 3 + i + 1) as f64;
            let samples: Vec<(i64, f64)> = (0..120)
                .map(|k| (last - (119 - k) * 15_000, rate * k as f64 * 15.0))
                .collect();
            small.push(ts(
                &[
                    ("__name__", "ui_requests_total"),
                    ("job", job),
                    ("instance", instance),
                ],
                &samples,
            ));
        }
    }
    for (i, room) in ["lab", "office"].into_iter().enumerate() {
        let samples: Vec<(i64, f64)> = (0..120)
            .map(|k| {
                (
                    last - (119 - k) * 15_000,
                    20.0 + i as f64 + (k % 7) as f64 / 2.0,
                )
            })
            .collect();
        small.push(ts(
            &[("__name__", "ui_temperature_celsius"), ("room", room)],
            &samples,
        ));
    }
    // A Prometheus 3 UTF-8 name, with a UTF-8 label.
    let samples: Vec<(i64, f64)> = (0..120).map(|k| (last - (119 - k) * 15_000, 1.0)).collect();
    small.push(ts(
        &[
            ("__name__", "ui.utf8_total"),
            ("http.status", "200"),
            ("job", "api"),
        ],
        &samples,
    ));
    api.write(small);
    let many: Vec<_> = (0..MANY)
        .map(|i| {
            let id = i.to_string();
            let samples: Vec<(i64, f64)> = (0..10)
                .map(|k| (last - (9 - k) * 60_000, (i % 100) as f64 + k as f64))
                .collect();
            ts(&[("__name__", "ui_many_series"), ("id", &id)], &samples)
        })
        .collect();
    api.write(many);
}

#[test]
fn query_cardinality_and_status_pages_in_a_browser() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yml");
    std::fs::write(&rules, pages::RULES).unwrap();
    let srv = StrataProcess::start(
        &dir.path().join("data"),
        &[
            ("STRATA_RULES_RULE_FILES", rules.to_str().unwrap()),
            ("STRATA_RULES_EVALUATION_INTERVAL", "1s"),
        ],
    );
    let api = Api { port: srv.port };
    write_series(&api);
    let shots = screenshot_dir();
    let b = Browser::start(1400, 1000, &shots.join("failure.png"));
    let base = format!("http://127.0.0.1:{}", srv.port);

    pages::query_page(&b, &api, &base);
    b.screenshot(&shots.join("query-zoomed.png"));
    let errors = console_errors(&b, |_| false);
    assert!(
        errors.is_empty(),
        "console errors on the query page: {errors:?}"
    );

    pages::query_error(&b, &api);
    pages::utf8_names(&b, &api, &base);

    pages::cardinality_page(&b, &api, &base);
    pages::many_series(&b);
    pages::cardinality_utf8_label(&b, &base);
    let errors = console_errors(&b, |_| false);
    assert!(errors.is_empty(), "console errors: {errors:?}");

    pages::rules_and_alerts_pages(&b, &api, &base);
    b.screenshot(&shots.join("alerts.png"));
    let errors = console_errors(&b, |_| false);
    assert!(
        errors.is_empty(),
        "console errors on the rules and alerts pages: {errors:?}"
    );

    pages::status_page(&b, &api, &base);
    b.screenshot(&shots.join("status.png"));
    let errors = console_errors(&b, |_| false);
    assert!(
        errors.is_empty(),
        "console errors on the status page: {errors:?}"
    );

    println!(
        "web UI screenshots in {} ({:?} in all)",
        shots.display(),
        started.elapsed()
    );
}

/// With read credentials set, the pages take them as the API does (a
/// Basic challenge, which a browser answers for the whole site); with
/// tenants required, the pages need none and the tenant field picks whose
/// series the API calls read.
#[test]
fn pages_take_the_read_credentials_and_the_tenant_field() {
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let users = format!("[\"reader:{hash}\"]");
    let srv = StrataProcess::start(
        &dir.path().join("data"),
        &[
            ("STRATA_AUTH_READ_BASIC_AUTH", &users),
            ("STRATA_TENANTS_REQUIRED", "true"),
        ],
    );
    let api = Api { port: srv.port };
    let t = now_ms() - 30_000;
    api.write_as(
        vec![ts(
            &[("__name__", "ui_tenant_metric"), ("room", "a")],
            &[(t, 42.0)],
        )],
        &[("X-Scope-OrgID", "team-a")],
    );

    let login = base64::engine::general_purpose::STANDARD.encode("reader:s3cret");
    for path in ["/", "/graph", "/ui/main.js"] {
        let r = http_request(srv.port, "GET", path, &[], &[]).unwrap();
        assert_eq!(r.status, 401, "{path}");
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains("Basic realm="), "{path}: {challenge}");
        let r = http_request(
            srv.port,
            "GET",
            path,
            &[("Authorization", &format!("Basic {login}"))],
            &[],
        )
        .unwrap();
        assert_eq!(r.status, 200, "{path} with credentials and no tenant");
    }
    assert_eq!(
        http_request(srv.port, "GET", "/-/healthy", &[], &[])
            .unwrap()
            .status,
        200
    );

    let shots = screenshot_dir();
    let b = Browser::start(1200, 800, &shots.join("failure-auth.png"));
    // The header a browser sends once its user has answered the
    // challenge (headless Chromium shows no prompt to answer).
    b.cdp("Network.enable", json!({}));
    b.cdp(
        "Network.setExtraHTTPHeaders",
        json!({"headers": {"Authorization": format!("Basic {login}")}}),
    );
    let base = format!("http://127.0.0.1:{}", srv.port);
    b.goto(&format!("{base}/graph?expr=ui_tenant_metric&tab=table"));
    // No tenant yet: the API's refusal, shown as it is.
    let shown = b.wait_for(
        "the missing tenant is shown",
        "return document.querySelector('#error')?.textContent",
    );
    assert!(shown.as_str().unwrap().contains("tenant"), "{shown}");
    let errors = console_errors(&b, |m| m.contains("/api/v1/query") && m.contains("401"));
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // The tenant field reloads the page, whose query now reads team-a.
    b.type_text("#tenant", "team-a\u{E007}");
    let rows = b.wait_for(
        "team-a's series",
        "const r = [...document.querySelectorAll('#result-table tr')].slice(1); \
         return r.length && r.map(tr => [tr.cells[0].textContent, tr.cells[1].textContent])",
    );
    assert_eq!(rows, json!([["ui_tenant_metric{room=\"a\"}", "42"]]));
    let errors = console_errors(&b, |_| false);
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
