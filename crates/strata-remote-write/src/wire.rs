//! The server's decoding views of the remote-write messages.
//!
//! They read the same bytes as [`crate::proto`] but keep label strings and
//! symbols as raw bytes, so that invalid UTF-8 rejects the one series that
//! carries it rather than the whole request (prost refuses a whole message
//! whose `string` field is not UTF-8); an exemplar's label bytes likewise, so
//! that a bad one drops only that exemplar. Histograms decode into the
//! client's messages ([`crate::proto::v1::Histogram`] and
//! [`crate::proto::v2::Histogram`]), which hold no strings.
//!
//! Label bytes and symbols are `Bytes` slices of the decompressed body:
//! decoding allocates nothing per label.
//!
//! The types are named as in the `.proto` files because prost puts the Rust
//! names in its error messages, which reach clients.

/// A float sample of either version. The 2.0 `start_timestamp` (tag 3) is
/// skipped, which keeps this 16 bytes, the size of `(i64, f64)`, so that
/// collecting into `SeriesSamples::samples` reuses the allocation.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(crate) struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

pub(crate) mod v1 {
    use super::Sample;
    use crate::proto::v1::Histogram;

    /// `prometheus.WriteRequest` as the server reads it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
        #[prost(message, repeated, tag = "3")]
        pub metadata: Vec<MetricMetadata>,
    }

    /// `prometheus.MetricMetadata` with unchecked bytes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct MetricMetadata {
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        #[prost(bytes = "bytes", tag = "2")]
        pub metric_family_name: bytes::Bytes,
        #[prost(bytes = "bytes", tag = "4")]
        pub help: bytes::Bytes,
        #[prost(bytes = "bytes", tag = "5")]
        pub unit: bytes::Bytes,
    }

    /// `prometheus.TimeSeries` as the server reads it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub exemplars: Vec<Exemplar>,
        #[prost(message, repeated, tag = "4")]
        pub histograms: Vec<Histogram>,
    }

    /// `prometheus.Exemplar` with unchecked label bytes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Exemplar {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(double, tag = "2")]
        pub value: f64,
        #[prost(int64, tag = "3")]
        pub timestamp: i64,
    }

    /// `prometheus.Label` with unchecked bytes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Label {
        #[prost(bytes = "bytes", tag = "1")]
        pub name: bytes::Bytes,
        #[prost(bytes = "bytes", tag = "2")]
        pub value: bytes::Bytes,
    }
}

pub(crate) mod v2 {
    use super::Sample;
    use crate::proto::v2::Histogram;

    /// `io.prometheus.write.v2.Request` as the server reads it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Request {
        #[prost(bytes = "bytes", repeated, tag = "4")]
        pub symbols: Vec<bytes::Bytes>,
        #[prost(message, repeated, tag = "5")]
        pub timeseries: Vec<TimeSeries>,
    }

    /// `io.prometheus.write.v2.TimeSeries` as the server reads it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct TimeSeries {
        #[prost(uint32, repeated, tag = "1")]
        pub labels_refs: Vec<u32>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub histograms: Vec<Histogram>,
        #[prost(message, repeated, tag = "4")]
        pub exemplars: Vec<Exemplar>,
        #[prost(message, optional, tag = "5")]
        pub metadata: Option<crate::proto::v2::Metadata>,
    }

    /// `io.prometheus.write.v2.Exemplar`; its labels are references into
    /// the symbols table, resolved per exemplar.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Exemplar {
        #[prost(uint32, repeated, tag = "1")]
        pub labels_refs: Vec<u32>,
        #[prost(double, tag = "2")]
        pub value: f64,
        /// 0 means unset in the proto; kept as given, since Prometheus
        /// treats an exemplar's timestamp as required.
        #[prost(int64, tag = "3")]
        pub timestamp: i64,
    }
}
