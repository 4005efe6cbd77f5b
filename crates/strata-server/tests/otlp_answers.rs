//! OTLP/HTTP answers: success and partial success in the request's
//! format, `google.rpc.Status` for refusals with the status the exporter
//! acts on, the limits, rate limits and tenants of remote write, and late
//! samples taken as remote write takes them. The server stays up and what
//! it took stays readable.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::io::Write as _;

use common::inproc::{now_ms, raw, raw_as, Server};
use prost::Message as _;
use strata_otlp::proto::*;

fn gauge(name: &str, points: &[(i64, f64)]) -> Metric {
    Metric {
        name: name.into(),
        description: String::new(),
        unit: String::new(),
        data: Some(metric::Data::Gauge(Gauge {
            data_points: points.iter().map(|&(t, v)| point(t, v)).collect(),
        })),
    }
}

fn point(t_ms: i64, v: f64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: vec![],
        start_time_unix_nano: 0,
        time_unix_nano: u64::try_from(t_ms).unwrap() * 1_000_000,
        value: Some(number_data_point::Value::AsDouble(v)),
        flags: 0,
        exemplars: Vec::new(),
    }
}

fn request(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("svc".into())),
                    }),
                }],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics,
                schema_url: String::new(),
            }],
        }],
    }
}

struct Answer {
    status: u16,
    content_type: String,
    retry_after: Option<String>,
    body: Vec<u8>,
}

async fn post(url: &str, path: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Answer {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let header = |n: &str| r.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
    Answer {
        status: r.status().as_u16(),
        content_type: header("content-type").unwrap_or_default(),
        retry_after: header("retry-after"),
        body: r.bytes().await.unwrap().to_vec(),
    }
}

const PB: (&str, &str) = ("Content-Type", "application/x-protobuf");
const PATH: &str = "/api/v1/otlp/v1/metrics";

fn status_of(a: &Answer) -> Status {
    Status::decode(&a.body[..]).unwrap()
}

#[tokio::test]
async fn answers_follow_the_otlp_http_specification() {
    let server = Server::start(&[("STRATA_LIMITS_MAX_BODY_BYTES", "2000")]).await;
    let url = &server.url;
    let now = now_ms();

    let ok = post(
        url,
        PATH,
        request(vec![gauge("g", &[(now, 1.0)])]).encode_to_vec(),
        &[PB],
    )
    .await;
    assert_eq!(
        (ok.status, ok.content_type.as_str()),
        (200, "application/x-protobuf")
    );
    let resp = ExportMetricsServiceResponse::decode(&ok.body[..]).unwrap();
    assert_eq!(resp.partial_success, None);

    // The exporters' default path, OTLP/JSON, gzipped.
    let json = format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{{"name":"j","gauge":{{"dataPoints":[{{"timeUnixNano":"{}","asDouble":2.5}}]}}}}]}}]}}]}}"#,
        now * 1_000_000
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(json.as_bytes()).unwrap();
    let ok = post(
        url,
        "/v1/metrics",
        gz.finish().unwrap(),
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
    assert_eq!(
        (ok.content_type.as_str(), &ok.body[..]),
        ("application/json", &b"{}"[..])
    );

    // A delta sum and a point far in the future are refused alone.
    let delta = Metric {
        name: "jobs".into(),
        description: String::new(),
        unit: String::new(),
        data: Some(metric::Data::Sum(Sum {
            data_points: vec![point(now, 1.0), point(now, 2.0)],
            aggregation_temporality: TEMPORALITY_DELTA,
            is_monotonic: true,
        })),
    };
    let future = gauge("later", &[(now + 86_400_000, 1.0)]);
    let body = request(vec![delta, future, gauge("g2", &[(now, 3.0)])]).encode_to_vec();
    let partial = post(url, PATH, body, &[PB]).await;
    assert_eq!(partial.status, 200);
    let p = ExportMetricsServiceResponse::decode(&partial.body[..])
        .unwrap()
        .partial_success
        .expect("a partial success");
    assert_eq!(p.rejected_data_points, 3, "{}", p.error_message);
    assert!(
        p.error_message.contains("\"jobs\"") && p.error_message.contains("delta"),
        "{}",
        p.error_message
    );
    assert!(p.error_message.contains("future"), "{}", p.error_message);

    // Refusals of the whole request: a Status the exporter does not retry.
    type Case<'a> = (&'a [(&'a str, &'a str)], Vec<u8>, u16, &'a str);
    let cases: [Case; 4] = [
        (
            &[("Content-Type", "text/plain")],
            b"x".to_vec(),
            415,
            "unsupported content type",
        ),
        (&[PB], vec![0xff, 0xff, 0xff], 400, "invalid protobuf"),
        (
            &[PB, ("Content-Encoding", "gzip")],
            b"plain".to_vec(),
            400,
            "corrupt gzip",
        ),
        (&[PB], vec![0; 3000], 413, "exceeds the limit"),
    ];
    for (headers, body, code, text) in cases {
        let a = post(url, PATH, body, headers).await;
        assert_eq!(a.status, code, "{text}");
        let s = status_of(&a);
        assert!(s.message.contains(text), "{}", s.message);
        assert_eq!(s.code, 3, "INVALID_ARGUMENT");
    }
    let bad_json = post(
        url,
        PATH,
        b"{\"resourceMetrics\": 1}".to_vec(),
        &[("Content-Type", "application/json")],
    )
    .await;
    assert_eq!(bad_json.status, 400);
    let s: serde_json::Value = serde_json::from_slice(&bad_json.body).unwrap();
    assert!(s["message"].as_str().unwrap().contains("OTLP/JSON"), "{s}");

    // What was taken reads back; the server is still up.
    assert!(server.healthy().await);
    for (name, value) in [("g", "1"), ("j", "2.5"), ("g2", "3")] {
        let got = raw(url, name).await;
        assert_eq!(got.len(), 1, "{name}: {got:?}");
        assert_eq!(got[0].1[0].1, value, "{name}");
    }
    assert!(raw(url, "jobs_total").await.is_empty());
}

