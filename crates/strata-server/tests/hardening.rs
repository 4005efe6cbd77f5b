//! The bad-input list at the HTTP level: limits, special values, retries,
//! tenants, credentials and TLS. Each case checks the status, that the
//! message names the problem, and that data accepted before stays
//! readable.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::inproc::{body, now_ms, post, post_with, raw, raw_as, ts, Server};
use strata_codec::{MatchOp, Matcher};
use strata_storage::{open_object_store, S3Settings, StorageSettings, SystemClock, Writer};

const GOOD: &[(&str, &str)] = &[("__name__", "good_total"), ("job", "test")];

fn expect(name: &str, got: (u16, String), want: u16, needle: &str) {
    let (status, msg) = got;
    assert_eq!(status, want, "{name}: {msg}");
    assert!(
        msg.to_lowercase().contains(&needle.to_lowercase()),
        "{name}: message {msg:?} lacks {needle:?}"
    );
}

async fn send(url: &str, b: Vec<u8>, headers: &[(&str, &str)]) -> (u16, String) {
    let (s, m, _) = post(url, b, headers).await;
    (s, m)
}

/// Resident memory of this process (the in-process server's), in bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_and_label_limits() {
    let srv = Server::start(&[
        ("STRATA_LIMITS_MAX_LABELS_PER_SERIES", "4"),
        ("STRATA_LIMITS_MAX_LABEL_NAME_LENGTH", "20"),
        ("STRATA_LIMITS_MAX_LABEL_VALUE_LENGTH", "30"),
        ("STRATA_LIMITS_MAX_SERIES_PER_REQUEST", "50"),
        ("STRATA_LIMITS_MAX_SAMPLES_PER_REQUEST", "200"),
    ])
    .await;
    let url = srv.url.clone();
    let t = now_ms();
    assert_eq!(
        send(&url, body(vec![ts(GOOD, &[(t, 1.0)])]), &[]).await.0,
        204
    );
    let before = raw(&url, "good_total").await;
    assert_eq!(before.len(), 1);

    let long_value = "v".repeat(31);
    let long_name = "n".repeat(21);
    /// A series case: name, labels, a word the message must contain.
    type SeriesCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let series_cases: Vec<SeriesCase> = vec![
        (
            "too many labels",
            vec![
                ("__name__", "x"),
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
            ],
            "max_labels_per_series",
        ),
        (
            "long label name",
            vec![("__name__", "x"), (&long_name, "1")],
            "max_label_name_length",
        ),
        (
            "long label value",
            vec![("__name__", "x"), ("a", &long_value)],
            "max_label_value_length",
        ),
        (
            "reserved tenant label",
            vec![("__name__", "x"), ("__tenant__", "other")],
            "reserved",
        ),
    ];
    for (name, labels, needle) in series_cases {
        // The bad series is named; the good one of the same request lands.
        let (s, m) = send(
            &url,
            body(vec![
                ts(&labels, &[(t, 1.0)]),
                ts(&[("__name__", "ok_total"), ("case", name)], &[(t, 1.0)]),
            ]),
            &[],
        )
        .await;
        expect(name, (s, m.clone()), 400, needle);
        assert!(m.contains("1 of 2 samples rejected"), "{name}: {m}");
        let ok = raw(&url, &format!("ok_total{{case=\"{name}\"}}")).await;
        assert_eq!(ok.len(), 1, "{name}: the valid series was written");
    }

    let many_series: Vec<_> = (0..51)
        .map(|i| ts(&[("__name__", "m"), ("i", &i.to_string())], &[(t, 1.0)]))
        .collect();
    expect(
        "too many series",
        send(&url, body(many_series), &[]).await,
        413,
        "max_series_per_request",
    );
    let many_samples: Vec<(i64, f64)> = (0..201).map(|i| (t + i, 1.0)).collect();
    expect(
        "too many samples",
        send(&url, body(vec![ts(GOOD, &many_samples)]), &[]).await,
        413,
        "max_samples_per_request",
    );

    // More than 10 minutes ahead: refused; 5 minutes ahead: taken.
    expect(
        "future sample",
        send(
            &url,
            body(vec![ts(
                &[("__name__", "future")],
                &[(t + 11 * 60_000, 1.0)],
            )]),
            &[],
        )
        .await,
        400,
        "future",
    );
    assert_eq!(
        send(
            &url,
            body(vec![ts(&[("__name__", "soon")], &[(t + 5 * 60_000, 1.0)])]),
            &[],
        )
        .await
        .0,
        204
    );

    // Framed snappy (the stream format) is not the block format.
    let mut framed = Vec::new();
    {
        use std::io::Write;
        let mut w = snap::write::FrameEncoder::new(&mut framed);
        w.write_all(
            &snap::raw::Decoder::new()
                .decompress_vec(&body(vec![ts(GOOD, &[(t + 1, 2.0)])]))
                .unwrap(),
        )
        .unwrap();
    }
    expect(
        "framed snappy",
        send(&url, framed, &[]).await,
        400,
        "snappy",
    );
    expect(
        "deflate",
        send(
            &url,
            body(vec![ts(GOOD, &[(t + 1, 2.0)])]),
            &[("Content-Encoding", "deflate")],
        )
        .await,
        415,
        "deflate",
    );

    // A snappy header declaring 4 GiB: refused before allocating, again and
    // again, with memory flat.
    let rss_before = rss_bytes();
    for _ in 0..50 {
        expect(
            "4 GiB declared",
            send(&url, vec![0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0], &[]).await,
            413,
            "decoded",
        );
    }
    let grown = rss_bytes().saturating_sub(rss_before);
    assert!(grown < 64 << 20, "memory grew by {grown} bytes");

    assert_eq!(raw(&url, "good_total").await, before, "earlier data intact");
    let healthy = reqwest::get(format!("{url}/-/healthy")).await.unwrap();
    assert_eq!(healthy.status(), 200);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_values_retries_and_staleness() {
    let srv = Server::start(&[]).await;
    let url = srv.url.clone();
    let t = now_ms() - 60_000;
    let specials: [u64; 7] = [
        0x7ff8_0000_0000_0001,       // a NaN with a payload
        0x7ff0_0000_0000_0002,       // Prometheus' stale marker
        f64::INFINITY.to_bits(),     // +Inf
        f64::NEG_INFINITY.to_bits(), // -Inf
        (-0.0f64).to_bits(),
        1,                     // the smallest subnormal
        0x000f_ffff_ffff_ffff, // the largest subnormal
    ];
    for (i, bits) in specials.iter().enumerate() {
        let b = body(vec![ts(
            &[("__name__", "special"), ("case", &i.to_string())],
            &[(t, 1.0), (t + 1000, f64::from_bits(*bits))],
        )]);
        assert_eq!(send(&url, b.clone(), &[]).await.0, 204);
        // A retry of the same request (as after a 5xx whose write landed)
        // is accepted and adds nothing.
        assert_eq!(send(&url, b, &[]).await.0, 204, "retry accepted");
    }
    let got = raw(&url, "special").await;
    assert_eq!(got.len(), specials.len());
    for (metric, samples) in &got {
        // Range selectors leave stale markers out, as Prometheus does.
        let want = if metric["case"] == "1" { 1 } else { 2 };
        assert_eq!(
            samples.len(),
            want,
            "no duplicates after the retry: {metric} {samples:?}"
        );
    }

    // The stale marker ends its series for instant queries right away.
    let at = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    let instant = |time: String| {
        let url = url.clone();
        async move {
            let r: serde_json::Value = reqwest::Client::new()
                .get(format!("{url}/api/v1/query"))
                .query(&[("query", "special"), ("time", &time)])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["data"]["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["metric"]["case"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(instant(at(t + 500)).await.len(), specials.len());
    let after = instant(at(t + 2000)).await;
    assert!(
        !after.contains(&"1".to_owned()),
        "stale series gone: {after:?}"
    );
    assert_eq!(after.len(), specials.len() - 1, "{after:?}");

    // Stored bit for bit: read the folder back with the storage library.
    let dir = srv.stop().await;
    let loc = open_object_store(
        &format!("file://{}", dir.path().join("data").display()),
        &S3Settings::default(),
    )
    .unwrap();
    let db = Writer::open(
        loc.store,
        &loc.path,
        StorageSettings::default(),
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    let m = Matcher::new(MatchOp::Equal, "__name__", "special").unwrap();
    let series = db.select(&[m], t - 1, t + 2000).await.unwrap();
    assert_eq!(series.len(), specials.len());
    for s in &series {
        let case: usize = s
            .labels
            .iter()
            .find(|l| l.name == "case")
            .unwrap()
            .value
            .parse()
            .unwrap();
        let bits: Vec<u64> = s.values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, vec![1.0f64.to_bits(), specials[case]], "case {case}");
    }
    db.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_isolated_and_limited() {
    let srv = Server::start(&[(
        "STRATA_TENANTS_OVERRIDES",
        r#"[{ tenant = "small", ingest_rate_limit = 100, ingest_burst = 100, max_active_series = 2 }]"#,
    )])
    .await;
    let url = srv.url.clone();
    let t = now_ms();
    let shared = &[("__name__", "shared"), ("job", "x")];
    for (tenant, value) in [(Some("a"), 1.0), (Some("b"), 2.0), (None, 3.0)] {
        let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
        let b = body(vec![
            ts(shared, &[(t, value)]),
            ts(
                &[
                    ("__name__", "own"),
                    ("tenant_name", tenant.unwrap_or("default")),
                ],
                &[(t, value)],
            ),
        ]);
        assert_eq!(send(&url, b, &headers).await.0, 204);
    }
    let as_tenant = |t: &'static str| vec![("X-Scope-OrgID", t)];
    for (tenant, value) in [("a", "1"), ("b", "2"), ("anonymous", "3")] {
        let got = raw_as(&url, "shared", &as_tenant(tenant)).await;
        assert_eq!(got.len(), 1, "{tenant}: {got:?}");
        assert_eq!(got[0].1[0].1, value, "{tenant}");
        assert!(
            got[0].0.get("__tenant__").is_none(),
            "label hidden: {got:?}"
        );
        assert_eq!(raw_as(&url, "own", &as_tenant(tenant)).await.len(), 1);
        // In a tenant's view no series has the tenant label: naming any
        // tenant in a matcher finds nothing, and its absence matches.
        for other in ["a", "b"] {
            let sel = format!("shared{{__tenant__=\"{other}\"}}");
            let got = raw_as(&url, &sel, &as_tenant(tenant)).await;
            assert!(got.is_empty(), "{tenant} reads {other}: {got:?}");
        }
        let got = raw_as(&url, "shared{__tenant__=\"\"}", &as_tenant(tenant)).await;
        assert_eq!(got.len(), 1, "{tenant}: {got:?}");
        let got = raw_as(&url, "shared{__tenant__=~\".+\"}", &as_tenant(tenant)).await;
        assert!(got.is_empty(), "{tenant}: {got:?}");
    }
    assert_eq!(
        raw(&url, "shared").await[0].1[0].1,
        "3",
        "no header: default"
    );

    // Metadata endpoints see the tenant's series only.
    let get = |path: String, tenant: &'static str| {
        let url = url.clone();
        async move {
            let r: serde_json::Value = reqwest::Client::new()
                .get(format!("{url}{path}"))
                .header("X-Scope-OrgID", tenant)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(r["status"], "success", "{r}");
            r["data"].clone()
        }
    };
    let values = get("/api/v1/label/tenant_name/values".into(), "a").await;
    assert_eq!(values, serde_json::json!(["a"]));
    let values = get("/api/v1/label/__tenant__/values".into(), "a").await;
    assert_eq!(values, serde_json::json!([]));
    let names = get("/api/v1/labels".into(), "b").await;
    assert!(!names.to_string().contains("__tenant__"), "{names}");
    let series = get("/api/v1/series?match[]=shared".into(), "b").await;
    assert_eq!(
        series,
        serde_json::json!([{"__name__": "shared", "job": "x"}])
    );

    // A bad tenant name.
    let (s, m) = send(
        &url,
        body(vec![ts(GOOD, &[(t, 1.0)])]),
        &[("X-Scope-OrgID", "a/b")],
    )
    .await;
    expect("bad tenant", (s, m), 400, "X-Scope-OrgID");

    // A tenant over its rate: 429 with Retry-After; others unaffected.
    let burst: Vec<(i64, f64)> = (0..80).map(|i| (t + i, 1.0)).collect();
    let small = [("X-Scope-OrgID", "small")];
    assert_eq!(
        send(&url, body(vec![ts(GOOD, &burst)]), &small).await.0,
        204
    );
    let more: Vec<(i64, f64)> = (80..160).map(|i| (t + i, 1.0)).collect();
    let (s, m, h) = post(&url, body(vec![ts(GOOD, &more)]), &small).await;
    expect("tenant rate", (s, m), 429, "small");
    assert!(h.get("retry-after").is_some());
    assert_eq!(
        send(&url, body(vec![ts(GOOD, &more)]), &[("X-Scope-OrgID", "a")])
            .await
            .0,
        204,
        "another tenant is not limited"
    );

    // The small tenant's series limit (2, and good_total is one): one new
    // series fits, the next is refused, existing ones keep ingesting.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let series = |name: &str, at: i64| ts(&[("__name__", name)], &[(at, 1.0)]);
    assert_eq!(send(&url, body(vec![series("s1", t)]), &small).await.0, 204);
    let (s, m) = send(
        &url,
        body(vec![series("s2", t), series("s1", t + 1)]),
        &small,
    )
    .await;
    expect("series limit", (s, m.clone()), 400, "active series limit");
    assert!(m.contains("1 of 2 samples rejected"), "{m}");
    assert_eq!(
        send(&url, body(vec![series("s1", t + 2)]), &small).await.0,
        204,
        "existing series keep ingesting"
    );
    assert_eq!(raw_as(&url, "s1", &small).await[0].1.len(), 3);
    assert!(raw_as(&url, "s2", &small).await.is_empty());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_header_required() {
    let srv = Server::start(&[("STRATA_TENANTS_REQUIRED", "true")]).await;
    let b = || body(vec![ts(GOOD, &[(now_ms(), 1.0)])]);
    expect(
        "no tenant",
        send(&srv.url, b(), &[]).await,
        401,
        "X-Scope-OrgID",
    );
    let r = reqwest::get(format!("{}/api/v1/query?query=up", srv.url))
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let j: serde_json::Value = r.json().await.unwrap();
    assert_eq!(j["status"], "error");
    assert_eq!(send(&srv.url, b(), &[("X-Scope-OrgID", "t1")]).await.0, 204);
    assert_eq!(
        raw_as(&srv.url, "good_total", &[("X-Scope-OrgID", "t1")])
            .await
            .len(),
        1
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, "# tokens\nshared-token\n\n").unwrap();
    let hash = bcrypt::hash("dashboards", 4).unwrap();
    let write_hash = bcrypt::hash("writer-only", 4).unwrap();
    let read_users = format!("[\"grafana:{hash}\"]");
    let write_tokens = format!("[\"{write_hash}\"]");
    let srv = Server::start_in(
        dir,
        &[
            ("STRATA_AUTH_TOKEN_FILE", token_file.to_str().unwrap()),
            ("STRATA_AUTH_READ_BASIC_AUTH", &read_users),
            ("STRATA_AUTH_WRITE_BEARER_TOKEN_HASHES", &write_tokens),
        ],
    )
    .await;
    let url = srv.url.clone();
    let b = || body(vec![ts(GOOD, &[(now_ms(), 1.0)])]);

    let (s, m, h) = post(&url, b(), &[]).await;
    expect("no credentials", (s, m), 401, "authentication required");
    assert!(h.get("www-authenticate").is_some());
    expect(
        "bad token",
        send(&url, b(), &[("Authorization", "Bearer nope")]).await,
        401,
        "invalid",
    );
    assert_eq!(
        send(&url, b(), &[("Authorization", "Bearer shared-token")])
            .await
            .0,
        204
    );
    assert_eq!(
        send(&url, b(), &[("Authorization", "Bearer writer-only")])
            .await
            .0,
        204
    );
    let client = reqwest::Client::new();
    let query = |auth: Option<(&str, &str)>, token: Option<&str>| {
        let mut r = client
            .get(format!("{url}/api/v1/query"))
            .query(&[("query", "good_total")]);
        if let Some((u, p)) = auth {
            r = r.basic_auth(u, Some(p));
        }
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move { r.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(query(None, None).await, 401);
    assert_eq!(query(Some(("grafana", "wrong")), None).await, 401);
    assert_eq!(query(Some(("grafana", "dashboards")), None).await, 200);
    assert_eq!(query(None, Some("shared-token")).await, 200);
    assert_eq!(
        query(None, Some("writer-only")).await,
        401,
        "write-only token"
    );
    // Write with the read side's user: refused.
    let enc = "Basic Z3JhZmFuYTpkYXNoYm9hcmRz"; // grafana:dashboards
    assert_eq!(send(&url, b(), &[("Authorization", enc)]).await.0, 401);
    // Probes stay open; /metrics is on the read side.
    for (path, want) in [("/-/healthy", 200), ("/-/ready", 200), ("/metrics", 401)] {
        let s = client
            .get(format!("{url}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(s.as_u16(), want, "{path}");
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["client".into()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    let file = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cert = file("server.pem", server_cert.pem());
    let key = file("server.key", server_key.serialize_pem());
    let ca_file = file("ca.pem", ca.pem());
    let root = reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap();
    let identity = reqwest::Identity::from_pem(
        format!("{}{}", client_cert.pem(), client_key.serialize_pem()).as_bytes(),
    )
    .unwrap();
    let with_cert = reqwest::Client::builder()
        .add_root_certificate(root.clone())
        .identity(identity)
        .build()
        .unwrap();
    let srv = Server::start_with(
        dir,
        &[
            ("STRATA_TLS_CERT_FILE", &cert),
            ("STRATA_TLS_KEY_FILE", &key),
            ("STRATA_TLS_CLIENT_CA_FILE", &ca_file),
        ],
        with_cert.clone(),
        "https",
    )
    .await;
    let url = srv.url.clone();
    let t = now_ms();
    let (s, m, _) = post_with(&with_cert, &url, body(vec![ts(GOOD, &[(t, 1.0)])]), &[]).await;
    assert_eq!(s, 204, "{m}");
    let r = with_cert
        .get(format!("{url}/api/v1/query"))
        .query(&[("query", "good_total")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("good_total"));

    // Without a client certificate the handshake fails.
    let no_cert = reqwest::Client::builder()
        .add_root_certificate(root)
        .build()
        .unwrap();
    let r = no_cert
        .get(format!("{url}/api/v1/query?query=up"))
        .send()
        .await;
    assert!(r.is_err(), "no client certificate: {r:?}");
    // Plain HTTP to the TLS port gets no answer.
    let plain = reqwest::get(format!(
        "http://{}/-/healthy",
        url.trim_start_matches("https://")
    ))
    .await;
    assert!(plain.map(|r| r.status() != 200).unwrap_or(true));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_limits() {
    let srv = Server::start(&[
        ("STRATA_QUERY_MAX_SAMPLES", "100"),
        ("STRATA_QUERY_MAX_REGEX_BYTES", "1000"),
    ])
    .await;
    let url = srv.url.clone();
    let t = now_ms() - 600_000;
    let samples: Vec<(i64, f64)> = (0..500).map(|i| (t + i * 1000, i as f64)).collect();
    assert_eq!(send(&url, body(vec![ts(GOOD, &samples)]), &[]).await.0, 204);
    let get = |params: Vec<(&'static str, String)>, path: &'static str| {
        let url = url.clone();
        async move {
            let r = reqwest::Client::new()
                .get(format!("{url}{path}"))
                .query(&params)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let j: serde_json::Value = r.json().await.unwrap();
            (status, j)
        }
    };
    let secs = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    let range = |step: &str, end: i64| {
        vec![
            ("query", "good_total".to_owned()),
            ("start", secs(t)),
            ("end", secs(end)),
            ("step", step.to_owned()),
        ]
    };
    for (name, params, want, error_type, needle) in [
        (
            "11,001 steps",
            range("1", t + 11_001_000),
            400,
            "bad_data",
            "11,000",
        ),
        ("step 0", range("0", t + 10_000), 400, "bad_data", "step"),
        (
            "negative step",
            range("-5", t + 10_000),
            400,
            "bad_data",
            "step",
        ),
        (
            "too many samples",
            vec![
                ("query", "sum_over_time(good_total[10m])".to_owned()),
                ("time", secs(t + 500_000)),
            ],
            422,
            "execution",
            "samples",
        ),
    ] {
        let path = if params.iter().any(|(k, _)| *k == "step") {
            "/api/v1/query_range"
        } else {
            "/api/v1/query"
        };
        let (s, j) = get(params, path).await;
        assert_eq!(s, want, "{name}: {j}");
        assert_eq!(j["errorType"], error_type, "{name}: {j}");
        let msg = j["error"].as_str().unwrap_or_default().to_lowercase();
        assert!(msg.contains(needle), "{name}: {msg}");
    }
    // A huge regular expression, in a query and in match[]; a long one
    // under the limit still works.
    let huge = format!("good_total{{job=~\"{}\"}}", "a|".repeat(600));
    let (s, j) = get(vec![("query", huge.clone())], "/api/v1/query").await;
    assert_eq!(s, 400, "{j}");
    assert!(
        j["error"].as_str().unwrap().contains("max_regex_bytes"),
        "{j}"
    );
    let (s, j) = get(vec![("match[]", huge)], "/api/v1/series").await;
    assert_eq!(s, 400, "{j}");
    let fits = format!("good_total{{job=~\"test|{}\"}}", "b|".repeat(400));
    let (s, j) = get(
        vec![("query", fits), ("time", secs(t + 1000))],
        "/api/v1/query",
    )
    .await;
    assert_eq!(s, 200, "{j}");
    assert_eq!(j["data"]["result"].as_array().unwrap().len(), 1, "{j}");

    // Under the sample budget the same data answers.
    let (s, _) = get(
        vec![
            ("query", "sum_over_time(good_total[50s])".to_owned()),
            ("time", secs(t + 100_000)),
        ],
        "/api/v1/query",
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        reqwest::get(format!("{url}/-/healthy"))
            .await
            .unwrap()
            .status(),
        200
    );
    srv.stop().await;
}
