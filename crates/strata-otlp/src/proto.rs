//! The OTLP metrics messages a receiver reads, written by hand with `prost`
//! derives for the protobuf encoding and `serde` derives for OTLP/JSON.
//!
//! Field numbers follow `opentelemetry/proto/collector/metrics/v1/
//! metrics_service.proto`, `metrics/v1/metrics.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`. Fields a
//! receiver does not use (dropped-attribute counts, schema URLs of
//! resources, histogram min and max) are left out: protobuf skips unknown fields and the JSON
//! decoder ignores unknown keys.
//!
//! OTLP/JSON is proto3's JSON mapping with two twists the spec names:
//! keys in lowerCamelCase, 64-bit integers as decimal strings (numbers are
//! accepted too), enums as integers, and trace and span ids in hex.

use serde::Deserialize;

use crate::json;

/// `ExportMetricsServiceRequest`: the whole body of a request.
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// The metrics of one resource (a process, a pod).
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// The metrics of one instrumentation scope (a library).
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(oneof = "metric::Data", tags = "5, 7, 9, 10, 11")]
    #[serde(flatten)]
    pub data: Option<metric::Data>,
}

pub mod metric {
    use serde::Deserialize;

    /// What kind of metric it is, with its data points.
    #[derive(Clone, PartialEq, prost::Oneof, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Data {
        #[prost(message, tag = "5")]
        Gauge(super::Gauge),
        #[prost(message, tag = "7")]
        Sum(super::Sum),
        #[prost(message, tag = "9")]
        Histogram(super::Histogram),
        #[prost(message, tag = "10")]
        ExponentialHistogram(super::ExponentialHistogram),
        #[prost(message, tag = "11")]
        Summary(super::Summary),
    }
}

/// `AggregationTemporality`: how a sum or histogram accumulates.
pub const TEMPORALITY_UNSPECIFIED: i32 = 0;
pub const TEMPORALITY_DELTA: i32 = 1;
pub const TEMPORALITY_CUMULATIVE: i32 = 2;

