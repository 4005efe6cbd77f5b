//! Remote write 2.0: `io.prometheus.write.v2.Request` and the types it
//! carries. Strings live once in the request's symbols table and are
//! referenced by index.
//!
//! The published 2.0 proto had a per-series `created_timestamp` (tag 6);
//! current Prometheus reserves tag 6 and carries a per-sample
//! `start_timestamp` instead (tag 3 of `Sample`, tag 17 of `Histogram`). Both
//! are declared here so that requests from either generation parse.

/// `io.prometheus.write.v2.Request`, the whole body of a 2.0 request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    // Tags 1 to 3 are reserved so that a 1.0 message parsed as 2.0 is empty.
    /// De-duplicated strings referenced by the series; `symbols[0]` must be
    /// the empty string.
    #[prost(string, repeated, tag = "4")]
    pub symbols: Vec<String>,
    #[prost(message, repeated, tag = "5")]
    pub timeseries: Vec<TimeSeries>,
}

/// `io.prometheus.write.v2.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Name/value pairs of indices into `Request::symbols`, sorted by name.
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub histograms: Vec<Histogram>,
    #[prost(message, repeated, tag = "4")]
    pub exemplars: Vec<Exemplar>,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Metadata>,
    /// Deprecated by the per-sample `start_timestamp`; 0 means unset.
    #[prost(int64, tag = "6")]
    pub created_timestamp: i64,
}

/// `io.prometheus.write.v2.Sample`.
/// Encoded by hand so that -0.0 survives (see `sample.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    pub value: f64,
    pub timestamp: i64,
    /// When the counter started counting, in ms; 0 means unset.
    pub start_timestamp: i64,
}

/// `io.prometheus.write.v2.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `io.prometheus.write.v2.Metadata`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Metadata {
    #[prost(enumeration = "metadata::MetricType", tag = "1")]
    pub r#type: i32,
    /// Index into `Request::symbols`; 0 (the empty string) when absent.
    #[prost(uint32, tag = "3")]
    pub help_ref: u32,
    /// Index into `Request::symbols`; 0 (the empty string) when absent.
    #[prost(uint32, tag = "4")]
    pub unit_ref: u32,
}

/// The enum of [`Metadata`].
pub mod metadata {
    /// `io.prometheus.write.v2.Metadata.MetricType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        Unspecified = 0,
        Counter = 1,
        Gauge = 2,
        Histogram = 3,
        GaugeHistogram = 4,
        Summary = 5,
        Info = 6,
        StateSet = 7,
    }
}

/// `io.prometheus.write.v2.Histogram`, a native histogram sample: see
/// [`Histogram::to_sample`] and [`Histogram::from_sample`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(oneof = "histogram::Count", tags = "1, 2")]
    pub count: Option<histogram::Count>,
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(oneof = "histogram::ZeroCount", tags = "6, 7")]
    pub zero_count: Option<histogram::ZeroCount>,
    #[prost(message, repeated, tag = "8")]
    pub negative_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "9")]
    pub negative_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "10")]
    pub negative_counts: Vec<f64>,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "13")]
    pub positive_counts: Vec<f64>,
    #[prost(enumeration = "histogram::ResetHint", tag = "14")]
    pub reset_hint: i32,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
    #[prost(double, repeated, tag = "16")]
    pub custom_values: Vec<f64>,
    #[prost(int64, tag = "17")]
    pub start_timestamp: i64,
}

/// The oneofs and enum of [`Histogram`].
pub mod histogram {
    /// Count of observations, integer or float.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// Count in the zero bucket, integer or float.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }

    /// `io.prometheus.write.v2.Histogram.ResetHint`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResetHint {
        Unspecified = 0,
        Yes = 1,
        No = 2,
        Gauge = 3,
    }
}

/// `io.prometheus.write.v2.BucketSpan`: a run of consecutive buckets.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}
