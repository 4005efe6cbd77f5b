//! JSON written byte for byte as Prometheus writes it (jsoniter with Go's
//! escaping, timestamps as seconds with millisecond precision, values as
//! strings).

use std::fmt::Write as _;

use strata_codec::Label;

use crate::value::{Matrix, MatrixSeries, QueryValue};

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
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
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
    // Written in place: a result of a million points must not allocate a
    // string per point.
    let _ = write!(out, "{secs}");
    if frac != 0 {
        let _ = write!(out, ".{frac:03}");
    }
}

/// A sample value as a JSON string, formatted as Prometheus'
/// `jsonutil.MarshalFloat` (Go's shortest repr, exponent form outside
/// [1e-6, 1e21)).
pub fn write_value(out: &mut String, f: f64) {
    out.push('"');
    push_value(out, f);
    out.push('"');
}

/// The text of a sample value as Prometheus' API prints it.
pub fn format_value(f: f64) -> String {
    let mut out = String::new();
    push_value(&mut out, f);
    out
}

/// Appends [`format_value`]'s text, in place for the common case.
fn push_value(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        let _ = write!(out, "{f}");
        return;
    }
    // Go's 'e' format: shortest mantissa, exponent with a sign and at
    // least two digits.
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let pad = if digits.len() < 2 { "0" } else { "" };
            let _ = write!(out, "{mantissa}e{sign}{pad}{digits}");
        }
        None => out.push_str(&s),
    }
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
        write_matrix_series(out, s);
    }
    out.push(']');
}

/// One series of a matrix result: `{"metric":{…},"values":[[t,"v"],…]}`.
fn write_matrix_series(out: &mut String, s: &MatrixSeries) {
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

/// Bytes a streamed answer gathers before handing a chunk on.
const CHUNK_BYTES: usize = 64 << 10;

/// A whole successful answer with a matrix result, `{"status":"success",
/// "data":{"resultType":"matrix","result":[…]}}`, written in chunks of
/// about [`CHUNK_BYTES`] as they are read: a result of a million points is
/// never held a second time as one string.
pub struct MatrixChunks {
    matrix: std::vec::IntoIter<MatrixSeries>,
    started: bool,
    done: bool,
}

impl MatrixChunks {
    pub fn new(m: Matrix) -> Self {
        Self {
            matrix: m.into_iter(),
            started: false,
            done: false,
        }
    }
}

impl Iterator for MatrixChunks {
    type Item = bytes::Bytes;

    fn next(&mut self) -> Option<bytes::Bytes> {
        if self.done {
            return None;
        }
        let mut out = String::with_capacity(CHUNK_BYTES + (CHUNK_BYTES >> 2));
        if !self.started {
            out.push_str(
                "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[",
            );
        }
        while out.len() < CHUNK_BYTES {
            let Some(s) = self.matrix.next() else {
                out.push_str("]}}");
                self.done = true;
                break;
            };
            if self.started {
                out.push(',');
            }
            self.started = true;
            write_matrix_series(&mut out, &s);
        }
        self.started = true;
        Some(bytes::Bytes::from(out))
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::value::Point;

    fn whole(m: &Matrix) -> String {
        let mut data = String::new();
        write_query_data(&mut data, &QueryValue::Matrix(m.clone()));
        format!("{{\"status\":\"success\",\"data\":{data}}}")
    }

    fn streamed(m: &Matrix) -> (String, usize) {
        let chunks: Vec<bytes::Bytes> = MatrixChunks::new(m.clone()).collect();
        let n = chunks.len();
        let all: Vec<u8> = chunks.into_iter().flat_map(|c| c.to_vec()).collect();
        (String::from_utf8(all).unwrap(), n)
    }

    #[test]
    fn streamed_matrix_equals_the_whole_answer() {
        let series = |i: usize, points: usize| MatrixSeries {
            labels: Arc::from(vec![Label::new("i", i.to_string())]),
            points: (0..points)
                .map(|j| Point {
                    t: j as i64 * 1500,
                    v: j as f64 / 3.0,
                })
                .collect(),
        };
        let empty: Matrix = Vec::new();
        assert_eq!(streamed(&empty), (whole(&empty), 1));
        let one = vec![series(0, 0)];
        assert_eq!(streamed(&one).0, whole(&one));
        // Many chunks: each series is about 20 KB.
        let many: Matrix = (0..50).map(|i| series(i, 800)).collect();
        let (text, chunks) = streamed(&many);
        assert_eq!(text, whole(&many));
        assert!(chunks > 10, "{chunks} chunks");
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
    }
}
