//! JSON written byte for byte as Prometheus writes it (jsoniter with Go's
//! escaping, timestamps as seconds with millisecond precision, values as
//! strings).

use strata_codec::Label;

use crate::value::{Matrix, QueryValue};

/// Appends `s` as a JSON string, escaped as Go's encoding/json does
/// (HTML-sensitive characters and U+2028/U+2029 as `\uXXXX`).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A millisecond timestamp as Prometheus' `jsonutil.MarshalTimestamp`
/// prints it: whole seconds, then `.` and exactly three digits unless the
/// milliseconds are zero (`1500` is `1.500`, `1000` is `1`).
pub fn write_timestamp(out: &mut String, t: i64) {
    let mut t = t;
    if t < 0 {
        out.push('-');
        t = t.wrapping_neg();
    }
    let (secs, frac) = ((t as u64) / 1000, (t as u64) % 1000);
    out.push_str(&secs.to_string());
    if frac != 0 {
        out.push('.');
        if frac < 100 {
            out.push('0');
        }
        if frac < 10 {
            out.push('0');
        }
        out.push_str(&frac.to_string());
    }
}

/// A sample value as a JSON string, formatted as Prometheus'
/// `jsonutil.MarshalFloat` (Go's shortest repr, exponent form outside
/// [1e-6, 1e21)).
pub fn write_value(out: &mut String, f: f64) {
    out.push('"');
    out.push_str(&format_value(f));
    out.push('"');
}

/// The text of a sample value as Prometheus' API prints it.
pub fn format_value(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Go's 'e' format: shortest mantissa, exponent with a sign and at
        // least two digits.
        let s = format!("{f:e}");
        if let Some((mantissa, exp)) = s.split_once('e') {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let digits = if digits.len() < 2 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            return format!("{mantissa}e{sign}{digits}");
        }
        return s;
    }
    format!("{f}")
}

/// A label set as a JSON object.
pub fn write_labels(out: &mut String, labels: &[Label]) {
    out.push('{');
    for (i, l) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, &l.name);
        out.push(':');
        write_str(out, &l.value);
    }
    out.push('}');
}

/// A list of strings as a JSON array.
pub fn write_str_list(out: &mut String, items: &[String]) {
    out.push('[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, s);
    }
    out.push(']');
}

fn write_matrix(out: &mut String, m: &Matrix) {
    out.push('[');
    for (i, s) in m.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"metric\":");
        write_labels(out, &s.labels);
        if !s.points.is_empty() {
            out.push_str(",\"values\":[");
            for (j, p) in s.points.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push('[');
                write_timestamp(out, p.t);
                out.push(',');
                write_value(out, p.v);
                out.push(']');
            }
            out.push(']');
        }
        out.push('}');
    }
    out.push(']');
}

/// The `data` object of a query response.
pub fn write_query_data(out: &mut String, v: &QueryValue) {
    out.push_str("{\"resultType\":\"");
    out.push_str(v.result_type());
    out.push_str("\",\"result\":");
    match v {
        QueryValue::Scalar { t, v } => {
            out.push('[');
            write_timestamp(out, *t);
            out.push(',');
            write_value(out, *v);
            out.push(']');
        }
        QueryValue::String { t, v } => {
            out.push('[');
            write_timestamp(out, *t);
            out.push(',');
            write_str(out, v);
            out.push(']');
        }
        QueryValue::Vector(samples) => {
            out.push('[');
            for (i, s) in samples.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                write_labels(out, &s.labels);
                out.push_str(",\"value\":[");
                write_timestamp(out, s.t);
                out.push(',');
                write_value(out, s.v);
                out.push_str("]}");
            }
            out.push(']');
        }
        QueryValue::Matrix(m) => write_matrix(out, m),
    }
    out.push('}');
}
