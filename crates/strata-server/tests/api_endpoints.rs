//! The API as Grafana and operators meet it besides queries: the status
//! endpoints (secrets redacted), the empty scrape and alerting endpoints,
//! `format_query` against Prometheus' own pretty-printer, GET queries as
//! long as Prometheus takes, and multipart form bodies. Against the real
//! binary, behind credentials and a required tenant. And the query
//! parameters of Prometheus 3.16 (`limit`, `lookback_delta`, `stats`'
//! `peakSamples`) answered as Prometheus 3.16 answers them.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::promql_compare::{remote_write, WriteSeries};
use common::{
    free_port, http_request, now_ms, prometheus3_bin, query_string, HttpResponse,
    PrometheusProcess, StrataProcess,
};

/// `grafana:dashboards`.
const BASIC_AUTH: (&str, &str) = ("Authorization", "Basic Z3JhZmFuYTpkYXNoYm9hcmRz");
const TENANT: (&str, &str) = ("X-Scope-OrgID", "team-a");

/// The endpoints answering without data, and their `data`.
const EMPTY: &[(&str, &str)] = &[
    (
        "/api/v1/targets",
        r#"{"activeTargets":[],"droppedTargets":[]}"#,
    ),
    ("/api/v1/rules", r#"{"groups":[]}"#),
    ("/api/v1/alerts", r#"{"alerts":[]}"#),
    (
        "/api/v1/alertmanagers",
        r#"{"activeAlertmanagers":[],"droppedAlertmanagers":[]}"#,
    ),
];

fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    http_request(port, method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} :{port}{path}: {e}"))
}

/// A successful answer's `data`.
fn data(resp: &HttpResponse, what: &str) -> serde_json::Value {
    assert_eq!(resp.status, 200, "{what}: {}", resp.text());
    let json = resp.json();
    assert_eq!(json["status"], "success", "{what}: {json}");
    json["data"].clone()
}

#[test]
fn status_endpoints_redact_secrets_and_sit_behind_auth_and_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash("dashboards", 4).unwrap();
    let users = format!("[\"grafana:{hash}\"]");
    let srv = StrataProcess::start(
        &dir.path().join("data"),
        &[
            ("STRATA_AUTH_READ_BASIC_AUTH", &users),
            ("STRATA_TENANTS_REQUIRED", "true"),
            ("STRATA_OBJECT_STORE_S3_ACCESS_KEY_ID", "AKID-SHOWN"),
            (
                "STRATA_OBJECT_STORE_S3_SECRET_ACCESS_KEY",
                "s3-secret-value",
            ),
        ],
    );
    let port = srv.port;
    let get = |path: &str| request(port, "GET", path, &[BASIC_AUTH, TENANT], b"");

    let build = data(&get("/api/v1/status/buildinfo"), "buildinfo");
    assert_eq!(build["version"], env!("CARGO_PKG_VERSION"));
    let revision = build["revision"].as_str().unwrap();
    assert!(
        revision == "unknown"
            || (revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())),
        "{build}"
    );
    assert!(
        build["goVersion"].as_str().unwrap().starts_with("rustc "),
        "{build}"
    );
    let date = build["buildDate"].as_str().unwrap();
    assert!(date.len() == 17 && date.as_bytes()[8] == b'-', "{build}");

    let config = get("/api/v1/status/config");
    let flags = get("/api/v1/status/flags");
    for resp in [&config, &flags] {
        let text = resp.text();
        assert!(
            !text.contains("s3-secret-value") && !text.contains(&hash),
            "{text}"
        );
    }
    let yaml = data(&config, "config")["yaml"].as_str().unwrap().to_owned();
    for line in [
        "  secret_access_key: \"<secret>\"",
        "  access_key_id: \"AKID-SHOWN\"",
        "  basic_auth: \"<secret>\"",
        "  required: true",
    ] {
        assert!(yaml.contains(line), "{line:?} not in\n{yaml}");
    }
    let flags = data(&flags, "flags");
    assert_eq!(flags["object_store.s3.secret_access_key"], "<secret>");
    assert_eq!(flags["auth.read.basic_auth"], "<secret>");
    assert_eq!(flags["server.listen"], format!("127.0.0.1:{port}"));
    assert_eq!(flags["storage.retention"], "15days");

    let runtime = data(&get("/api/v1/status/runtimeinfo"), "runtimeinfo");
    assert_eq!(runtime["storageRetention"], "15d");
    assert_eq!(runtime["reloadConfigSuccess"], true);
    assert_eq!(runtime["startTime"], runtime["lastConfigTime"]);
    assert!(
        runtime["startTime"].as_str().unwrap().ends_with('Z'),
        "{runtime}"
    );
    assert!(!runtime["CWD"].as_str().unwrap().is_empty(), "{runtime}");
    assert!(runtime["GOMAXPROCS"].as_u64().unwrap() >= 1, "{runtime}");

    for (path, want) in EMPTY {
        let resp = get(path);
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(
            resp.text(),
            format!(r#"{{"status":"success","data":{want}}}"#)
        );
    }

    // The same guards as the query routes: credentials, then a tenant.
    let status_paths = [
        "/api/v1/status/buildinfo",
        "/api/v1/status/config",
        "/api/v1/status/flags",
        "/api/v1/status/runtimeinfo",
    ];
    for path in status_paths.iter().chain(EMPTY.iter().map(|(p, _)| p)) {
        for (headers, why) in [
            (&[TENANT][..], "credentials"),
            (&[BASIC_AUTH][..], "tenant"),
        ] {
            let resp = request(port, "GET", path, headers, b"");
            assert_eq!(resp.status, 401, "{path} without a {why}: {}", resp.text());
            assert_eq!(resp.json()["status"], "error", "{path}");
        }
    }
    srv.stop();
}

