//! OpenTelemetry metrics over OTLP/HTTP, with no HTTP framework and no
//! storage.
//!
//! [`Format::negotiate`] reads the Content-Type and Content-Encoding;
//! [`decode`] bounds, inflates and parses the body (protobuf or OTLP/JSON);
//! [`translate()`] turns the metrics into Prometheus series as Prometheus 3
//! does, into the same [`strata_write::DecodedWrite`] a remote-write
//! request decodes to, so both take one write path. [`success_body`] and
//! [`error_body`] encode the answers the OTLP/HTTP specification asks for,
//! in the request's format.

mod attributes;
pub mod exponential;
mod json;
pub mod names;
pub mod proto;
pub mod translate;

use std::io::Read as _;

pub use names::TranslationStrategy;
use prost::Message as _;
pub use translate::{translate, Settings, Translated};

/// The request's body format; the answer is written in it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    Json,
}

/// A request refused as a whole.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("unsupported content type {0:?}; accepted: application/x-protobuf, application/json")]
    UnsupportedContentType(String),
    #[error("unsupported content encoding {0:?}; accepted: gzip, or none")]
    UnsupportedEncoding(String),
    #[error("request body of {size} bytes exceeds the limit of {limit} bytes")]
    BodyTooLarge { size: usize, limit: usize },
    #[error("gzip body decodes to more than the limit of {limit} bytes")]
    DecodedTooLarge { limit: usize },
    #[error("corrupt gzip body: {0}")]
    CorruptGzip(#[source] std::io::Error),
    #[error("invalid protobuf ExportMetricsServiceRequest: {0}")]
    Protobuf(#[source] prost::DecodeError),
    #[error("invalid OTLP/JSON ExportMetricsServiceRequest: {0}")]
    Json(#[source] serde_json::Error),
}

impl OtlpError {
    /// The HTTP status: 415 for a format this server does not read, 413 for
    /// a body over the limits, 400 for a body that cannot be read. None is
    /// worth retrying unchanged.
    pub fn status(&self) -> u16 {
        match self {
            Self::UnsupportedContentType(_) | Self::UnsupportedEncoding(_) => 415,
            Self::BodyTooLarge { .. } | Self::DecodedTooLarge { .. } => 413,
            Self::CorruptGzip(_) | Self::Protobuf(_) | Self::Json(_) => 400,
        }
    }
}

impl Format {
    /// The format a Content-Type names (parameters ignored), and whether
    /// the body is gzipped.
    pub fn negotiate(
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> Result<(Self, bool), OtlpError> {
        let ct = content_type.unwrap_or("");
        let media = ct.split(';').next().unwrap_or("").trim();
        let format = if media.eq_ignore_ascii_case("application/x-protobuf")
            || media.eq_ignore_ascii_case("application/protobuf")
        {
            Self::Protobuf
        } else if media.eq_ignore_ascii_case("application/json") {
            Self::Json
        } else {
            return Err(OtlpError::UnsupportedContentType(ct.to_owned()));
        };
        let gzip = match content_encoding.map(str::trim) {
            None | Some("") | Some("identity") => false,
            Some(e) if e.eq_ignore_ascii_case("gzip") => true,
            Some(e) => return Err(OtlpError::UnsupportedEncoding(e.to_owned())),
        };
        Ok((format, gzip))
    }

    /// The Content-Type of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }
}

/// Size limits on a body: compressed as received, and inflated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_decoded_bytes: usize,
}

/// Parses a body in `format`, gunzipping it first if `gzip`.
pub fn decode(
    body: &[u8],
    format: Format,
    gzip: bool,
    limits: &Limits,
) -> Result<proto::ExportMetricsServiceRequest, OtlpError> {
    if body.len() > limits.max_body_bytes {
        return Err(OtlpError::BodyTooLarge {
            size: body.len(),
            limit: limits.max_body_bytes,
        });
    }
    let inflated;
    let bytes = if gzip {
        let mut out = Vec::new();
        let cap = u64::try_from(limits.max_decoded_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        flate2::read::GzDecoder::new(body)
            .take(cap)
            .read_to_end(&mut out)
            .map_err(OtlpError::CorruptGzip)?;
        if out.len() > limits.max_decoded_bytes {
            return Err(OtlpError::DecodedTooLarge {
                limit: limits.max_decoded_bytes,
            });
        }
        inflated = out;
        &inflated[..]
    } else {
        body
    };
    match format {
        Format::Protobuf => {
            proto::ExportMetricsServiceRequest::decode(bytes).map_err(OtlpError::Protobuf)
        }
        Format::Json => serde_json::from_slice(bytes).map_err(OtlpError::Json),
    }
}

/// The body of a 200: `ExportMetricsServiceResponse`, with a partial
/// success when `rejected` points were not taken.
pub fn success_body(format: Format, rejected: usize, message: &str) -> Vec<u8> {
    let rejected = i64::try_from(rejected).unwrap_or(i64::MAX);
    match format {
        Format::Protobuf => proto::ExportMetricsServiceResponse {
            partial_success: (rejected > 0 || !message.is_empty()).then(|| {
                proto::ExportMetricsPartialSuccess {
                    rejected_data_points: rejected,
                    error_message: message.to_owned(),
                }
            }),
        }
        .encode_to_vec(),
        Format::Json if rejected == 0 && message.is_empty() => b"{}".to_vec(),
        Format::Json => serde_json::json!({
            "partialSuccess": {
                "rejectedDataPoints": rejected.to_string(),
                "errorMessage": message,
            }
        })
        .to_string()
        .into_bytes(),
    }
}

/// The body of a 4xx or 5xx: `google.rpc.Status` with the message.
pub fn error_body(format: Format, http_status: u16, message: &str) -> Vec<u8> {
    let code = grpc_code(http_status);
    match format {
        Format::Protobuf => proto::Status {
            code,
            message: message.to_owned(),
        }
        .encode_to_vec(),
        Format::Json => serde_json::json!({ "code": code, "message": message })
            .to_string()
            .into_bytes(),
    }
}

/// The gRPC code OTLP pairs with an HTTP status.
fn grpc_code(http_status: u16) -> i32 {
    match http_status {
        400 | 413 | 415 => 3, // INVALID_ARGUMENT
        401 => 16,            // UNAUTHENTICATED
        403 => 7,             // PERMISSION_DENIED
        404 => 5,             // NOT_FOUND
        429 => 8,             // RESOURCE_EXHAUSTED
        503 => 14,            // UNAVAILABLE
        _ => 13,              // INTERNAL
    }
}
