//! Calendar functions (`hour`, `day_of_week`, ...), in UTC.

use chrono::{DateTime, Datelike, Timelike, Utc};

pub(crate) fn minute(t: &DateTime<Utc>) -> f64 {
    f64::from(t.minute())
}

pub(crate) fn hour(t: &DateTime<Utc>) -> f64 {
    f64::from(t.hour())
}

/// 0 for Sunday to 6 for Saturday.
pub(crate) fn day_of_week(t: &DateTime<Utc>) -> f64 {
    f64::from(t.weekday().num_days_from_sunday())
}

pub(crate) fn day_of_month(t: &DateTime<Utc>) -> f64 {
    f64::from(t.day())
}

pub(crate) fn day_of_year(t: &DateTime<Utc>) -> f64 {
    f64::from(t.ordinal())
}

pub(crate) fn days_in_month(t: &DateTime<Utc>) -> f64 {
    f64::from(month_days(t.year(), t.month()))
}

pub(crate) fn month(t: &DateTime<Utc>) -> f64 {
    f64::from(t.month())
}

pub(crate) fn year(t: &DateTime<Utc>) -> f64 {
    f64::from(t.year())
}

fn month_days(year: i32, month: u32) -> u32 {
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