/// Prometheus' pretty-printer (promtool 3's `promql format`) and
/// `/api/v1/format_query` write the same text.
#[test]
fn format_query_writes_what_prometheus_writes() {
    let promtool = prometheus3_bin("promtool");
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(&dir.path().join("data"), &[]);
    for q in [
        r#"sum(rate(foo{a="b"}[5m])) by (job)"#,
        r#"histogram_quantile(0.9, sum by (le, job) (rate(http_request_duration_seconds_bucket{job=~"api|web", code!~"5.."}[5m]))) > 0.5 and on(job) up == 1"#,
        "a offset 5m + b @ 100",
        "max_over_time(deriv(foo[5m])[1h:5m])",
        "-foo",
        "topk(3, foo) without (instance)",
        "sum(foo) / ignoring(job) group_left(instance) bar",
        r#"label_replace(up, "a", "$1", "job", "(.*)")"#,
        "foo and bar unless baz or qux",
        r#"{__name__="up", job="a"}"#,
        "1 + 2 * 3",
    ] {
        let out = std::process::Command::new(&promtool)
            .args(["--experimental", "promql", "format", "--", q])
            .output()
            .unwrap();
        assert!(out.status.success(), "promtool on {q}: {out:?}");
        let want = String::from_utf8(out.stdout).unwrap().trim_end().to_owned();
        let get = request(
            srv.port,
            "GET",
            &format!("/api/v1/format_query?{}", query_string(&[("query", q)])),
            &[],
            b"",
        );
        assert_eq!(data(&get, q), want.as_str(), "{q}");
        let post = request(
            srv.port,
            "POST",
            "/api/v1/format_query",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            query_string(&[("query", q)]).as_bytes(),
        );
        assert_eq!(data(&post, q), want.as_str(), "{q} (POST)");
    }
    let bad = request(srv.port, "GET", "/api/v1/format_query?query=sum(", &[], b"");
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(bad.json()["errorType"], "bad_data");
    srv.stop();
}

