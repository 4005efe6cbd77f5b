//! JSON written byte for byte as Prometheus writes it (jsoniter with Go's
//! escaping, timestamps as seconds with millisecond precision, values as
//! strings).

use std::fmt::Write as _;

use strata_codec::histogram::FloatHistogram;
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
    out.push_str(itoa::Buffer::new().format(secs));
    if frac != 0 {
        let frac = frac as u16;
        out.push('.');
        for d in [frac / 100, frac / 10 % 10, frac % 10] {
            out.push(char::from(b'0' + d as u8));
        }
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

/// Appends [`format_value`]'s text: the shortest digits that read back as
/// `f` (from `ryu`), laid out as Go's `strconv.FormatFloat(f, 'f', -1,
/// 64)` inside [1e-6, 1e21) and as its `'e'` format outside.
fn push_value(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    if f < 0.0 || (f == 0.0 && f.is_sign_negative()) {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    let abs = f.abs();
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(abs);
    if (1e-5..1e16).contains(&abs) {
        // `ryu` lays these out as Go does, but for the `.0` it gives a whole
        // number.
        out.push_str(text.strip_suffix(".0").unwrap_or(text));
        return;
    }
    let (digits, k) = Digits::of(text);
    let digits = digits.as_str();
    let n = digits.len() as i32;
    if (1e-6..1e21).contains(&abs) {
        if k <= 0 {
            out.push_str("0.");
            push_zeros(out, -k);
            out.push_str(digits);
        } else if k >= n {
            out.push_str(digits);
            push_zeros(out, k - n);
        } else {
            let (int, frac) = digits.split_at(k as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
        return;
    }
    // Go's 'e' format: shortest mantissa, exponent with a sign and at
    // least two digits.
    let (lead, rest) = digits.split_at(1);
    out.push_str(lead);
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    let exp = k - 1;
    out.push_str(if exp < 0 { "e-" } else { "e+" });
    if exp.abs() < 10 {
        out.push('0');
    }
    out.push_str(itoa::Buffer::new().format(exp.unsigned_abs()));
}

fn push_zeros(out: &mut String, n: i32) {
    for _ in 0..n {
        out.push('0');
    }
}

/// The significant digits of a positive number's text, without leading or
/// trailing zeros, and `k` with the value `0.digits × 10^k`.
struct Digits {
    buf: [u8; 40],
    len: usize,
}

impl Digits {
    /// From `ryu`'s text of a positive finite number (`123.45`, `1e-7`,
    /// `1.5e300`).
    fn of(text: &str) -> (Self, i32) {
        let (mantissa, exp) = match text.split_once('e') {
            Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
            None => (text, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut d = Digits {
            buf: [0; 40],
            len: 0,
        };
        let mut k = int.len() as i32 + exp;
        for &c in int.as_bytes().iter().chain(frac.as_bytes()) {
            if d.len == 0 && c == b'0' {
                k -= 1;
                continue;
            }
            if let Some(slot) = d.buf.get_mut(d.len) {
                *slot = c;
                d.len += 1;
            }
        }
        while d.len > 0 && d.buf.get(d.len - 1) == Some(&b'0') {
            d.len -= 1;
        }
        (d, k)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(self.buf.get(..self.len).unwrap_or(&[])).unwrap_or("")
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
    if !s.histograms.is_empty() {
        out.push_str(",\"histograms\":[");
        for (j, (t, h)) in s.histograms.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push('[');
            write_timestamp(out, *t);
            out.push(',');
            write_histogram(out, h);
            out.push(']');
        }
        out.push(']');
    }
    out.push('}');
}

/// A native histogram as Prometheus' `jsonutil.MarshalHistogram` writes
/// it: `{"count":"c","sum":"s","buckets":[[rule,"lower","upper","count"],
/// …]}`, populated buckets only, lowest first; `rule` says which bounds
/// are inclusive (0: upper, 1: lower, 2: neither, 3: both).
pub fn write_histogram(out: &mut String, h: &FloatHistogram) {
    out.push_str("{\"count\":");
    write_value(out, h.count);
    out.push_str(",\"sum\":");
    write_value(out, h.sum);
    let mut found = false;
    for b in crate::float_histogram::all_buckets(h) {
        if b.count == 0.0 {
            continue;
        }
        out.push_str(if found { "," } else { ",\"buckets\":[" });
        found = true;
        let rule = match (b.lower_inclusive, b.upper_inclusive) {
            (true, true) => '3',
            (true, false) => '1',
            (false, true) => '0',
            (false, false) => '2',
        };
        out.push('[');
        out.push(rule);
        out.push(',');
        write_value(out, b.lower);
        out.push(',');
        write_value(out, b.upper);
        out.push(',');
        write_value(out, b.count);
        out.push(']');
    }
    if found {
        out.push(']');
    }
    out.push('}');
}

/// Ends a response object with Prometheus' `warnings` and `infos`, each
/// only when it has any.
pub fn write_annotations(out: &mut String, a: &crate::annotations::Annotations) {
    if !a.warnings.is_empty() {
        out.push_str(",\"warnings\":");
        write_str_list(out, &a.warnings);
    }
    if !a.infos.is_empty() {
        out.push_str(",\"infos\":");
        write_str_list(out, &a.infos);
    }
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
    /// The `stats` object to end `data` with, if asked for.
    stats: Option<String>,
    /// The warnings and infos to end the answer with.
    annotations: crate::annotations::Annotations,
}

impl MatrixChunks {
    pub fn new(m: Matrix) -> Self {
        Self {
            matrix: m.into_iter(),
            started: false,
            done: false,
            stats: None,
            annotations: crate::annotations::Annotations::default(),
        }
    }

    /// Ends the answer with `warnings` and `infos`.
    pub fn with_annotations(mut self, a: crate::annotations::Annotations) -> Self {
        self.annotations = a;
        self
    }

    /// Ends `data` with `"stats": stats` (an encoded JSON object).
    pub fn with_stats(mut self, stats: Option<String>) -> Self {
        self.stats = stats;
        self
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
                out.push(']');
                if let Some(stats) = &self.stats {
                    out.push_str(",\"stats\":");
                    out.push_str(stats);
                }
                out.push('}');
                write_annotations(&mut out, &self.annotations);
                out.push('}');
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
                match &s.h {
                    None => {
                        out.push_str(",\"value\":[");
                        write_timestamp(out, s.t);
                        out.push(',');
                        write_value(out, s.v);
                    }
                    Some(h) => {
                        out.push_str(",\"histogram\":[");
                        write_timestamp(out, s.t);
                        out.push(',');
                        write_histogram(out, h);
                    }
                }
                out.push_str("]}");
            }
            out.push(']');
        }
        QueryValue::Matrix(m) => write_matrix(out, m),
    }
    out.push('}');
}

/// `stats` as Prometheus writes it (times in seconds). Strata counts the
/// samples its selectors loaded and the peak it held against
/// `max_samples` ([`crate::engine::QueryStats::peak_samples`]); it does not
/// count per step.
pub fn write_stats(out: &mut String, s: &crate::engine::QueryStats) {
    use std::fmt::Write as _;
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let _ = write!(
        out,
        "{{\"timings\":{{\"evalTotalTime\":{},\"resultSortTime\":0,\"queryPreparationTime\":{},\
         \"innerEvalTime\":{},\"execQueueTime\":{},\"execTotalTime\":{}}},\
         \"samples\":{{\"totalQueryableSamples\":{},\"peakSamples\":{}}}}}",
        secs(s.load_time + s.eval_time),
        secs(s.load_time),
        secs(s.eval_time),
        secs(s.queue_time),
        secs(s.total_time),
        s.loaded_samples,
        s.peak_samples
    );
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

    /// The text Rust's own formatting gives, laid out as Go's: what
    /// [`push_value`] did before it took its digits from `ryu`.
    fn reference(f: f64) -> String {
        if f.is_nan() {
            return "NaN".into();
        }
        if f.is_infinite() {
            return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
        }
        let abs = f.abs();
        if abs == 0.0 || (1e-6..1e21).contains(&abs) {
            return format!("{f}");
        }
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap();
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        let pad = if digits.len() < 2 { "0" } else { "" };
        format!("{mantissa}e{sign}{pad}{digits}")
    }

    proptest::proptest! {
        #[test]
        fn values_print_as_go_prints_them(
            bits in proptest::num::u64::ANY,
            small in -1e7f64..1e7,
            int in -100_000i64..100_000,
            // Across both layouts' edges: 1e-6, 1e-5, 1e16 and 1e21.
            power in -7.0f64..22.0,
        ) {
            let near_edge = 10f64.powf(power);
            for f in [f64::from_bits(bits), small, int as f64, int as f64 / 1000.0, near_edge, near_edge.round()] {
                // Rust's digits differ from Go's (and `ryu`'s) only where
                // two shortest candidates are equally near, such as
                // 106198680959045.625: Go and `ryu` take the even one. So
                // the text must read back as `f` and be as long, and laid
                // out the same.
                let (got, want) = (format_value(f), reference(f));
                if f.is_finite() {
                    proptest::prop_assert_eq!(got.parse::<f64>().ok().map(f64::to_bits), Some(f.to_bits()), "{}", got);
                    proptest::prop_assert_eq!(got.len(), want.len(), "{} vs {}", got, want);
                    proptest::prop_assert_eq!(got.contains('e'), want.contains('e'), "{} vs {}", got, want);
                } else {
                    proptest::prop_assert_eq!(got, want);
                }
            }
        }
    }

    #[test]
    fn edge_values_print_as_go_prints_them() {
        for (f, want) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (1e21, "1e+21"),
            (9.999999999999999e20, "999999999999999900000"),
            (1e-6, "0.000001"),
            (9.99e-7, "9.99e-07"),
            (1e100, "1e+100"),
            (-1.5e-300, "-1.5e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (123456.789, "123456.789"),
            (1e16, "10000000000000000"),
            (0.1, "0.1"),
        ] {
            assert_eq!(format_value(f), want, "{f:?}");
            assert_eq!(reference(f), want, "{f:?}");
        }
        // A tie between two shortest texts: Go's `strconv.FormatFloat`
        // gives these (Rust's own formatting rounds the first up).
        // 106198680959045.625, exactly.
        let tie = 106_198_680_959_045.0 + 0.625;
        assert_eq!(format_value(tie), "106198680959045.62");
        assert_eq!(
            format_value(1.0619868095904562e25),
            "1.0619868095904562e+25"
        );
        assert_eq!(format_value(9007199254740993.0), "9007199254740992");
        let mut t = String::new();
        for ms in [0, 1, 999, 1000, 1500, 1_700_000_000_001, -1500] {
            write_timestamp(&mut t, ms);
            t.push(' ');
        }
        assert_eq!(t, "0 0.001 0.999 1 1.500 1700000000.001 -1.500 ");
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
            histograms: Vec::new(),
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
