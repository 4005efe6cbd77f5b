//! Durations as Prometheus writes them in rule files: `30s`, `1h30m`, `1d`,
//! `2w`, `1y`, `500ms`, or a bare `0`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Units from the largest to the smallest, with their length in
/// nanoseconds. A duration names each unit at most once, largest first.
const UNITS: [(&str, u64); 7] = [
    ("y", 365 * 24 * 3600 * 1_000_000_000),
    ("w", 7 * 24 * 3600 * 1_000_000_000),
    ("d", 24 * 3600 * 1_000_000_000),
    ("h", 3600 * 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
];

/// Parses a duration as Prometheus' `model.ParseDuration` does, with its
/// messages: units in order from `y` down to `ms`, each once, whole
/// numbers only, nothing negative, at most `i64::MAX` nanoseconds (about
/// 292 years).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match text {
        "0" => return Ok(Duration::ZERO),
        "" => return Err("empty duration string".into()),
        _ => {}
    }
    let invalid = || format!("not a valid duration string: {text:?}");
    let mut rest = text;
    let mut total: u64 = 0;
    // Index into UNITS of the last unit seen; the next must come later.
    let mut last_unit: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(invalid());
        }
        let (number, after) = rest.split_at(digits);
        let value: u64 = number.parse().map_err(|_| invalid())?;
        let unit_len = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .len();
        if unit_len == 0 {
            return Err(invalid());
        }
        let (unit, after) = after.split_at(unit_len);
        let Some(index) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err(format!("unknown unit {unit:?} in duration {text:?}"));
        };
        if last_unit.is_some_and(|last| index <= last) {
            return Err(invalid());
        }
        last_unit = Some(index);
        let nanos_per_unit = UNITS.get(index).map_or(1, |(_, n)| *n);
        let nanos = value
            .checked_mul(nanos_per_unit)
            .filter(|n| *n <= i64::MAX as u64)
            .ok_or("duration out of range")?;
        total = total
            .checked_add(nanos)
            .filter(|n| *n <= i64::MAX as u64)
            .ok_or("duration out of range")?;
        rest = after;
    }
    Ok(Duration::from_nanos(total))
}

/// Writes a duration the way Prometheus prints one: `1h30m`, `90d`, `0s`.
pub fn format_duration(duration: Duration) -> String {
    let mut ms = duration.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (i, (unit, nanos)) in UNITS.iter().enumerate() {
        let per = u128::from(*nanos / 1_000_000);
        // Years and weeks only when they divide exactly: `90d` reads
        // better than `12w6d`.
        if i < 2 && ms % per != 0 {
            continue;
        }
        let count = ms / per;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(unit);
            ms -= count * per;
        }
    }
    out
}

/// Serde: an optional duration; `null` or a missing key is `None`. Any
/// scalar is read as text (`for: 0` is `"0"`), as Go's YAML decoder does.
pub(crate) fn optional<'de, D>(deserializer: D) -> Result<Option<Duration>, D::Error>
where
    D: Deserializer<'de>,
{
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(text) => parse_duration(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// Serde: like [`optional`], with zero as `None`, for settings where
/// Prometheus takes zero as not set.
pub(crate) fn nonzero<'de, D>(deserializer: D) -> Result<Option<Duration>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(optional(deserializer)?.filter(|d| !d.is_zero()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prometheus_durations() {
        let cases = [
            ("0", 0),
            ("0s", 0),
            ("30s", 30_000),
            ("1m", 60_000),
            ("1h30m", 5_400_000),
            ("1d", 86_400_000),
            ("1w", 604_800_000),
            ("1y", 31_536_000_000),
            (
                "1y2w3d4h5m6s7ms",
                31_536_000_000 + 1_209_600_000 + 259_200_000 + 14_706_007,
            ),
            ("500ms", 500),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_what_prometheus_refuses() {
        assert_eq!(parse_duration(""), Err("empty duration string".into()));
        for bad in ["5", "-1m", "m", "1m1h", "1m1m", " 1m"] {
            assert_eq!(
                parse_duration(bad),
                Err(format!("not a valid duration string: {bad:?}")),
                "{bad}"
            );
        }
        assert_eq!(
            parse_duration("5x"),
            Err("unknown unit \"x\" in duration \"5x\"".into())
        );
        assert_eq!(
            parse_duration("1.5h"),
            Err("unknown unit \".\" in duration \"1.5h\"".into())
        );
        assert_eq!(
            parse_duration("1m "),
            Err("unknown unit \"m \" in duration \"1m \"".into())
        );
        assert_eq!(parse_duration("300y"), Err("duration out of range".into()));
        assert_eq!(
            parse_duration("99999999999999999999s"),
            Err("not a valid duration string: \"99999999999999999999s\"".into())
        );
    }

    #[test]
    fn formats_as_prometheus_prints() {
        for (ms, text) in [
            (0, "0s"),
            (5_400_000, "1h30m"),
            (90 * 86_400_000, "90d"),
            (14 * 86_400_000, "2w"),
            (1_500, "1s500ms"),
        ] {
            assert_eq!(format_duration(Duration::from_millis(ms)), text);
        }
    }
}
