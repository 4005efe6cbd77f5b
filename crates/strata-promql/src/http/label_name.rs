//! The label name of `/api/v1/label/{name}/values` as Prometheus 3 reads
//! it: percent-decoded from the path, then, when it starts with `U__`,
//! unescaped from the value-encoding escaping of Prometheus' `model`
//! package (`U__http_2e_status` is `http.status`, `U__a__b` is `a_b`), so
//! a client can name any UTF-8 label in a URL path. What is left must be a
//! non-empty UTF-8 string, Prometheus 3's whole rule for a label name.

use crate::error::QueryError;
use crate::go_string::go_quote;

/// The label name that `segment`, the path segment as sent, names; or
/// Prometheus' `invalid label name` error.
pub(crate) fn from_path_segment(segment: &str) -> Result<String, QueryError> {
    // Go's server refuses such a URL before routing it (400).
    let bytes = segment.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return Err(QueryError::BadData(format!(
            "invalid label name: a % in {segment:?} is not followed by two hex digits"
        )));
    }
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(segment).collect();
    let name = unescape(&decoded).unwrap_or(decoded);
    match String::from_utf8(name) {
        Ok(name) if !name.is_empty() => Ok(name),
        Ok(_) => Err(invalid(b"")),
        Err(e) => Err(invalid(e.as_bytes())),
    }
}

fn invalid(name: &[u8]) -> QueryError {
    QueryError::BadData(format!("invalid label name: {}", go_quote(name)))
}

/// `name` unescaped as `model.UnescapeName(name, ValueEncodingEscaping)`
/// does: after `U__`, `__` is `_` and `_<hex>_` is the code point
/// `<hex>`; other bytes stand for themselves. `None` when `name` does not
/// start with `U__` or is not a valid escape (an underscore unpaired, a
/// code not hex, not a Unicode scalar value or of six digits or more):
/// Prometheus then takes the name as it is.
pub(crate) fn unescape(name: &[u8]) -> Option<Vec<u8>> {
    let escaped = name.strip_prefix(b"U__")?;
    let mut out = Vec::with_capacity(escaped.len());
    let mut bytes = escaped.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'_' {
            out.push(b);
            continue;
        }
        let mut code = match bytes.next()? {
            b'_' => {
                out.push(b'_');
                continue;
            }
            first => hex(first)?,
        };
        // Prometheus checks the length before the closing underscore, so
        // a code has at most five digits.
        let mut digits = 1;
        loop {
            let b = bytes.next()?;
            if digits >= 6 {
                return None;
            }
            if b == b'_' {
                break;
            }
            code = code * 16 + hex(b)?;
            digits += 1;
        }
        let c = char::from_u32(code)?;
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
    Some(out)
}

fn hex(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn unescaped(name: &str) -> String {
        String::from_utf8(unescape(name.as_bytes()).unwrap_or_else(|| name.into())).unwrap()
    }

    /// The cases of Prometheus' `TestUnescapeName`
    /// (github.com/prometheus/common v0.72.1, `model/metric_test.go`).
    #[test]
    fn unescapes_as_prometheus_model_package() {
        for (input, want) in [
            ("", ""),
            ("U__no:unescapingrequired", "no:unescapingrequired"),
            ("U__capitals_2E_ok", "capitals.ok"),
            ("U__underscores__doubled__", "underscores_doubled_"),
            ("U__underscores_doubled_", "U__underscores_doubled_"),
            ("U__underscores__doubled_", "U__underscores__doubled_"),
            (
                "U__my__hack_2e_attempt_872348732fabdabbab_",
                "U__my__hack_2e_attempt_872348732fabdabbab_",
            ),
            ("U__my__hack_2e", "U__my__hack_2e"),
            ("U__bad__utf_2eg_", "U__bad__utf_2eg_"),
            ("U__bad__utf_D900_", "U__bad__utf_D900_"),
            ("U__label_20_with_20__1f631_", "label with 😱"),
            ("U___82b1__706b_", "花火"),
            ("http_2e_status", "http_2e_status"),
            ("U__", ""),
            ("U___", "U___"),
            ("U__x_10ffff_", "U__x_10ffff_"),
            ("U__x_0_", "x\0"),
        ] {
            assert_eq!(unescaped(input), want, "{input:?}");
        }
    }

    #[test]
    fn path_segments_decode_to_names() {
        let name = |s: &str| from_path_segment(s).map_err(|e| e.to_string());
        assert_eq!(name("U__http_2e_status").unwrap(), "http.status");
        assert_eq!(name("http.status").unwrap(), "http.status");
        assert_eq!(name("%E5%A0%B4%E6%89%80").unwrap(), "場所");
        assert_eq!(name("U__").unwrap_err(), r#"invalid label name: """#);
        assert_eq!(name("%FF").unwrap_err(), r#"invalid label name: "\xff""#);
        assert_eq!(
            name("U__%FFa").unwrap_err(),
            r#"invalid label name: "\xffa""#
        );
    }
}