/// A ~100 KB query over GET answers as its POST form does (hyper alone
/// refuses a target over 64 KiB with an empty 414); past a megabyte, the
/// refusal names the limit. Multipart bodies, as curl's `-F` sends them,
/// answer as URL-encoded ones.
#[test]
fn long_get_queries_and_multipart_forms() {
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(&dir.path().join("data"), &[]);
    let port = srv.port;
    let t = now_ms();
    remote_write(
        port,
        &[WriteSeries {
            labels: vec![
                ("__name__".into(), "good_total".into()),
                ("job".into(), "test".into()),
            ],
            samples: vec![(t, 42.0)],
        }],
    );
    let time = format!("{}", t as f64 / 1000.0);
    // Two regular expressions, each under query.max_regex_bytes (64 KiB).
    let alternatives = |p: &str| (0..9_000).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
    let query = format!(
        "sum(good_total{{job=~\"test|{}\",job!~\"{}\"}})",
        alternatives("a").join("|"),
        alternatives("x").join("|")
    );
    assert!(query.len() > 100_000, "{}", query.len());
    let form = query_string(&[("query", &query), ("time", &time)]);

    let post = request(
        port,
        "POST",
        "/api/v1/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form.as_bytes(),
    );
    let want = data(&post, "POST");
    assert_eq!(want["result"][0]["value"][1], "42", "{want}");
    let get = request(port, "GET", &format!("/api/v1/query?{form}"), &[], b"");
    assert_eq!(data(&get, "long GET"), want);

    // --form-string: -F's own syntax (`@file`, `;type=`) stays out of it.
    let curl = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "--form-string"])
        .arg(format!("query={query}"))
        .args(["--form-string", &format!("time={time}")])
        .arg(format!("http://127.0.0.1:{port}/api/v1/query"))
        .output()
        .expect("run curl");
    assert!(curl.status.success(), "curl -F: {curl:?}");
    let multipart: serde_json::Value = serde_json::from_slice(&curl.stdout).unwrap();
    assert_eq!(multipart["data"], want);

    let too_long = format!("/api/v1/query?query={}", "x".repeat(1_100_000));
    let refused = request(port, "GET", &too_long, &[], b"");
    assert_eq!(refused.status, 414);
    assert!(
        refused.text().contains("1 MiB") && refused.text().contains("POST"),
        "{}",
        refused.text()
    );
    let huge_header = "h".repeat(1_100_000);
    let refused = request(
        port,
        "GET",
        "/api/v1/query?query=up",
        &[("X-Big", &huge_header)],
        b"",
    );
    assert_eq!(refused.status, 431);
    assert!(
        refused.text().contains("headers are longer than"),
        "{}",
        refused.text()
    );
    // The server is none the worse.
    let again = request(port, "GET", &format!("/api/v1/query?{form}"), &[], b"");
    assert_eq!(data(&again, "long GET again"), want);
    srv.stop();
}

/// Prometheus' admin call that gives back deleted data's space: the
/// writer asks SlateDB for the merge (204), a reader node says to ask the
/// writer (403), and it is a POST.
#[test]
fn clean_tombstones_is_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let writer = StrataProcess::start(&data, &[("STRATA_SERVER_ROLE", "writer")]);
    let path = "/api/v1/admin/tsdb/clean_tombstones";
    let resp = request(writer.port, "POST", path, &[], b"");
    assert_eq!(resp.status, 204, "{}", resp.text());
    let resp = request(writer.port, "GET", path, &[], b"");
    assert_eq!(resp.status, 405, "{}", resp.text());
    let reader = StrataProcess::start(&data, &[("STRATA_SERVER_ROLE", "reader")]);
    let resp = request(reader.port, "POST", path, &[], b"");
    assert_eq!(resp.status, 403, "{}", resp.text());
    let json = resp.json();
    assert!(
        json["error"].as_str().unwrap().contains("ask the writer"),
        "{json}"
    );
    reader.stop();
    writer.stop();
}

