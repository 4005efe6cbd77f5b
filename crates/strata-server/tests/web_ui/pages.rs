//! The pages' checks: each drives the browser through one page and
//! compares what it shows with the API's own answers.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::now_ms;
use super::common::webdriver::Browser;
use super::{console_errors, screenshot_dir, series_text, texts, Api, MANY};

/// Seconds in a duration such as `14m58s`, as the page writes it.
fn duration_secs(text: &str) -> u64 {
    let mut total = 0;
    let mut n = 0;
    for c in text.chars() {
        match c {
            '0'..='9' => n = n * 10 + u64::from(c.to_digit(10).unwrap()),
            'd' => (total, n) = (total + n * 86_400, 0),
            'h' => (total, n) = (total + n * 3_600, 0),
            'm' => (total, n) = (total + n * 60, 0),
            's' => (total, n) = (total + n, 0),
            _ => panic!("unexpected duration {text:?}"),
        }
    }
    total
}

/// Completion, the table, the graph and zooming in.
pub fn query_page(b: &Browser, api: &Api, base: &str) {
    b.goto(&format!("{base}/"));
    // A metric name completes from the API's names.
    b.type_text("#expr", "ui_req");
    let first =
        "return document.querySelector('#completions:not([hidden]) li')?.firstChild.textContent";
    assert_eq!(
        b.wait_for("metric names are offered", first),
        "ui_requests_total"
    );
    b.type_text("#expr", "\u{E004}");
    let value = "return document.querySelector('#expr').value";
    assert_eq!(b.eval(value), "ui_requests_total");
    // Inside braces: label names, then a label's values.
    b.type_text("#expr", "{jo");
    assert_eq!(b.wait_for("label names are offered", first), "job");
    b.type_text("#expr", "\u{E004}=\"");
    let offered = b.wait_for(
        "label values are offered",
        "const li = document.querySelectorAll('#completions:not([hidden]) li'); \
         return li.length && li[0].lastChild.textContent === 'label value' \
           && [...li].map(e => e.firstChild.textContent)",
    );
    let jobs = api.data("/api/v1/label/job/values", &[]);
    assert_eq!(offered, jobs);
    b.type_text("#expr", "\u{E004}\"}");
    assert_eq!(b.eval(value), "ui_requests_total{job=\"api\"}");

    // The table: one row per series, as the API answers.
    b.click("#execute");
    let rows = "const r = [...document.querySelectorAll('#result-table tr')].slice(1); \
                return r.length && r.map(tr => [tr.cells[0].textContent, tr.cells[1].textContent])";
    let shown = b.wait_for("the table is filled", rows);
    let answer = api.data(
        "/api/v1/query",
        &[("query", "ui_requests_total{job=\"api\"}")],
    );
    let expected: Vec<Value> = answer["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([series_text(&s["metric"]), s["value"][1]]))
        .collect();
    assert_eq!(expected.len(), 3);
    assert_eq!(shown, json!(expected));
    let stats = b.eval("return document.querySelector('#stats').textContent");
    assert!(
        stats.as_str().unwrap().contains("Result series: 3"),
        "{stats}"
    );
    // The samples the server loaded, from the API's own `stats`.
    let counted = api.data(
        "/api/v1/query",
        &[
            ("query", "ui_requests_total{job=\"api\"}"),
            ("stats", "all"),
        ],
    )["stats"]["samples"]["totalQueryableSamples"]
        .as_u64()
        .expect("stats in the answer");
    assert!(counted >= 3, "{counted}");
    assert!(
        stats
            .as_str()
            .unwrap()
            .contains(&format!("Samples loaded: {counted}")),
        "{stats}"
    );

    // All six series as a graph.
    b.clear("#expr");
    b.type_text("#expr", "ui_requests_total");
    b.click("#execute");
    b.wait_for(
        "the six rows",
        "return document.querySelectorAll('#result-table tr').length === 7",
    );
    b.click("#tab-graph");
    let legend = "const e = document.querySelectorAll('#legend .entry'); \
                  return e.length && [...e].map(x => x.textContent)";
    let mut entries: Vec<String> =
        serde_json::from_value(b.wait_for("the legend is drawn", legend)).unwrap();
    entries.sort();
    let end = (now_ms() / 1000).to_string();
    let start = (now_ms() / 1000 - 3600).to_string();
    let range = api.data(
        "/api/v1/query_range",
        &[
            ("query", "ui_requests_total"),
            ("start", &start),
            ("end", &end),
            ("step", "14"),
        ],
    );
    let mut series: Vec<String> = range["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| series_text(&s["metric"]))
        .collect();
    series.sort();
    assert_eq!(series.len(), 6);
    assert_eq!(entries, series);
    // The lines are on the canvas: coloured pixels, where axes and grid
    // are grey.
    let coloured = "const c = document.querySelector('#chart canvas'); \
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; \
        for (let i = 0; i < d.length; i += 4) { \
          if (d[i + 3] > 0 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++; } \
        return n";
    let pixels = b.eval(coloured).as_u64().unwrap();
    assert!(pixels > 1000, "only {pixels} coloured pixels on the chart");
    let stats = b.eval("return document.querySelector('#stats').textContent");
    assert!(
        stats.as_str().unwrap().contains("Resolution: 14s"),
        "{stats}"
    );

    b.screenshot(&screenshot_dir().join("query-graph.png"));

    // Near the right end the six lines are a few pixels apart: the
    // tooltip names the nearest.
    let width = b
        .eval("return document.querySelector('.u-over').clientWidth")
        .as_f64()
        .unwrap();
    b.hover(".u-over", ((width * 0.45) as i64, 0));
    let tip = b.wait_for(
        "the tooltip",
        "const t = document.querySelector('.tooltip'); \
         return t && !t.hidden && [...t.children].map(c => c.textContent)",
    );
    let tip: Vec<String> = serde_json::from_value(tip).unwrap();
    assert_eq!(tip.len(), 3, "{tip:?}");
    assert!(series.contains(&tip[1]), "{tip:?} names no series");
    assert!(tip[2].starts_with("value: "), "{tip:?}");

    // Dragging over a quarter of the plot zooms in to about 15 minutes.
    b.drag(".u-over", (-150, 0), (150, 0));
    let zoomed = b.wait_for(
        "the zoomed range is in the URL",
        "const r = new URLSearchParams(location.search).get('range'); return r !== '1h' && r",
    );
    let secs = duration_secs(zoomed.as_str().unwrap());
    let want = 3600.0 * 300.0 / width;
    assert!(
        (secs as f64 - want).abs() < 60.0,
        "zoomed to {secs}s, not about {want}s"
    );
    b.wait_for(
        "the zoomed graph",
        "return document.querySelector('#stats').textContent.includes('Result series: 6') \
         && document.querySelectorAll('#legend .entry').length === 6",
    );

    // A Prometheus link (as Grafana writes them) opens its query.
    b.goto(&format!(
        "{base}/graph?g0.expr=ui_temperature_celsius&g0.tab=1&g0.range_input=1h"
    ));
    let shown = b.wait_for("the linked query's table", rows);
    assert_eq!(shown.as_array().unwrap().len(), 2, "{shown}");
    b.goto(&format!(
        "{base}/graph?g0.expr=ui_temperature_celsius&g0.tab=0&g0.range_input=2h"
    ));
    b.wait_for(
        "the linked query's graph",
        "return document.querySelectorAll('#legend .entry').length === 2 \
         && document.querySelector('#range').value === '2h'",
    );
}

/// The server's error is shown as it is.
pub fn query_error(b: &Browser, api: &Api) {
    b.clear("#expr");
    b.type_text("#expr", "sum(ui_requests_total");
    b.click("#tab-table");
    b.click("#execute");
    let shown = b.wait_for(
        "the error is shown",
        "return document.querySelector('#error')?.textContent",
    );
    let v = api.get("/api/v1/query", &[("query", "sum(ui_requests_total")]);
    assert_eq!(v["status"], "error");
    let msg = v["error"].as_str().unwrap();
    assert!(
        shown.as_str().unwrap().contains(msg),
        "shown {shown}, API said {msg}"
    );
    // The 400 itself is the one console entry.
    let errors = console_errors(b, |m| m.contains("/api/v1/query") && m.contains("400"));
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

/// Prometheus 3's UTF-8 names: completion quotes the names it inserts,
/// a quoted label's values are offered, and the table writes the series
/// as Prometheus 3 does.
pub fn utf8_names(b: &Browser, api: &Api, base: &str) {
    b.goto(&format!("{base}/"));
    let first =
        "return document.querySelector('#completions:not([hidden]) li')?.firstChild.textContent";
    let value = "return document.querySelector('#expr').value";
    b.type_text("#expr", "ui.ut");
    assert_eq!(
        b.wait_for("a UTF-8 metric name is offered", first),
        "ui.utf8_total"
    );
    b.type_text("#expr", "\u{E004}");
    assert_eq!(b.eval(value), r#"{"ui.utf8_total"}"#);

    // A fresh page: clearing the box blurs it, which closes the list a
    // moment later.
    b.goto(&format!("{base}/"));
    b.type_text("#expr", r#"{"ui.utf8_total", http.st"#);
    assert_eq!(
        b.wait_for("a UTF-8 label name is offered", first),
        "http.status"
    );
    b.type_text("#expr", "\u{E004}=\"");
    let offered = b.wait_for(
        "the quoted label's values are offered",
        "const li = document.querySelectorAll('#completions:not([hidden]) li'); \
         return li.length && li[0].lastChild.textContent === 'label value' \
           && [...li].map(e => e.firstChild.textContent)",
    );
    assert_eq!(
        offered,
        api.data("/api/v1/label/U__http_2e_status/values", &[])
    );
    b.type_text("#expr", "\u{E004}\"}");
    let query = r#"{"ui.utf8_total", "http.status"="200"}"#;
    assert_eq!(b.eval(value), query);

    b.click("#tab-table");
    b.click("#execute");
    let rows = "const r = [...document.querySelectorAll('#result-table tr')].slice(1); \
                return r.length && r.map(tr => tr.cells[0].textContent)";
    let shown = b.wait_for("the table is filled", rows);
    let answer = api.data("/api/v1/query", &[("query", query)]);
    let expected: Vec<String> = answer["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| series_text(&s["metric"]))
        .collect();
    assert_eq!(
        expected,
        [r#"{"ui.utf8_total", "http.status"="200", job="api"}"#]
    );
    assert_eq!(shown, json!(expected));
}

/// The top lists match `/api/v1/status/tsdb`; the limit control and a
/// metric's link work.
pub fn cardinality_page(b: &Browser, api: &Api, base: &str) {
    b.goto(&format!("{base}/cardinality"));
    let rows = |id: &str| {
        format!(
            "const r = [...document.querySelectorAll('#{id} tr')].slice(1); \
             return r.length && r.map(tr => [tr.cells[0].textContent, \
             Number(tr.cells[1].textContent.replaceAll(',', ''))])"
        )
    };
    let shown = b.wait_for("the metric names", &rows("by-metric"));
    let tsdb = api.data("/api/v1/status/tsdb", &[("limit", "10")]);
    let expected: Vec<Value> = tsdb["seriesCountByMetricName"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["name"], e["value"]]))
        .collect();
    assert_eq!(
        expected.first(),
        Some(&json!(["ui_many_series", MANY])),
        "{tsdb}"
    );
    assert_eq!(shown, json!(expected));
    let total = b.eval("return document.querySelector('#num-series').textContent");
    assert_eq!(
        total.as_str().unwrap().replace(',', ""),
        tsdb["headStats"]["numSeries"].to_string()
    );
    b.screenshot(&screenshot_dir().join("cardinality.png"));

    // Twenty label pairs once the limit says so.
    b.click("#limit option[value='20']");
    let tsdb20 = api.data("/api/v1/status/tsdb", &[("limit", "20")]);
    let pairs = tsdb20["seriesCountByLabelValuePair"].as_array().unwrap();
    assert_eq!(pairs.len(), 20);
    b.wait_for(
        "twenty label pairs",
        "return document.querySelectorAll('#by-pair tr').length === 21",
    );
    let names = texts(b, "#by-pair tr td:first-child");
    let want: Vec<&str> = pairs.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, want);

    // A metric name opens the query page on it.
    b.click("#by-metric a");
    b.wait_for(
        "the query page on the metric",
        "return document.querySelector('#expr')?.value === 'ui_many_series'",
    );
}

/// A UTF-8 label's link on the cardinality page quotes the name, and the
/// query it opens runs.
pub fn cardinality_utf8_label(b: &Browser, base: &str) {
    b.goto(&format!("{base}/cardinality"));
    let href = b.wait_for(
        "the UTF-8 label's link",
        "const a = [...document.querySelectorAll('#by-label a')] \
           .find(a => a.textContent === 'http.status'); \
         return a && a.getAttribute('href')",
    );
    b.goto(&format!("{base}{}", href.as_str().unwrap()));
    let expr = r#"count by ("http.status") ({"http.status"!=""})"#;
    b.wait_for(
        "the query page on the label",
        &format!(
            "return document.querySelector('#expr')?.value === {}",
            json!(expr)
        ),
    );
    b.click("#execute");
    let rows = "const r = [...document.querySelectorAll('#result-table tr')].slice(1); \
                return r.length && r.map(tr => tr.cells[0].textContent)";
    assert_eq!(
        b.wait_for("the label's count", rows),
        json!([r#"{"http.status"="200"}"#])
    );
}

/// Ten thousand series: the table builds a page of rows, the graph's
/// legend only the rows in view.
pub fn many_series(b: &Browser) {
    b.wait_for(
        "the first page of rows",
        "return document.querySelectorAll('#result-table tr').length === 501",
    );
    let more = b.eval("return document.querySelector('#more-rows').textContent");
    assert_eq!(more, "Show 500 more of 9,500");
    let clicked = Instant::now();
    b.click("#tab-graph");
    b.wait_for_within(
        Duration::from_secs(60),
        "the graph of 10 000 series",
        "return document.querySelector('#chart canvas') \
         && document.querySelector('#stats').textContent.includes('Result series: 10,000')",
    );
    let took = clicked.elapsed();
    let count =
        b.eval("return document.querySelector('#legend').previousElementSibling.textContent");
    assert_eq!(count, "10,000 series");
    let entries = b
        .eval("return document.querySelectorAll('#legend .entry').length")
        .as_u64()
        .unwrap();
    assert!(
        (1..100).contains(&entries),
        "{entries} legend rows built for 10 000 series"
    );
    let nodes = b
        .eval("return document.getElementsByTagName('*').length")
        .as_u64()
        .unwrap();
    assert!(nodes < 3_000, "{nodes} DOM nodes for a graph");
    // The legend's filter narrows the list.
    b.type_text("#legend-filter", "id=\"9999\"");
    b.wait_for(
        "one series left",
        "const e = document.querySelectorAll('#legend .entry'); \
         return e.length === 1 && e[0].textContent === 'ui_many_series{id=\"9999\"}'",
    );
    b.screenshot(&screenshot_dir().join("many-series.png"));
    println!("graph of {MANY} series drawn {took:?} after the click");
}

/// Strata's facts, the build, the flags and the configuration, as the
/// API answers them.
pub fn status_page(b: &Browser, api: &Api, base: &str) {
    b.goto(&format!("{base}/status"));
    let strata = api.data("/api/v1/status/strata", &[]);
    assert_eq!(strata["role"], "all");
    let facts = "const d = document.querySelector('#strata-facts'); \
                 return d && Object.fromEntries([...d.querySelectorAll('dt')] \
                   .map(dt => [dt.textContent, dt.nextElementSibling.textContent]))";
    let shown = b.wait_for("Strata's facts", facts);
    assert_eq!(shown["Role"], strata["role"]);
    assert_eq!(shown["Ready"], "yes");
    assert_eq!(shown["Object store"], "answering");
    assert_eq!(shown["Databases open"], "1 of 1");
    let databases = b.wait_for(
        "the databases",
        "return document.querySelectorAll('#databases tr').length",
    );
    assert_eq!(
        databases.as_u64().unwrap() as usize,
        strata["databases"].as_array().unwrap().len() + 1
    );
    let version = b.wait_for(
        "the build",
        "return document.querySelector('#build-info dd')?.textContent",
    );
    assert_eq!(
        version,
        api.data("/api/v1/status/buildinfo", &[])["version"]
    );
    let flags = api.data("/api/v1/status/flags", &[]);
    let rows = b.wait_for(
        "the flags",
        "return document.querySelectorAll('#flags tr').length",
    );
    assert_eq!(
        rows.as_u64().unwrap() as usize,
        flags.as_object().unwrap().len() + 1
    );
    let yaml = b.wait_for(
        "the configuration",
        "return document.querySelector('#config')?.textContent",
    );
    assert_eq!(yaml, api.data("/api/v1/status/config", &[])["yaml"]);
}

/// The rules the browser test's server evaluates: a recording rule, an
/// alert that fires at once and one that stays pending.
pub const RULES: &str = r#"
groups:
  - name: ui
    interval: 1s
    rules:
      - record: ui:many:count
        expr: count(ui_many_series)
      - alert: UiFiring
        expr: vector(1)
        labels:
          severity: page
        annotations:
          summary: "always on"
      - alert: UiPending
        expr: vector(2) > 1
        for: 1h
"#;

/// The rules page lists every rule of the API with its health, and the
/// alerts page the alerting rules by state with their alerts.
pub fn rules_and_alerts_pages(b: &Browser, api: &Api, base: &str) {
    // Wait until both alerts are active.
    let began = std::time::Instant::now();
    while api.data("/api/v1/alerts", &[])["alerts"]
        .as_array()
        .map_or(0, |a| a.len())
        < 2
    {
        assert!(began.elapsed() < Duration::from_secs(30), "alerts active");
        std::thread::sleep(Duration::from_millis(200));
    }
    b.goto(&format!("{base}/rules"));
    let rules = api.data("/api/v1/rules", &[]);
    let want = rules["groups"][0]["rules"].as_array().unwrap().len();
    let shown = b.wait_for(
        "the rules",
        "return document.querySelectorAll('#rule-groups tr.rule').length || null",
    );
    assert_eq!(shown.as_u64().unwrap() as usize, want);
    let text = b.eval("return document.querySelector('#rule-groups').textContent");
    for needle in ["ui:many:count", "count(ui_many_series)", "UiFiring", "ok"] {
        assert!(text.as_str().unwrap().contains(needle), "{needle}: {text}");
    }
    b.goto(&format!("{base}/alerts"));
    let counts = b.wait_for(
        "the alert counts",
        "return document.querySelector('#alert-counts')?.textContent",
    );
    assert_eq!(counts, "1 firing, 1 pending, 0 inactive");
    let first = b.eval("return document.querySelector('.alert-rule h2').textContent");
    assert!(first.as_str().unwrap().starts_with("UiFiring"), "{first}");
    let rows = b.eval("return document.querySelectorAll('tr.alert').length");
    assert_eq!(rows.as_u64(), Some(2));
}
