//! Names that are not UTF-8 on the way in: remote write 1.0 and 2.0 and
//! OTLP answer 400 naming the problem, the request's valid series are
//! written, and the server stays up.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use common::{http_request, now_ms, query_string, HttpResponse, StrataProcess};
use strata_codec::Label;
use strata_otlp::proto::{
    any_value, metric, number_data_point, AnyValue, ExportMetricsServiceRequest, Gauge, KeyValue,
    Metric, NumberDataPoint, Resource, ResourceMetrics, ScopeMetrics,
};
use strata_remote_write::proto::v1::{Label as V1Label, Sample, TimeSeries, WriteRequest};
use strata_remote_write::V2RequestBuilder;

fn get(port: u16, path: &str) -> HttpResponse {
    http_request(port, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"))
}

/// `body` with the first `~~` replaced by two bytes that are not UTF-8.
fn spoil(mut body: Vec<u8>) -> Vec<u8> {
    let at = body.windows(2).position(|w| w == b"~~").unwrap();
    body[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    body
}

/// A name that is not UTF-8 is refused with a 400 naming the problem, in
/// remote write 1.0 and 2.0 and in OTLP; the request's valid series are
/// written (remote write) and the server stays up.
#[test]
fn names_not_utf8_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(
        &dir.path().join("data"),
        &[("STRATA_OTLP_TRANSLATION_STRATEGY", "NoTranslation")],
    );
    let t = now_ms();
    let v1_series = |name: &str, label: &str| TimeSeries {
        labels: vec![
            V1Label {
                name: "__name__".into(),
                value: name.into(),
            },
            V1Label {
                name: label.into(),
                value: "v".into(),
            },
        ],
        samples: vec![Sample {
            value: 1.0,
            timestamp: t,
        }],
        ..TimeSeries::default()
    };
    let v1 = WriteRequest {
        timeseries: vec![
            v1_series("bad.v1", "http.~~status"),
            v1_series("good.v1", "http.status"),
        ],
        ..WriteRequest::default()
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&spoil(prost::Message::encode_to_vec(&v1)))
        .unwrap();
    let v1_answer = http_request(
        srv.port,
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
        &body,
    )
    .unwrap();

    let mut b = V2RequestBuilder::new();
    for (name, label) in [("bad.v2", "k8s.~~pod"), ("good.v2", "k8s.pod")] {
        b.add_series(
            &[Label::new("__name__", name), Label::new(label, "p")],
            &[(t, 2.0)],
        );
    }
    let body = snap::raw::Encoder::new()
        .compress_vec(&spoil(prost::Message::encode_to_vec(&b.build())))
        .unwrap();
    let v2_answer = http_request(
        srv.port,
        "POST",
        "/api/v1/write",
        &[
            (
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            ),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "2.0.0"),
        ],
        &body,
    )
    .unwrap();

    let attribute = |key: &str| KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue("x".into())),
        }),
    };
    let otlp = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![attribute("service.name")],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics: vec![Metric {
                    name: "otlp.gauge".into(),
                    description: String::new(),
                    unit: String::new(),
                    data: Some(metric::Data::Gauge(Gauge {
                        data_points: vec![NumberDataPoint {
                            attributes: vec![attribute("state.~~name")],
                            time_unix_nano: u64::try_from(t).unwrap() * 1_000_000,
                            value: Some(number_data_point::Value::AsDouble(3.0)),
                            ..NumberDataPoint::default()
                        }],
                    })),
                }],
                schema_url: String::new(),
            }],
        }],
    };
    let otlp_answer = http_request(
        srv.port,
        "POST",
        "/api/v1/otlp/v1/metrics",
        &[("Content-Type", "application/x-protobuf")],
        &spoil(prost::Message::encode_to_vec(&otlp)),
    )
    .unwrap();

    for (answer, names) in [
        (&v1_answer, r#"a label name is not valid UTF-8: "http."#),
        (
            &v2_answer,
            "(a label name) refers to symbol 3, which is not valid UTF-8",
        ),
        (&otlp_answer, "KeyValue.key"),
    ] {
        assert_eq!(answer.status, 400, "{}", answer.text());
        assert!(answer.text().contains(names), "{}", answer.text());
    }
    assert!(
        otlp_answer.text().contains("not UTF-8"),
        "{}",
        otlp_answer.text()
    );

    let path = format!(
        "/api/v1/query?{}",
        query_string(&[
            ("query", r#"{__name__=~"(good|bad|otlp)\\..+"}"#),
            ("time", &format!("{}", t / 1000 + 1)),
        ])
    );
    let answer = get(srv.port, &path);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let json = answer.json();
    let names: Vec<&str> = json["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"]["__name__"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["good.v1", "good.v2"], "{}", answer.text());
    srv.stop();
}
