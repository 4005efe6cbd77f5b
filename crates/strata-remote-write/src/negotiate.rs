//! Content negotiation: which protocol version a request speaks.

use crate::WriteError;

/// The media type of every remote-write request.
pub const MEDIA_TYPE: &str = "application/x-protobuf";
/// The `proto` parameter value of remote write 1.0.
pub const PROTO_V1: &str = "prometheus.WriteRequest";
/// The `proto` parameter value of remote write 2.0.
pub const PROTO_V2: &str = "io.prometheus.write.v2.Request";

/// A remote-write protocol version, chosen by the request's Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// Remote write 1.0, `prometheus.WriteRequest`.
    V1,
    /// Remote write 2.0, `io.prometheus.write.v2.Request`.
    V2,
}

impl Version {
    /// The protobuf message a request body of this version holds.
    pub const fn proto_message(self) -> &'static str {
        match self {
            Self::V1 => PROTO_V1,
            Self::V2 => PROTO_V2,
        }
    }

    /// The Content-Type a client sends for this version.
    pub const fn content_type(self) -> &'static str {
        match self {
            Self::V1 => "application/x-protobuf;proto=prometheus.WriteRequest",
            Self::V2 => "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        }
    }

    /// The `X-Prometheus-Remote-Write-Version` header a client sends.
    pub const fn version_header(self) -> &'static str {
        match self {
            Self::V1 => "0.1.0",
            Self::V2 => "2.0.0",
        }
    }
}

/// How a request body is compressed, from its Content-Encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Snappy block format: the remote-write specifications' encoding.
    Snappy,
    /// Zstandard frames: what vmagent sends first (VictoriaMetrics' "remote
    /// write protocol" is the 1.0 message compressed with zstd), and what
    /// VictoriaMetrics accepts.
    Zstd,
}

impl Encoding {
    /// The Content-Encoding value, lower case.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Snappy => "snappy",
            Self::Zstd => "zstd",
        }
    }
}

/// Picks the protocol version from the request's Content-Type and the body's
/// compression from its Content-Encoding, as Prometheus' own receiver does
/// except that zstd is accepted too:
///
/// - Content-Type absent (or blank): 1.0, so that pre-2.0 clients that send
///   no header keep working.
/// - `application/x-protobuf` (media type compared case-insensitively) with no
///   `proto` parameter: 1.0; `proto=prometheus.WriteRequest`: 1.0;
///   `proto=io.prometheus.write.v2.Request`: 2.0 (the value may be quoted;
///   it is compared exactly). Other parameters are ignored.
/// - Content-Encoding absent (or blank): snappy is assumed; `snappy` and
///   `zstd` in any case are accepted, for either version; anything else is
///   refused. (vmagent offers zstd first and falls back to snappy for good
///   on a 415 or 400, so accepting it keeps its smaller bodies.)
///
/// Every refusal is a 415 that names the offending value.
pub fn negotiate(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
) -> Result<(Version, Encoding), WriteError> {
    let version = match content_type.map(str::trim) {
        None | Some("") => Version::V1,
        Some(ct) => parse_content_type(ct)?,
    };
    let encoding = match content_encoding.map(str::trim) {
        None | Some("") => Encoding::Snappy,
        Some(enc) if enc.eq_ignore_ascii_case("snappy") => Encoding::Snappy,
        Some(enc) if enc.eq_ignore_ascii_case("zstd") => Encoding::Zstd,
        Some(enc) => {
            return Err(WriteError::UnsupportedEncoding {
                encoding: enc.to_owned(),
            })
        }
    };
    Ok((version, encoding))
}

fn parse_content_type(content_type: &str) -> Result<Version, WriteError> {
    let refuse = |reason| WriteError::UnsupportedContentType {
        content_type: content_type.to_owned(),
        reason,
    };
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim();
    if !media.eq_ignore_ascii_case(MEDIA_TYPE) {
        return Err(refuse("expected application/x-protobuf"));
    }
    for param in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = param
            .split_once('=')
            .ok_or_else(|| refuse("a parameter is not of the form name=value"))?;
        if !name.trim().eq_ignore_ascii_case("proto") {
            continue;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        return match value {
            PROTO_V1 => Ok(Version::V1),
            PROTO_V2 => Ok(Version::V2),
            other => Err(WriteError::UnsupportedProto {
                proto: other.to_owned(),
            }),
        };
    }
    Ok(Version::V1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parameters_and_case() {
        let v = negotiate(
            Some("Application/X-Protobuf; charset=utf-8; proto=\"io.prometheus.write.v2.Request\""),
            Some("SNAPPY"),
        )
        .unwrap();
        assert_eq!(v, (Version::V2, Encoding::Snappy));
        assert_eq!(
            negotiate(None, None).unwrap(),
            (Version::V1, Encoding::Snappy)
        );
        assert_eq!(
            negotiate(Some(Version::V2.content_type()), Some("snappy")).unwrap(),
            (Version::V2, Encoding::Snappy)
        );
        // What vmagent sends first.
        assert_eq!(
            negotiate(Some("application/x-protobuf"), Some(" Zstd ")).unwrap(),
            (Version::V1, Encoding::Zstd)
        );
        let err = negotiate(None, Some("gzip")).unwrap_err();
        assert_eq!(err.status(), 415);
        assert!(err.to_string().contains("snappy, zstd"), "{err}");
        let err = negotiate(Some("application/x-protobuf;proto"), None).unwrap_err();
        assert_eq!(err.status(), 415);
    }
}
