//! Go's `time.Time` and `time.Duration` as templates meet them: printed,
//! formatted with a Go layout, and the methods `toTime` and `toDuration`
//! results are called with; plus Prometheus' duration strings.

use chrono::{DateTime, Datelike, Timelike, Utc};

use super::gofmt;

/// A point in time, in UTC, as `toTime` makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Instant {
    /// Seconds since the Unix epoch.
    pub secs: i64,
    /// Nanoseconds within the second, below 1e9.
    pub nanos: u32,
}

impl Instant {
    pub(super) fn from_nanos(ns: i128) -> Instant {
        Instant {
            secs: ns.div_euclid(1_000_000_000) as i64,
            nanos: ns.rem_euclid(1_000_000_000) as u32,
        }
    }

    pub(super) fn nanos(self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }

    fn date(self) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(self.secs, self.nanos)
    }
}

/// Go's `int64(f)` as amd64 computes it: out of range (or NaN) is the
/// "integer indefinite" value, MinInt64, where Rust would saturate.
pub(super) fn go_int64(f: f64) -> i64 {
    // 2^63: i64::MAX rounds up to it as a float.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if (-LIMIT..LIMIT).contains(&f) {
        f as i64
    } else {
        i64::MIN
    }
}

/// Prometheus' `floatToTime`: seconds since the epoch to a time, cut to
/// milliseconds as `model.Time` keeps it.
pub(super) fn float_to_time(v: f64) -> Result<Instant, String> {
    if v.is_nan() || v.is_infinite() {
        return Err("value is NaN or Inf".into());
    }
    let ns = v * 1e9;
    if ns > i64::MAX as f64 || ns < i64::MIN as f64 {
        return Err(format!(
            "{} cannot be represented as a nanoseconds timestamp since it overflows int64",
            gofmt::format_float(v, 'g', None)
        ));
    }
    let ms = go_int64(ns) / 1_000_000;
    Ok(Instant::from_nanos(i128::from(ms) * 1_000_000))
}

/// Go's `Time.String()` of a UTC time.
pub(super) fn time_string(t: Instant) -> String {
    format_layout(t, "2006-01-02 15:04:05.999999999 -0700 MST")
}

