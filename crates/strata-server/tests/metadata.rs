//! Metric metadata: remote write 1.0's metadata list and 2.0's per-series
//! metadata are kept per tenant, survive a restart, and are served by
//! `/api/v1/metadata` with Prometheus' `metric`, `limit` and
//! `limit_per_metric` parameters.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::inproc::{now_ms, post, Server};
use strata_remote_write::proto::{v1, v2};
use strata_remote_write::{encode_v1, encode_v2, V2RequestBuilder};

fn v1_metadata(entries: &[(&str, v1::MetricType, &str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_v1(
        &v1::WriteRequest {
            timeseries: Vec::new(),
            metadata: entries
                .iter()
                .map(|&(name, t, help, unit)| v1::MetricMetadata {
                    r#type: t as i32,
                    metric_family_name: name.into(),
                    help: help.into(),
                    unit: unit.into(),
                })
                .collect(),
        },
        &mut out,
    );
    out
}

async fn metadata(url: &str, query: &str, tenant: Option<&str>) -> serde_json::Value {
    let mut req = reqwest::Client::new().get(format!("{url}/api/v1/metadata{query}"));
    if let Some(t) = tenant {
        req = req.header("X-Scope-OrgID", t);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "success", "{body}");
    body["data"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_from_both_versions_is_kept_and_served() {
    let srv = Server::start(&[]).await;
    let url = srv.url.clone();
    let (status, body, _) = post(
        &url,
        v1_metadata(&[
            (
                "http_requests_total",
                v1::MetricType::Counter,
                "Requests served.",
                "",
            ),
            (
                "process_resident_memory_bytes",
                v1::MetricType::Gauge,
                "RSS.",
                "bytes",
            ),
            // A second target that describes the same metric otherwise.
            (
                "http_requests_total",
                v1::MetricType::Counter,
                "HTTP requests.",
                "",
            ),
        ]),
        &[],
    )
    .await;
    assert_eq!(status, 204, "{body}");

    // 2.0: metadata on series, with samples; one entry per metric.
    let mut b = V2RequestBuilder::new();
    let (help, unit) = (b.symbol("Time spent."), b.symbol("seconds"));
    for job in ["a", "b"] {
        let labels = [
            strata_codec::Label::new("__name__", "work_seconds_total"),
            strata_codec::Label::new("job", job),
        ];
        let mut refs = Vec::new();
        for l in &labels {
            refs.push(b.symbol(&l.name));
            refs.push(b.symbol(&l.value));
        }
        b.push_series(v2::TimeSeries {
            labels_refs: refs,
            samples: vec![v2::Sample {
                value: 1.0,
                timestamp: now_ms(),
                start_timestamp: 0,
            }],
            metadata: Some(v2::Metadata {
                r#type: v2::metadata::MetricType::Counter as i32,
                help_ref: help,
                unit_ref: unit,
            }),
            ..Default::default()
        });
    }
    let mut raw = Vec::new();
    encode_v2(&b.build(), &mut raw);
    let (status, body, _) = post(
        &url,
        raw,
        &[
            (
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            ),
            ("X-Prometheus-Remote-Write-Version", "2.0.0"),
        ],
    )
    .await;
    assert_eq!(status, 204, "{body}");

    let all = metadata(&url, "", None).await;
    assert_eq!(
        all,
        serde_json::json!({
            "http_requests_total": [
                {"type": "counter", "help": "Requests served.", "unit": ""},
                {"type": "counter", "help": "HTTP requests.", "unit": ""}
            ],
            "process_resident_memory_bytes": [
                {"type": "gauge", "help": "RSS.", "unit": "bytes"}
            ],
            "work_seconds_total": [
                {"type": "counter", "help": "Time spent.", "unit": "seconds"}
            ]
        })
    );
    // Prometheus' parameters.
    let one = metadata(&url, "?metric=work_seconds_total", None).await;
    assert_eq!(one.as_object().unwrap().len(), 1, "{one}");
    assert_eq!(
        metadata(&url, "?limit=2", None)
            .await
            .as_object()
            .unwrap()
            .len(),
        2
    );
    let first = metadata(&url, "?limit_per_metric=1", None).await;
    assert_eq!(first["http_requests_total"].as_array().unwrap().len(), 1);
    assert_eq!(
        metadata(&url, "?metric=absent", None).await,
        serde_json::json!({})
    );
    // Resent unchanged (Prometheus resends every minute): nothing new.
    let (status, _, _) = post(
        &url,
        v1_metadata(&[(
            "http_requests_total",
            v1::MetricType::Counter,
            "Requests served.",
            "",
        )]),
        &[],
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(metadata(&url, "", None).await, all);

    // Kept across a restart.
    let dir = srv.stop().await;
    let srv = Server::start_in(dir, &[]).await;
    assert_eq!(metadata(&srv.url, "", None).await, all);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_sees_its_own_metadata() {
    let srv = Server::start(&[("STRATA_TENANTS_REQUIRED", "true")]).await;
    let url = srv.url.clone();
    for (tenant, help) in [("team-a", "A's help."), ("team-b", "B's help.")] {
        let (status, body, _) = post(
            &url,
            v1_metadata(&[("shared_total", v1::MetricType::Counter, help, "")]),
            &[("X-Scope-OrgID", tenant)],
        )
        .await;
        assert_eq!(status, 204, "{body}");
    }
    let a = metadata(&url, "", Some("team-a")).await;
    assert_eq!(a["shared_total"][0]["help"], "A's help.", "{a}");
    assert_eq!(a["shared_total"].as_array().unwrap().len(), 1, "{a}");
    let b = metadata(&url, "", Some("team-b")).await;
    assert_eq!(b["shared_total"][0]["help"], "B's help.", "{b}");
    srv.stop().await;
}
