//! Calendar functions (`hour`, `day_of_week`, ...), in UTC.

use chrono::{DateTime, Datelike, Timelike, Utc};

/// The calendar function called `name`, if it is one.
pub(crate) fn date_function(name: &str) -> Option<fn(&DateTime<Utc>) -> f64> {
    Some(match name {
        "minute" => |t| f64::from(t.minute()),
        "hour" => |t| f64::from(t.hour()),
        "day_of_week" => |t| f64::from(t.weekday().num_days_from_sunday()),
        "day_of_month" => |t| f64::from(t.day()),
        "day_of_year" => |t| f64::from(t.ordinal()),
        "days_in_month" => |t| f64::from(days_in_month(t.year(), t.month())),
        "month" => |t| f64::from(t.month()),
        "year" => |t| f64::from(t.year()),
        _ => return None,
    })
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Applies `f` to the instant `seconds` after the epoch (truncated to whole
/// seconds as Go's `time.Unix(int64(v), 0)`).
pub(crate) fn apply(f: fn(&DateTime<Utc>) -> f64, seconds: f64) -> f64 {
    if !seconds.is_finite() {
        return f64::NAN;
    }
    match DateTime::from_timestamp(seconds.trunc() as i64, 0) {
        Some(t) => f(&t),
        None => f64::NAN,
    }
}
