//! The `limit` parameter of `query`, `query_range`, `series`, `labels` and
//! `label/{name}/values`, read and applied as Prometheus 3.16 does: at most
//! `limit` results, and a warning when more existed.

use crate::error::QueryError;
use crate::go_string::go_quote;
use crate::value::QueryValue;

/// Prometheus' warning when a result was cut to `limit`.
pub(super) const TRUNCATED: &str = "results truncated due to limit";

/// Prometheus' `parseLimitParam`: absent or `0` is no limit (0 here); a
/// negative number or one that is no integer is a `bad_data` error naming
/// the parameter.
pub(super) fn parse_limit(v: &str) -> Result<usize, QueryError> {
    if v.is_empty() {
        return Ok(0);
    }
    let n = go_atoi(v).map_err(|e| super::invalid_param("limit", e))?;
    usize::try_from(n).map_err(|_| super::invalid_param("limit", "limit must be non-negative"))
}

/// Cuts `items` to `limit` (0: no limit); whether any were cut.
pub(super) fn truncate<T>(items: &mut Vec<T>, limit: usize) -> bool {
    if limit == 0 || items.len() <= limit {
        return false;
    }
    items.truncate(limit);
    true
}

/// Prometheus' `truncateResults`: a vector or matrix cut to `limit` series
/// (a scalar or string is left as it is); whether any were cut.
pub(super) fn truncate_value(v: &mut QueryValue, limit: usize) -> bool {
    match v {
        QueryValue::Vector(samples) => truncate(samples, limit),
        QueryValue::Matrix(series) => truncate(series, limit),
        QueryValue::Scalar { .. } | QueryValue::String { .. } => false,
    }
}

/// `status/tsdb`'s `limit`: the length of each top list, 10 when absent,
/// between 1 and 10,000, with Prometheus' messages (which, unlike the other
/// endpoints', do not name the parameter).
pub(super) fn parse_tsdb_limit(v: &str) -> Result<usize, QueryError> {
    const MAX_TSDB_LIMIT: usize = 10_000;
    if v.is_empty() {
        return Ok(10);
    }
    let limit = go_atoi(v)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| QueryError::BadData("limit must be a positive number".into()))?;
    if limit > MAX_TSDB_LIMIT {
        return Err(QueryError::BadData(format!(
            "limit must not exceed {MAX_TSDB_LIMIT}"
        )));
    }
    Ok(limit)
}

/// Go's `strconv.Atoi` on a 64-bit platform, with its error text: an
/// optional sign and decimal digits, the first fault found (a character
/// that is no digit, or overflow) reported.
fn go_atoi(s: &str) -> Result<i64, String> {
    let error = |what: &str| format!("strconv.Atoi: parsing {}: {what}", go_quote(s.as_bytes()));
    let (negative, digits) = match (s.strip_prefix('-'), s.strip_prefix('+')) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        (None, None) => (false, s),
    };
    if digits.is_empty() {
        return Err(error("invalid syntax"));
    }
    let mut n: u64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return Err(error("invalid syntax"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| error("value out of range"))?;
    }
    if negative {
        0i64.checked_sub_unsigned(n)
            .ok_or_else(|| error("value out of range"))
    } else {
        i64::try_from(n).map_err(|_| error("value out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_as_go() {
        assert_eq!(go_atoi("42"), Ok(42));
        assert_eq!(go_atoi("+7"), Ok(7));
        assert_eq!(go_atoi("-0"), Ok(0));
        assert_eq!(go_atoi("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(go_atoi("9223372036854775807"), Ok(i64::MAX));
        for (s, what) in [
            ("", "invalid syntax"),
            ("+", "invalid syntax"),
            ("1.5", "invalid syntax"),
            (" 1", "invalid syntax"),
            ("1e3", "invalid syntax"),
            ("9223372036854775808", "value out of range"),
            ("-9223372036854775809", "value out of range"),
            // Go stops at the first fault: overflow before the letter.
            ("99999999999999999999x", "value out of range"),
            ("x99999999999999999999", "invalid syntax"),
        ] {
            assert_eq!(
                go_atoi(s),
                Err(format!("strconv.Atoi: parsing {s:?}: {what}")),
                "{s:?}"
            );
        }
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit("").ok(), Some(0));
        assert_eq!(parse_limit("0").ok(), Some(0));
        assert_eq!(parse_limit("3").ok(), Some(3));
        let err = |v: &str| parse_limit(v).err().map(|e| e.to_string());
        assert_eq!(
            err("-1").as_deref(),
            Some("invalid parameter \"limit\": limit must be non-negative")
        );
        assert_eq!(
            err("ten").as_deref(),
            Some("invalid parameter \"limit\": strconv.Atoi: parsing \"ten\": invalid syntax")
        );
        assert_eq!(parse_tsdb_limit("").ok(), Some(10));
        assert_eq!(parse_tsdb_limit("10000").ok(), Some(10_000));
        let tsdb_err = |v: &str| parse_tsdb_limit(v).err().map(|e| e.to_string());
        for v in ["0", "-1", "x"] {
            assert_eq!(
                tsdb_err(v).as_deref(),
                Some("limit must be a positive number")
            );
        }
        assert_eq!(
            tsdb_err("10001").as_deref(),
            Some("limit must not exceed 10000")
        );
    }
}
