//! The OTLP requests the tests build: attributes, number and exponential
//! histogram points, metrics, a request from one resource and scope, the
//! resource of a service, and the limits bodies are decoded under.

use strata_otlp::proto::*;
use strata_otlp::Limits;

/// The body limits of every decode.
pub(crate) const LIMITS: Limits = Limits {
    max_body_bytes: 1 << 20,
    max_decoded_bytes: 4 << 20,
};

fn s(v: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(v.into())),
    })
}

pub(crate) fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: s(v),
    }
}

/// The time of every point, in nanoseconds.
pub(crate) const T: u64 = 1_700_000_000_123_456_789;

pub(crate) fn number(attrs: Vec<KeyValue>, v: f64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs,
        start_time_unix_nano: T - 60_000_000_000,
        time_unix_nano: T,
        value: Some(number_data_point::Value::AsDouble(v)),
        flags: 0,
        exemplars: Vec::new(),
    }
}

pub(crate) fn metric(name: &str, unit: &str, data: metric::Data) -> Metric {
    Metric {
        name: name.into(),
        description: format!("{name} help"),
        unit: unit.into(),
        data: Some(data),
    }
}

pub(crate) fn request(
    resource: Vec<KeyValue>,
    metrics: Vec<Metric>,
) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "lib".into(),
                    version: "1.2".into(),
                    attributes: vec![],
                }),
                metrics,
                schema_url: String::new(),
            }],
        }],
    }
}

/// The resource of a service with an instance, a pod and an environment.
pub(crate) fn service() -> Vec<KeyValue> {
    vec![
        kv("service.name", "api"),
        kv("service.namespace", "shop"),
        kv("service.instance.id", "pod-1"),
        kv("k8s.pod.name", "api-7d9"),
        kv("deployment.environment", "prod"),
    ]
}

/// A cumulative exponential histogram point on route `/a`, with one zero
/// observation besides `positive`.
pub(crate) fn exponential(
    scale: i32,
    positive: Vec<u64>,
    flags: u32,
) -> ExponentialHistogramDataPoint {
    let count = positive.iter().sum::<u64>() + 1;
    ExponentialHistogramDataPoint {
        attributes: vec![kv("route", "/a")],
        start_time_unix_nano: T - 60_000_000_000,
        time_unix_nano: T,
        count,
        sum: Some(3.5),
        scale,
        zero_count: 1,
        positive: Some(Buckets {
            offset: 0,
            bucket_counts: positive,
        }),
        negative: None,
        flags,
        exemplars: Vec::new(),
        zero_threshold: 0.0,
    }
}