/// `/api/v1/status/strata`: the role, the databases read, and on a reader
/// how long ago it last read the writer's log to its end; and
/// `/api/v1/status/keys` on both.
#[test]
fn strata_status_names_the_role_and_a_readers_lag() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("data");
    let writer = StrataProcess::start(&folder, &[("STRATA_SERVER_ROLE", "writer")]);
    let reader = StrataProcess::start(&folder, &[("STRATA_SERVER_ROLE", "reader")]);
    let status = |port: u16| {
        let resp = request(port, "GET", "/api/v1/status/strata", &[], b"");
        data(&resp, "status/strata")
    };
    remote_write(
        writer.port,
        &[WriteSeries {
            labels: vec![("__name__".into(), "status_probe".into())],
            samples: vec![(now_ms() - 1_000, 1.0)],
        }],
    );

    let w = status(writer.port);
    assert_eq!(w["role"], "writer", "{w}");
    assert_eq!(w["ready"], true);
    assert_eq!(w["shards"]["count"], 1);
    assert_eq!(w["shards"]["open"], 1);
    assert_eq!(w["objectStore"]["healthy"], true);
    let db = &w["databases"][0];
    assert_eq!(db["readOnly"], false);
    assert_eq!(db["headSeries"], 1);
    assert!(db["objectStoreRequests"].as_u64().unwrap() > 0, "{w}");
    assert_eq!(db["logFollowedSecondsAgo"], serde_json::Value::Null);

    // The reader follows the writer's log: the series arrives, and the
    // last complete read is recent.
    common::wait_until(
        std::time::Duration::from_secs(20),
        "the reader holds the series",
        || status(reader.port)["databases"][0]["headSeries"] == 1,
    );
    let r = status(reader.port);
    assert_eq!(r["role"], "reader", "{r}");
    let db = &r["databases"][0];
    assert_eq!(db["readOnly"], true);
    let ago = db["logFollowedSecondsAgo"].as_f64().unwrap();
    assert!((0.0..5.0).contains(&ago), "{r}");

    // `/api/v1/status/keys`: the live keys by kind. One write, nothing
    // sealed: its log record, on the writer and on the reader alike.
    for port in [writer.port, reader.port] {
        let resp = request(port, "GET", "/api/v1/status/keys", &[], b"");
        let keys = data(&resp, "status/keys");
        let kinds = keys["databases"][0]["kinds"].as_array().unwrap();
        let log = kinds.iter().find(|k| k["kind"] == "log record");
        assert_eq!(log.map(|k| k["keys"].as_u64().unwrap()), Some(1), "{keys}");
        assert!(log.unwrap()["valueBytes"].as_u64().unwrap() > 0, "{keys}");
        assert!(kinds.iter().all(|k| k["kind"] != "bucket chunk"), "{keys}");
    }
    reader.stop();
    writer.stop();
}

