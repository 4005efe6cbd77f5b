//! A batch as an OTLP/HTTP metrics request, as an OpenTelemetry Collector's
//! `otlphttp` exporter sends scraped Prometheus metrics: one resource per
//! target (`service.name` = job, `service.instance.id` = instance), each
//! metric a gauge with one point per series, gzipped.

use std::io::Write as _;

use prost::Message as _;
use strata_otlp::proto::{
    any_value, metric, number_data_point, AnyValue, ExportMetricsServiceRequest, Gauge, KeyValue,
    Metric, NumberDataPoint, Resource, ResourceMetrics, ScopeMetrics,
};

use crate::node::TargetTemplate;
use crate::schedule::{instance_label, Point};

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
    }
}

/// Encodes `points` into `body` (gzip of the protobuf request).
pub fn encode(template: &TargetTemplate, points: &[Point], body: &mut Vec<u8>) {
    let mut resources: Vec<ResourceMetrics> = Vec::new();
    let mut instance = String::new();
    let mut current: Option<u32> = None;
    for p in points {
        let Some(t) = template.series.get(p.series as usize) else {
            continue;
        };
        if current != Some(p.instance) {
            current = Some(p.instance);
            instance_label(p.instance, &mut instance);
            let job = t
                .labels
                .iter()
                .find(|l| l.name == "job")
                .map_or("node", |l| l.value.as_str());
            resources.push(ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![
                        string("service.name", job),
                        string("service.instance.id", &instance),
                    ],
                }),
                scope_metrics: vec![ScopeMetrics::default()],
            });
        }
        let Some(scope) = resources
            .last_mut()
            .and_then(|r| r.scope_metrics.last_mut())
        else {
            continue;
        };
        let name = t
            .labels
            .iter()
            .find(|l| l.name == "__name__")
            .map_or("", |l| l.value.as_str());
        let point = NumberDataPoint {
            attributes: t
                .labels
                .iter()
                .filter(|l| !matches!(l.name.as_str(), "__name__" | "job" | "instance"))
                .map(|l| string(&l.name, &l.value))
                .collect(),
            start_time_unix_nano: 0,
            time_unix_nano: u64::try_from(p.timestamp_ms).unwrap_or(0) * 1_000_000,
            value: Some(number_data_point::Value::AsDouble(p.value)),
            flags: 0,
            exemplars: Vec::new(),
        };
        match scope.metrics.last_mut() {
            Some(Metric {
                name: n,
                data: Some(metric::Data::Gauge(g)),
                ..
            }) if n == name => g.data_points.push(point),
            _ => scope.metrics.push(Metric {
                name: name.to_owned(),
                description: String::new(),
                unit: String::new(),
                data: Some(metric::Data::Gauge(Gauge {
                    data_points: vec![point],
                })),
            }),
        }
    }
    let request = ExportMetricsServiceRequest {
        resource_metrics: resources,
    };
    body.clear();
    let mut gz = flate2::write::GzEncoder::new(std::mem::take(body), flate2::Compression::fast());
    let encoded = request.encode_to_vec();
    if gz.write_all(&encoded).is_ok() {
        if let Ok(out) = gz.finish() {
            *body = out;
        }
    }
}