/// `DataPointFlags.FLAG_NO_RECORDED_VALUE`: the point marks the end of a
/// series (a Prometheus stale marker).
pub const FLAG_NO_RECORDED_VALUE: u32 = 1;

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Gauge {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Sum {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    #[prost(int32, tag = "2")]
    #[serde(deserialize_with = "json::enum_number")]
    pub aggregation_temporality: i32,
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Histogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    #[prost(int32, tag = "2")]
    #[serde(deserialize_with = "json::enum_number")]
    pub aggregation_temporality: i32,
}

/// Exponential histograms become native histograms.
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExponentialHistogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<ExponentialHistogramDataPoint>,
    #[prost(int32, tag = "2")]
    #[serde(deserialize_with = "json::enum_number")]
    pub aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<SummaryDataPoint>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NumberDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    #[serde(deserialize_with = "json::u64_number")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    #[serde(deserialize_with = "json::u64_number")]
    pub time_unix_nano: u64,
    #[prost(oneof = "number_data_point::Value", tags = "4, 6")]
    #[serde(flatten)]
    pub value: Option<number_data_point::Value>,
    #[prost(message, repeated, tag = "5")]
    pub exemplars: Vec<Exemplar>,
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

pub mod number_data_point {
    use serde::Deserialize;

    use crate::json;

    #[derive(Clone, Copy, PartialEq, prost::Oneof, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Value {
        #[prost(double, tag = "4")]
        AsDouble(#[serde(deserialize_with = "json::f64_number")] f64),
        #[prost(sfixed64, tag = "6")]
        AsInt(#[serde(deserialize_with = "json::i64_number")] i64),
    }
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HistogramDataPoint {
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    #[serde(deserialize_with = "json::u64_number")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    #[serde(deserialize_with = "json::u64_number")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    #[serde(deserialize_with = "json::u64_number")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    #[serde(deserialize_with = "json::optional_f64_number")]
    pub sum: Option<f64>,
    #[prost(fixed64, repeated, tag = "6")]
    #[serde(deserialize_with = "json::u64_numbers")]
    pub bucket_counts: Vec<u64>,
    #[prost(double, repeated, tag = "7")]
    #[serde(deserialize_with = "json::f64_numbers")]
    pub explicit_bounds: Vec<f64>,
    #[prost(message, repeated, tag = "8")]
    pub exemplars: Vec<Exemplar>,
    #[prost(uint32, tag = "10")]
    pub flags: u32,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExponentialHistogramDataPoint {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    #[serde(deserialize_with = "json::u64_number")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    #[serde(deserialize_with = "json::u64_number")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    #[serde(deserialize_with = "json::u64_number")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    #[serde(deserialize_with = "json::optional_f64_number")]
    pub sum: Option<f64>,
    /// Bucket bounds grow by `2^(2^-scale)`: a native histogram's schema.
    #[prost(sint32, tag = "6")]
    pub scale: i32,
    #[prost(fixed64, tag = "7")]
    #[serde(deserialize_with = "json::u64_number")]
    pub zero_count: u64,
    #[prost(message, optional, tag = "8")]
    pub positive: Option<Buckets>,
    #[prost(message, optional, tag = "9")]
    pub negative: Option<Buckets>,
    #[prost(uint32, tag = "10")]
    pub flags: u32,
    #[prost(message, repeated, tag = "11")]
    pub exemplars: Vec<Exemplar>,
    /// Not read: Prometheus uses its default zero threshold whatever the
    /// point says.
    #[prost(double, tag = "14")]
    #[serde(deserialize_with = "json::f64_number")]
    pub zero_threshold: f64,
}

/// A sampled measurement with its trace context. OTLP/JSON writes the
/// trace and span ids in hex.
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Exemplar {
    #[prost(message, repeated, tag = "7")]
    pub filtered_attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    #[serde(deserialize_with = "json::u64_number")]
    pub time_unix_nano: u64,
    #[prost(oneof = "exemplar::Value", tags = "3, 6")]
    #[serde(flatten)]
    pub value: Option<exemplar::Value>,
    #[prost(bytes = "vec", tag = "4")]
    #[serde(deserialize_with = "json::hex_bytes")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "5")]
    #[serde(deserialize_with = "json::hex_bytes")]
    pub trace_id: Vec<u8>,
}

pub mod exemplar {
    use serde::Deserialize;

    use crate::json;

    #[derive(Clone, Copy, PartialEq, prost::Oneof, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Value {
        #[prost(double, tag = "3")]
        AsDouble(#[serde(deserialize_with = "json::f64_number")] f64),
        #[prost(sfixed64, tag = "6")]
        AsInt(#[serde(deserialize_with = "json::i64_number")] i64),
    }
}

/// `ExponentialHistogramDataPoint.Buckets`: dense counts from `offset`;
/// bucket `i` covers `(base^(offset+i), base^(offset+i+1)]`.
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Buckets {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint64, repeated, tag = "2")]
    #[serde(deserialize_with = "json::u64_numbers")]
    pub bucket_counts: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SummaryDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    #[serde(deserialize_with = "json::u64_number")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    #[serde(deserialize_with = "json::u64_number")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    #[serde(deserialize_with = "json::u64_number")]
    pub count: u64,
    #[prost(double, tag = "5")]
    #[serde(deserialize_with = "json::f64_number")]
    pub sum: f64,
    #[prost(message, repeated, tag = "6")]
    pub quantile_values: Vec<ValueAtQuantile>,
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ValueAtQuantile {
    #[prost(double, tag = "1")]
    #[serde(deserialize_with = "json::f64_number")]
    pub quantile: f64,
    #[prost(double, tag = "2")]
    #[serde(deserialize_with = "json::f64_number")]
    pub value: f64,
}

/// An attribute.
#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AnyValue {
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5, 6, 7")]
    #[serde(flatten)]
    pub value: Option<any_value::Value>,
}

pub mod any_value {
    use serde::Deserialize;

    use crate::json;

    #[derive(Clone, PartialEq, prost::Oneof, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        #[prost(int64, tag = "3")]
        IntValue(#[serde(deserialize_with = "json::i64_number")] i64),
        #[prost(double, tag = "4")]
        DoubleValue(#[serde(deserialize_with = "json::f64_number")] f64),
        #[prost(message, tag = "5")]
        ArrayValue(super::ArrayValue),
        #[prost(message, tag = "6")]
        KvlistValue(super::KeyValueList),
        #[prost(bytes, tag = "7")]
        BytesValue(#[serde(deserialize_with = "json::base64_bytes")] Vec<u8>),
    }
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KeyValueList {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<KeyValue>,
}

/// `ExportMetricsServiceResponse`: the answer to a request that was taken,
/// whole or in part.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceResponse {
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportMetricsPartialSuccess>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsPartialSuccess {
    #[prost(int64, tag = "1")]
    pub rejected_data_points: i64,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status`: the body of an OTLP/HTTP error answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}