/// `limit`, `lookback_delta` and `peakSamples`, over the same series
/// remote-written to Strata and to Prometheus 3.16: the same answers, byte
/// for byte where both write the whole answer (results, truncation
/// warnings, errors and their order), and the same `peakSamples` for
/// queries both engines hold alike (docs/promql.md says where they do not).
#[test]
fn query_parameters_answer_as_prometheus_3_16() {
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        "global:\n  scrape_interval: 1h\n",
        &["--web.enable-remote-write-receiver"],
    );
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(&dir.path().join("data"), &[]);
    // A whole minute, ten minutes ago: every step below falls on a sample.
    let t0 = (now_ms() / 60_000 - 10) * 60_000;
    let series = |name: &str, label: (&str, &str), samples: Vec<(i64, f64)>| WriteSeries {
        labels: vec![
            ("__name__".into(), name.into()),
            (label.0.into(), label.1.into()),
        ],
        samples,
    };
    // In label order, the order Prometheus' head then gives them in.
    let mut written = vec![series(
        "c_total",
        ("instance", "x"),
        (0..10)
            .map(|i| (t0 + i * 15_000, (i * 10) as f64))
            .collect(),
    )];
    for job in ["a", "b", "c"] {
        let samples = (0..3).map(|i| (t0 + i * 15_000, 1.0)).collect();
        written.push(series("lim", ("job", job), samples));
    }
    remote_write(prometheus.port, &written);
    remote_write(srv.port, &written);

    let at = |offset_s: i64| format!("{}", t0 / 1000 + offset_s);
    let range = |query: &str, end_s: i64, rest: &str| {
        format!(
            "/api/v1/query_range?{}&start={}&end={}&step=15{rest}",
            query_string(&[("query", query)]),
            at(0),
            at(end_s)
        )
    };
    let instant = |query: &str, offset_s: i64, rest: &str| {
        format!(
            "/api/v1/query?{}&time={}{rest}",
            query_string(&[("query", query)]),
            at(offset_s)
        )
    };
    let mut whole = vec![
        instant("lim", 30, "&limit=1"),
        instant("lim", 30, "&limit=3"),
        instant("lim", 30, "&limit=0"),
        instant("1", 30, "&limit=1"),
        instant("sum(", 30, "&time=yesterday&limit=-1"),
        instant("lim", 30, "&limit=ten"),
        instant("lim", 30, "&limit=1.5"),
        instant("lim", 30, "&limit=99999999999999999999"),
        range("lim", 30, "&limit=2"),
        range("lim", 30, "&limit=3"),
        range("sum(", 30, "&step=0&limit=-1"),
        "/api/v1/series?match[]=lim&match[]=c_total&limit=2".into(),
        "/api/v1/series?match[]=lim&match[]=c_total&limit=4".into(),
        "/api/v1/series?match[]=lim&start=x&limit=-1".into(),
        "/api/v1/series?limit=-1".into(),
        "/api/v1/labels?limit=2".into(),
        "/api/v1/labels?limit=3".into(),
        "/api/v1/labels?match[]=lim&limit=1".into(),
        "/api/v1/labels?start=x&limit=x".into(),
        "/api/v1/label/job/values?limit=2".into(),
        "/api/v1/label/__name__/values?limit=2".into(),
        "/api/v1/label/job/values?start=x&limit=-5".into(),
        "/api/v1/status/tsdb?limit=0".into(),
        "/api/v1/status/tsdb?limit=x".into(),
        "/api/v1/status/tsdb?limit=10001".into(),
    ];
    // The last sample of `c_total` is at 135 s.
    for (offset_s, lookback) in [
        (494, "6m"),
        (495, "6m"),
        (194, "1m"),
        (195, "1m"),
        (194, "60.5"),
        (194, "-60"),
        (136, "1.0005"),
        (400, "0"),
        (30, "abc"),
        (30, "5%20m"),
        (30, "1e10"),
    ] {
        whole.push(instant(
            "c_total",
            offset_s,
            &format!("&lookback_delta={lookback}"),
        ));
    }
    whole.push(range("lim", 600, "&lookback_delta=7m"));
    whole.push(range("sum(", 30, "&lookback_delta=x"));
    whole.push(instant("lim", 30, "&timeout=x&lookback_delta=x"));
    for path in &whole {
        let want = request(prometheus.port, "GET", path, &[], b"");
        let got = request(srv.port, "GET", path, &[], b"");
        assert_eq!(
            (got.status, got.json()),
            (want.status, want.json()),
            "{path}\nStrata:     {}\nPrometheus: {}",
            got.text(),
            want.text()
        );
    }

    let peak = |port: u16, path: &str| {
        let answer = data(&request(port, "GET", path, &[], b""), path);
        answer["stats"]["samples"]["peakSamples"].clone()
    };
    for path in [
        instant("lim", 30, "&stats=all"),
        instant("lim[30s]", 30, "&stats=true"),
        instant("sum(lim)", 30, "&stats=all"),
        instant("1", 30, "&stats=all"),
        range("c_total", 135, "&stats=all"),
        range("lim", 30, "&stats=all"),
        range("sum(lim)", 30, "&stats=all"),
    ] {
        let want = peak(prometheus.port, &path);
        assert!(want.as_u64().is_some_and(|n| n > 0), "{path}: {want}");
        assert_eq!(peak(srv.port, &path), want, "{path}");
    }
    srv.stop();
}