#[tokio::test]
async fn rate_limits_tenants_and_late_points_as_remote_write() {
    let server = Server::start(&[
        ("STRATA_LIMITS_INGEST_RATE_LIMIT", "50"),
        ("STRATA_LIMITS_INGEST_BURST", "50"),
    ])
    .await;
    let url = &server.url;
    let now = now_ms();

    // A tenant's series are its own.
    let team = ("X-Scope-OrgID", "team-a");
    let a = post(
        url,
        PATH,
        request(vec![gauge("t", &[(now, 1.0)])]).encode_to_vec(),
        &[PB, team],
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(raw_as(url, "t", &[team]).await.len(), 1);
    assert!(raw(url, "t").await.is_empty());

    // Out of order and 10 minutes late: taken, as remote write takes them.
    let late = request(vec![gauge("late", &[(now, 1.0), (now - 600_000, 2.0)])]);
    assert_eq!(
        post(url, PATH, late.encode_to_vec(), &[PB]).await.status,
        200
    );
    let got = raw(url, "late").await;
    assert_eq!(got[0].1.len(), 2, "{got:?}");

    // Over the tenant's rate: 429 with Retry-After, a Status inside.
    let many: Vec<(i64, f64)> = (0..200).map(|i| (now - i * 1000, 1.0)).collect();
    let a = post(
        url,
        PATH,
        request(vec![gauge("burst", &many)]).encode_to_vec(),
        &[PB],
    )
    .await;
    assert_eq!(a.status, 429);
    assert!(a.retry_after.is_some());
    let s = status_of(&a);
    assert_eq!(s.code, 8, "RESOURCE_EXHAUSTED");
    assert!(s.message.contains("rate limit"), "{}", s.message);
    assert!(raw(url, "burst").await.is_empty());
}
