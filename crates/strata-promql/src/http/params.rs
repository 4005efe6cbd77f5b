//! Request parameters: the URL query and a form body, read as Go's
//! `Request.FormValue` reads them, and Prometheus' time and duration
//! formats.

use std::time::Duration;

use crate::error::QueryError;

/// The URL query of a request whose target was too long for the URI type
/// (64 KiB): the server moves it into this request extension, and the API
/// reads it as it reads a URL query.
#[derive(Clone, Debug)]
pub struct LongUrlQuery(pub String);

/// The parameters of one request.
#[derive(Debug, Default)]
pub struct Params {
    /// Body parameters first, then URL parameters, as Go's `Request.Form`.
    pairs: Vec<(String, String)>,
}

impl Params {
    /// The values of a form body (already decoded), then those of the URL
    /// query.
    pub fn parse(query: Option<&str>, body_values: Vec<(String, String)>) -> Self {
        let mut pairs = body_values;
        if let Some(q) = query {
            pairs.extend(url::form_urlencoded::parse(q.as_bytes()).into_owned());
        }
        Self { pairs }
    }

    /// The first value of `name`, "" when absent.
    pub fn get(&self, name: &str) -> &str {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Prometheus' `MinTime` (ms), the default start of label and series calls.
pub const MIN_TIME_MS: i64 = (i64::MIN / 1000 + 62_135_596_801) * 1000;
/// Prometheus' `MaxTime` (ms).
pub const MAX_TIME_MS: i64 = (i64::MAX / 1000 - 62_135_596_801) * 1000 + 999;

/// A timestamp: unix seconds (float, rounded to ms) or RFC 3339.
pub fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(f) = parse_go_float(s) {
        let secs = f.trunc();
        let ms = ((f - secs) * 1000.0).round();
        let t = secs * 1000.0 + ms;
        if t.is_finite() && t.abs() < 9.2e18 {
            return Ok(t as i64);
        }
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    Err(format!("cannot parse {s:?} to a valid timestamp"))
}

/// A time parameter that defaults when absent.
pub fn parse_time_param(p: &Params, name: &str, default: i64) -> Result<i64, QueryError> {
    let v = p.get(name);
    if v.is_empty() {
        return Ok(default);
    }
    parse_time(v).map_err(|e| {
        QueryError::BadData(format!(
            "invalid parameter {name:?}: invalid time value for '{name}': {e}"
        ))
    })
}

/// A duration: float seconds, or Prometheus' `1h30m` notation.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(f) = parse_go_float(s) {
        let ns = f * 1e9;
        if !ns.is_finite() || ns.abs() > 9.2e18 {
            return Err(format!(
                "cannot parse {s:?} to a valid duration. It overflows int64"
            ));
        }
        if ns < 0.0 {
            return Ok(Duration::ZERO);
        }
        return Ok(Duration::from_nanos(ns as u64));
    }
    parse_prometheus_duration(s).ok_or_else(|| format!("cannot parse {s:?} to a valid duration"))
}

/// Go's ParseFloat accepts what Rust's does, plus `0x` hex and `_`; the
/// API's callers send plain decimals.
fn parse_go_float(s: &str) -> Result<f64, ()> {
    let lower = s.to_ascii_lowercase();
    match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Ok(f64::INFINITY),
        "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
        "nan" => Ok(f64::NAN),
        _ if s.is_empty() => Err(()),
        _ => s.parse::<f64>().map_err(|_| ()),
    }
}

/// `model.ParseDuration`: units y, w, d, h, m, s, ms in decreasing order,
/// each at most once.
fn parse_prometheus_duration(s: &str) -> Option<Duration> {
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(Duration::ZERO);
    }
    const UNITS: [(&str, u64); 7] = [
        ("y", 365 * 24 * 3_600_000),
        ("w", 7 * 24 * 3_600_000),
        ("d", 24 * 3_600_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let mut rest = s;
    let mut total: u64 = 0;
    let mut last_unit = 0usize;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: u64 = rest.get(..digits)?.parse().ok()?;
        rest = rest.get(digits..)?;
        let unit_len = rest.chars().take_while(char::is_ascii_alphabetic).count();
        let unit = rest.get(..unit_len)?;
        rest = rest.get(unit_len..)?;
        let (idx, &(_, unit_ms)) = UNITS.iter().enumerate().find(|(_, (u, _))| *u == unit)?;
        if idx < last_unit || (total > 0 && idx == last_unit) {
            return None;
        }
        last_unit = idx;
        total = total.checked_add(n.checked_mul(unit_ms)?)?;
    }
    Some(Duration::from_millis(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("1700000000.123"), Ok(1_700_000_000_123));
        assert_eq!(parse_time("1700000000"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T22:13:20.5Z"), Ok(1_700_000_000_500));
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("30s1m").is_err());
        assert!(parse_duration("abc").is_err());
    }
}
