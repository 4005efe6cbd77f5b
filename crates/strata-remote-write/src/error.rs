//! Why a remote-write request was refused as a whole.

/// A request refused as a whole, with the HTTP status it calls for
/// ([`WriteError::status`]). Series-level problems are not errors: they are
/// reported in [`strata_write::DecodedWrite::rejected`].
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The Content-Type is not `application/x-protobuf`, or is malformed.
    #[error("unsupported content type {content_type:?}: {reason}")]
    UnsupportedContentType {
        content_type: String,
        reason: &'static str,
    },
    /// The `proto` parameter names a message this server does not accept.
    #[error(
        "unsupported remote-write message {proto:?}; accepted: \
         prometheus.WriteRequest, io.prometheus.write.v2.Request"
    )]
    UnsupportedProto { proto: String },
    /// The Content-Encoding is neither snappy nor zstd.
    #[error("unsupported content encoding {encoding:?}; accepted: snappy, zstd")]
    UnsupportedEncoding { encoding: String },
    /// The compressed body is larger than `DecodeLimits::max_body_bytes`.
    #[error("request body of {size} bytes exceeds the limit of {limit} bytes")]
    BodyTooLarge { size: usize, limit: usize },
    /// The snappy header declares more than `DecodeLimits::max_decoded_bytes`.
    #[error("snappy body declares {declared} decoded bytes, over the limit of {limit} bytes")]
    DecodedTooLarge { declared: usize, limit: usize },
    /// A zstd body decodes to more than `DecodeLimits::max_decoded_bytes`
    /// (found from the frame header when it declares the size, otherwise
    /// while decoding, which stops there).
    #[error("zstd body decodes to more than the limit of {limit} bytes")]
    ZstdTooLarge { limit: usize },
    /// The body is not valid snappy block format.
    #[error("corrupt snappy body: {0}")]
    CorruptSnappy(#[source] snap::Error),
    /// The body is not valid zstd.
    #[error("corrupt zstd body: {0}")]
    CorruptZstd(#[source] std::io::Error),
    /// The decompressed body is not a valid protobuf message of the version.
    #[error("invalid protobuf {message}: {source}")]
    Protobuf {
        message: &'static str,
        #[source]
        source: prost::DecodeError,
    },
    /// A 2.0 request whose symbols table breaks the specification.
    #[error("invalid symbols table: {0}")]
    InvalidSymbols(String),
}

impl WriteError {
    /// The HTTP status code the request should be answered with: 415, 413 or
    /// 400. None of them is worth retrying unchanged.
    pub fn status(&self) -> u16 {
        match self {
            Self::UnsupportedContentType { .. }
            | Self::UnsupportedProto { .. }
            | Self::UnsupportedEncoding { .. } => 415,
            Self::BodyTooLarge { .. }
            | Self::DecodedTooLarge { .. }
            | Self::ZstdTooLarge { .. } => 413,
            Self::CorruptSnappy(_)
            | Self::CorruptZstd(_)
            | Self::Protobuf { .. }
            | Self::InvalidSymbols(_) => 400,
        }
    }
}
