//! Tenants: isolated from each other, each held to its own limits, and
//! the tenant header required when the server asks for it.

use crate::common::inproc::{body, now_ms, post, raw, raw_as, ts, Server};
use crate::{expect, send, GOOD};

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