/// Go's `Duration.String()`: "1h2m3.5s", "1.5ms", "0s".
pub(super) fn duration_string(d: i64) -> String {
    let neg = d < 0;
    let u = d.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        // Below a second: one unit, with a fraction.
        let (unit, scale) = match u {
            0 => return "0s".into(),
            1..=999 => ("ns", 1),
            1_000..=999_999 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        out.push_str(&frac(u, scale));
        out.push_str(unit);
    } else {
        let secs = u / 1_000_000_000;
        let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&frac(s * 1_000_000_000 + u % 1_000_000_000, 1_000_000_000));
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / scale` with the fraction's trailing zeros dropped.
fn frac(v: u64, scale: u64) -> String {
    let whole = v / scale;
    let rest = v % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Prometheus' `humanizeDuration` of seconds `v`.
pub(super) fn humanize_duration(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        return gofmt::format_float(v, 'g', Some(4));
    }
    if v == 0.0 {
        return format!("{}s", gofmt::format_float(v, 'g', Some(4)));
    }
    if v.abs() >= 1.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        let v = v.abs();
        let d = go_int64(v);
        let (days, hours, minutes, seconds) = (d / 86400, (d / 3600) % 24, (d / 60) % 60, d % 60);
        return if days != 0 {
            format!("{sign}{days}d {hours}h {minutes}m {seconds}s")
        } else if hours != 0 {
            format!("{sign}{hours}h {minutes}m {seconds}s")
        } else if minutes != 0 {
            format!("{sign}{minutes}m {seconds}s")
        } else {
            format!("{sign}{}s", gofmt::format_float(v, 'g', Some(4)))
        };
    }
    let mut v = v;
    let mut prefix = "";
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
        if v.abs() >= 1.0 {
            break;
        }
        prefix = p;
        v *= 1000.0;
    }
    format!("{}{prefix}s", gofmt::format_float(v, 'g', Some(4)))
}

/// Prometheus' `model.ParseDurationAllowNegative`, in nanoseconds.
pub(super) fn parse_duration(s: &str) -> Result<i64, String> {
    match s.strip_prefix('-') {
        Some(rest) => parse_positive_duration(rest).map(|d| -d),
        None => parse_positive_duration(s),
    }
}

fn parse_positive_duration(s: &str) -> Result<i64, String> {
    match s {
        "0" => return Ok(0),
        "" => return Err("empty duration string".into()),
        _ => {}
    }
    let invalid = || format!("not a valid duration string: {}", super::text::go_quote(s));
    let mut rest = s;
    let mut total: u64 = 0;
    let mut last_pos = 0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let v: u64 = rest
            .get(..n)
            .and_then(|d| d.parse().ok())
            .ok_or_else(invalid)?;
        rest = rest.get(n..).unwrap_or("");
        let u = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        if u == 0 {
            return Err(invalid());
        }
        let unit = rest.get(..u).unwrap_or("");
        rest = rest.get(u..).unwrap_or("");
        let (pos, mult): (u32, u64) = match unit {
            "y" => (1, 365 * 86_400_000_000_000),
            "w" => (2, 7 * 86_400_000_000_000),
            "d" => (3, 86_400_000_000_000),
            "h" => (4, 3_600_000_000_000),
            "m" => (5, 60_000_000_000),
            "s" => (6, 1_000_000_000),
            "ms" => (7, 1_000_000),
            _ => {
                return Err(format!(
                    "unknown unit {} in duration {}",
                    super::text::go_quote(unit),
                    super::text::go_quote(s)
                ))
            }
        };
        if pos <= last_pos {
            return Err(invalid());
        }
        last_pos = pos;
        if v > (1u64 << 63) / mult {
            return Err("duration out of range".into());
        }
        total += v * mult;
        if total > i64::MAX as u64 {
            return Err("duration out of range".into());
        }
    }
    Ok(total as i64)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The month's English name, as Go's `time.Month` prints.
pub(super) fn month_name(t: Instant) -> &'static str {
    t.date()
        .and_then(|d| MONTHS.get(d.month0() as usize).copied())
        .unwrap_or("%!Month(0)")
}

/// The weekday's English name, as Go's `time.Weekday` prints.
pub(super) fn weekday_name(t: Instant) -> &'static str {
    t.date()
        .and_then(|d| {
            DAYS.get(d.weekday().num_days_from_sunday() as usize)
                .copied()
        })
        .unwrap_or("%!Weekday(0)")
}

/// Calendar fields of `t`: year, month, day, hour, minute, second, day of year.
pub(super) fn fields(t: Instant) -> [i64; 7] {
    t.date().map_or([0; 7], |d| {
        [
            i64::from(d.year()),
            i64::from(d.month()),
            i64::from(d.day()),
            i64::from(d.hour()),
            i64::from(d.minute()),
            i64::from(d.second()),
            i64::from(d.ordinal()),
        ]
    })
}

/// The elements of a Go layout, each before any shorter one it starts
/// with, as `time.nextStdChunk` matches them.
const CHUNKS: [&str; 34] = [
    "January",
    "Jan",
    "Monday",
    "Mon",
    "MST",
    "01",
    "02",
    "03",
    "04",
    "05",
    "06",
    "002",
    "15",
    "1",
    "2006",
    "2",
    "_2006",
    "__2",
    "_2",
    "3",
    "4",
    "5",
    "PM",
    "pm",
    "-07:00:00",
    "-070000",
    "-07:00",
    "-0700",
    "-07",
    "Z07:00:00",
    "Z070000",
    "Z07:00",
    "Z0700",
    "Z07",
];

/// `t.Format(layout)` in UTC.
pub(super) fn format_layout(t: Instant, layout: &str) -> String {
    let [year, month, day, hour, minute, second, yday] = fields(t);
    let mut out = String::new();
    let mut rest = layout;
    while let Some(c) = rest.chars().next() {
        // Fractional seconds: ".000" (fixed) or ".999" (trailing zeros cut).
        if matches!(c, '.' | ',') {
            let tail = rest.get(1..).unwrap_or("");
            if let Some(d @ ('0' | '9')) = tail.chars().next() {
                let n = tail.find(|x| x != d).unwrap_or(tail.len());
                let after = tail.get(n..).unwrap_or("");
                if !after.starts_with(|x: char| x.is_ascii_digit()) {
                    let digits = format!("{:09}", t.nanos);
                    let mut f = digits.get(..n.min(9)).unwrap_or("").to_owned();
                    if d == '9' {
                        f = f.trim_end_matches('0').to_owned();
                    }
                    if !f.is_empty() || d == '0' {
                        out.push(c);
                        out.push_str(&f);
                    }
                    rest = after;
                    continue;
                }
            }
        }
        // "Jan" and "Mon" followed by a lower-case letter are words ("Month").
        let chunk = CHUNKS.iter().find(|ch| {
            rest.starts_with(**ch)
                && !(matches!(**ch, "Jan" | "Mon")
                    && rest
                        .get(3..)
                        .is_some_and(|r| r.starts_with(|x: char| x.is_lowercase())))
        });
        let Some(chunk) = chunk else {
            out.push(c);
            rest = rest.get(c.len_utf8()..).unwrap_or("");
            continue;
        };
        let h12 = if hour % 12 == 0 { 12 } else { hour % 12 };
        let s = match *chunk {
            "January" => month_name(t).to_owned(),
            "Jan" => month_name(t).chars().take(3).collect(),
            "Monday" => weekday_name(t).to_owned(),
            "Mon" => weekday_name(t).chars().take(3).collect(),
            "MST" => "UTC".into(),
            "01" => format!("{month:02}"),
            "02" => format!("{day:02}"),
            "03" => format!("{h12:02}"),
            "04" => format!("{minute:02}"),
            "05" => format!("{second:02}"),
            "06" => format!("{:02}", year.rem_euclid(100)),
            "002" => format!("{yday:03}"),
            "15" => format!("{hour:02}"),
            "1" => month.to_string(),
            "2006" => format!("{year:04}"),
            "2" => day.to_string(),
            "__2" => format!("{yday:>3}"),
            "_2" => format!("{day:>2}"),
            "_2006" => format!("_{year:04}"),
            "3" => h12.to_string(),
            "4" => minute.to_string(),
            "5" => second.to_string(),
            "PM" => if hour >= 12 { "PM" } else { "AM" }.into(),
            "pm" => if hour >= 12 { "pm" } else { "am" }.into(),
            "-07:00:00" => "+00:00:00".into(),
            "-070000" => "+000000".into(),
            "-07:00" => "+00:00".into(),
            "-0700" => "+0000".into(),
            "-07" => "+00".into(),
            _ => "Z".into(),
        };
        out.push_str(&s);
        rest = rest.get(chunk.len()..).unwrap_or("");
    }
    out
}
