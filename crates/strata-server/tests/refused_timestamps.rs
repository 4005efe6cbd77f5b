//! A sample storage will not keep is refused at the door: before the
//! epoch, older than the retention, or too far in the future, on every
//! ingest path (remote write 1.0 and 2.0, OTLP, import, and through a
//! distributor), with an answer that names the limit; the request's other
//! samples are written and read back.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use common::inproc::{body, now_ms, post, raw, ts, Server};
use prost::Message as _;
use strata_codec::Label;
use strata_remote_write::{encode_v2, V2RequestBuilder};

const DAY: i64 = 86_400_000;

/// Each kind of timestamp storage would not keep, and what its refusal
/// names.
fn bad_kinds(now: i64) -> Vec<(&'static str, i64, &'static str)> {
    vec![
        ("zero", 0, "storage.retention"),
        ("minus_1s", -1_000, "storage.retention"),
        ("minus_1d", -DAY, "storage.retention"),
        ("min", i64::MIN, "storage.retention"),
        ("min_plus", i64::MIN + 1, "storage.retention"),
        ("retention", now - 16 * DAY, "storage.retention"),
        ("future", now + 3 * DAY, "limits.max_future"),
        ("max", i64::MAX, "limits.max_future"),
    ]
}

async fn rw1(url: &str, good: &str, bad: &str, t_good: i64, t_bad: i64) -> (u16, String) {
    let b = body(vec![
        ts(&[("__name__", good)], &[(t_good, 1.0)]),
        ts(&[("__name__", bad)], &[(t_bad, 2.0)]),
    ]);
    let (s, m, _) = post(url, b, &[]).await;
    (s, m)
}

async fn rw2(url: &str, good: &str, bad: &str, t_good: i64, t_bad: i64) -> (u16, String) {
    let mut b = V2RequestBuilder::new();
    b.add_series(&[Label::new("__name__", good)], &[(t_good, 1.0)]);
    b.add_series(&[Label::new("__name__", bad)], &[(t_bad, 2.0)]);
    let mut enc = Vec::new();
    encode_v2(&b.build(), &mut enc);
    let (s, m, _) = post(
        url,
        enc,
        &[
            (
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            ),
            ("X-Prometheus-Remote-Write-Version", "2.0.0"),
        ],
    )
    .await;
    (s, m)
}

async fn import(url: &str, good: &str, bad: &str, t_good: i64, t_bad: i64) -> (u16, String) {
    let text = format!("{good} 1 {t_good}\n{bad} 2 {t_bad}\n");
    let r = reqwest::Client::new()
        .post(format!("{url}/api/v1/import/prometheus"))
        .body(text)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// OTLP carries unsigned nanoseconds: only the kinds it can express.
async fn otlp(url: &str, good: &str, bad: &str, t_good: i64, t_bad: i64) -> (u16, String) {
    use strata_otlp::proto::*;
    let gauge = |name: &str, t: i64, v: f64| Metric {
        name: name.into(),
        description: String::new(),
        unit: String::new(),
        data: Some(metric::Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                attributes: vec![],
                start_time_unix_nano: 0,
                time_unix_nano: u64::try_from(t).unwrap().saturating_mul(1_000_000),
                value: Some(number_data_point::Value::AsDouble(v)),
                flags: 0,
                exemplars: Vec::new(),
            }],
        })),
    };
    let req = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: None,
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics: vec![gauge(good, t_good, 1.0), gauge(bad, t_bad, 2.0)],
                schema_url: String::new(),
            }],
        }],
    };
    let r = reqwest::Client::new()
        .post(format!("{url}/api/v1/otlp/v1/metrics"))
        .header("Content-Type", "application/x-protobuf")
        .body(req.encode_to_vec())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let bytes = r.bytes().await.unwrap();
    // A partial success names what it refused.
    let message = ExportMetricsServiceResponse::decode(&bytes[..])
        .ok()
        .and_then(|r| r.partial_success)
        .map(|p| format!("{} rejected: {}", p.rejected_data_points, p.error_message))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
    (status, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_timestamps_are_refused_on_every_ingest_path() {
    let writer = Server::start(&[]).await;
    let distributor = Server::start(&[
        ("STRATA_SERVER_ROLE", "distributor"),
        ("STRATA_SHARDS_WRITERS", &writer.url),
    ])
    .await;
    let now = now_ms();
    let t_good = now - 60_000;
    let mut checked = 0;
    for (kind, t_bad, names) in bad_kinds(now) {
        for path in ["rw1", "rw2", "import", "otlp", "dist_rw1", "dist_rw2"] {
            let good = format!("kept_{path}_{kind}");
            let bad = format!("refused_{path}_{kind}");
            let (status, message) = match path {
                "rw1" => rw1(&writer.url, &good, &bad, t_good, t_bad).await,
                "rw2" => rw2(&writer.url, &good, &bad, t_good, t_bad).await,
                "import" => import(&writer.url, &good, &bad, t_good, t_bad).await,
                "otlp" if !(0..=i64::MAX / 1_000_000).contains(&t_bad) => continue,
                "otlp" => otlp(&writer.url, &good, &bad, t_good, t_bad).await,
                "dist_rw1" => rw1(&distributor.url, &good, &bad, t_good, t_bad).await,
                _ => rw2(&distributor.url, &good, &bad, t_good, t_bad).await,
            };
            // OTLP refuses points the way its specification says: a
            // partial success counting and naming them.
            let want = if path == "otlp" { 200 } else { 400 };
            assert_eq!(status, want, "{path} {kind}: {message}");
            assert!(
                message.contains(names) && message.contains(&bad),
                "{path} {kind}: the answer names the series and {names}: {message}"
            );
            if path == "otlp" {
                assert!(
                    message.starts_with("1 rejected"),
                    "{path} {kind}: {message}"
                );
            }
            checked += 1;
        }
    }
    // What was refused is not there; what came with it is.
    for (kind, _, _) in bad_kinds(now) {
        for path in ["rw1", "rw2", "import", "dist_rw1", "dist_rw2"] {
            let kept = raw(&writer.url, &format!("kept_{path}_{kind}")).await;
            assert_eq!(kept.len(), 1, "{path} {kind}: {kept:?}");
            let refused = common::inproc::raw(&writer.url, &format!("refused_{path}_{kind}")).await;
            assert!(refused.is_empty(), "{path} {kind}: {refused:?}");
        }
    }
    assert!(checked >= 40, "{checked}");
    distributor.stop().await;
    writer.stop().await;
}
