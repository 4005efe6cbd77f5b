//! Series descriptions as Prometheus' parser reads them for `load` and for
//! expected results: `metric{a="b"} 1+2x3 _ stale {{schema:0 count:4}}`,
//! with quoted and unquoted UTF-8 names.

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Span};
use strata_codec::Label;
use strata_promql::float_histogram as fh;
use strata_promql::STALE_NAN_BITS;

/// One step of a series: a number, a native histogram, or nothing.
#[derive(Clone, Debug)]
pub enum Slot {
    Value(f64),
    /// `hint_set`: the description named a `counter_reset_hint`, which an
    /// expected histogram then has to match.
    Hist {
        h: Box<FloatHistogram>,
        hint_set: bool,
    },
    Missing,
}

/// A series description's labels (sorted) and values.
pub type SeriesDesc = (Vec<Label>, Vec<Slot>);

/// Parses a whole description line.
pub fn parse_series(line: &str) -> Result<SeriesDesc, String> {
    let (labels, rest) = parse_series_labels(line)?;
    let tokens = tokenize(rest);
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    Ok((labels, parse_values(&tokens)?))
}

/// Splits values into tokens, a `{{…}}` histogram (with any `+{{…}}xN`
/// after it) being one token however many spaces it holds.
fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' && chars.get(i + 1) == Some(&'{') {
            depth += 1;
            cur.push_str("{{");
            i += 2;
            continue;
        }
        if c == '}' && chars.get(i + 1) == Some(&'}') && depth > 0 {
            depth -= 1;
            cur.push_str("}}");
            i += 2;
            continue;
        }
        if c.is_whitespace() && depth == 0 {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses the inside of `{{schema:0 sum:5 count:4 buckets:[1 2 1]}}`;
/// answers whether a counter reset hint was named.
fn parse_histogram(s: &str) -> Result<(FloatHistogram, bool), String> {
    let mut h = FloatHistogram::default();
    let mut hint_set = false;
    let (mut offset, mut n_offset) = (0i32, 0i32);
    let mut rest = s.trim();
    while !rest.is_empty() {
        let colon = rest
            .find(':')
            .ok_or(format!("bad histogram field in {s:?}"))?;
        let key = rest[..colon].trim();
        rest = rest[colon + 1..].trim_start();
        let value;
        if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or("unterminated list")?;
            value = &r[..end];
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            value = &rest[..end];
            rest = rest[end..].trim_start();
        }
        let list =
            || -> Result<Vec<f64>, String> { value.split_whitespace().map(parse_number).collect() };
        match key {
            "schema" => h.schema = value.parse().map_err(|_| "bad schema")?,
            "sum" => h.sum = parse_number(value)?,
            "count" => h.count = parse_number(value)?,
            "z_bucket" => h.zero_count = parse_number(value)?,
            "z_bucket_w" => h.zero_threshold = parse_number(value)?,
            "offset" => offset = value.parse().map_err(|_| "bad offset")?,
            "n_offset" => n_offset = value.parse().map_err(|_| "bad n_offset")?,
            "buckets" => h.positive_buckets = list()?,
            "n_buckets" => h.negative_buckets = list()?,
            "custom_values" => h.custom_values = list()?,
            "counter_reset_hint" => {
                hint_set = true;
                h.counter_reset_hint = match value {
                    "gauge" => CounterResetHint::Gauge,
                    "reset" => CounterResetHint::Reset,
                    "not_reset" => CounterResetHint::NotReset,
                    "unknown" => CounterResetHint::Unknown,
                    other => return Err(format!("bad counter_reset_hint {other}")),
                }
            }
            other => return Err(format!("unknown histogram field {other}")),
        }
    }
    if !h.positive_buckets.is_empty() {
        h.positive_spans = vec![Span::new(offset, h.positive_buckets.len() as u32)];
    }
    if !h.negative_buckets.is_empty() {
        h.negative_spans = vec![Span::new(n_offset, h.negative_buckets.len() as u32)];
    }
    Ok((h, hint_set))
}

/// Expands `{{A}}`, `{{A}}xN`, `{{A}}+{{B}}xN` and `{{A}}-{{B}}xN`.
fn parse_histogram_token(tok: &str, out: &mut Vec<Slot>) -> Result<(), String> {
    let end = tok.find("}}").ok_or("unterminated histogram")?;
    let (first, hint_set) = parse_histogram(&tok[2..end])?;
    let slot = |h: &FloatHistogram| Slot::Hist {
        h: Box::new(h.clone()),
        hint_set,
    };
    let rest = &tok[end + 2..];
    if rest.is_empty() {
        out.push(slot(&first));
        return Ok(());
    }
    if let Some(n) = rest.strip_prefix('x') {
        let n: usize = n.parse().map_err(|_| format!("bad repeat {tok}"))?;
        for _ in 0..=n {
            out.push(slot(&first));
        }
        return Ok(());
    }
    let negate = rest.starts_with('-');
    let inc = rest
        .get(1..)
        .and_then(|r| r.strip_prefix("{{"))
        .ok_or(format!("bad histogram series {tok}"))?;
    let end = inc.find("}}").ok_or("unterminated histogram")?;
    let (delta, _) = parse_histogram(&inc[..end])?;
    let n: usize = inc[end + 2..]
        .strip_prefix('x')
        .and_then(|n| n.parse().ok())
        .ok_or(format!("bad repeat {tok}"))?;
    let mut cur = first;
    for _ in 0..=n {
        out.push(slot(&cur));
        let hint = cur.counter_reset_hint;
        let mut d = delta.clone();
        d.counter_reset_hint = hint;
        fh::add(&mut cur, &d, negate).map_err(|_| "incompatible increment")?;
        cur.counter_reset_hint = hint;
    }
    Ok(())
}

/// Expands `1+2x3 _ stale 5x2` into one slot per step.
fn parse_values(tokens: &[&str]) -> Result<Vec<Slot>, String> {
    let mut out = Vec::new();
    for tok in tokens {
        // A comment ends the values.
        if tok.starts_with('#') {
            break;
        }
        if tok.starts_with("{{") {
            parse_histogram_token(tok, &mut out)?;
            continue;
        }
        if *tok == "_" {
            out.push(Slot::Missing);
            continue;
        }
        if *tok == "stale" {
            out.push(Slot::Value(f64::from_bits(STALE_NAN_BITS)));
            continue;
        }
        if let Some(n) = tok.strip_prefix("_x") {
            let n: usize = n.parse().map_err(|_| format!("bad repeat {tok}"))?;
            out.extend(std::iter::repeat_n(Slot::Missing, n));
            continue;
        }
        // Not `parse_number`: `0x59` is 0 repeated, not hexadecimal.
        if let Ok(v) = tok.parse() {
            out.push(Slot::Value(v));
            continue;
        }
        let (head, times) = tok.rsplit_once('x').ok_or(format!("bad value {tok:?}"))?;
        let n: usize = times.parse().map_err(|_| format!("bad repeat {tok}"))?;
        // `a+bxN` / `a-bxN` / `axN`: N+1 values.
        let (start, delta) = split_increment(head)?;
        let mut v = start;
        for _ in 0..=n {
            out.push(Slot::Value(v));
            v += delta;
        }
    }
    Ok(out)
}

/// Splits `a+b` / `a-b` (the sign of `a` or of an exponent is not a split).
fn split_increment(s: &str) -> Result<(f64, f64), String> {
    let bytes = s.as_bytes();
    for i in 1..bytes.len() {
        let c = bytes[i];
        if (c == b'+' || c == b'-') && !matches!(bytes[i - 1], b'e' | b'E') {
            let start = parse_float(&s[..i])?;
            let delta = parse_float(&s[i + 1..])?;
            return Ok((start, if c == b'-' { -delta } else { delta }));
        }
    }
    Ok((parse_float(s)?, 0.0))
}

fn parse_float(s: &str) -> Result<f64, String> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

/// A number as Go's `strconv` reads it in Prometheus' runner: an integer
/// with an optional base prefix, else a float (`Inf`, `NaN` included).
pub fn parse_number(s: &str) -> Result<f64, String> {
    let bad = || format!("bad number {s:?}");
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let radix = match digits.get(..2).map(str::to_ascii_lowercase).as_deref() {
        Some("0x") => Some(16),
        Some("0o") => Some(8),
        Some("0b") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let n = i64::from_str_radix(&digits[2..], radix).map_err(|_| bad())?;
        return Ok(if neg { -(n as f64) } else { n as f64 });
    }
    // Rust reads `inf`, `infinity` and `nan` in any case, as Go does.
    s.parse().map_err(|_| bad())
}

/// Whether `c` may start an unquoted name (UTF-8 letters included, as
/// Prometheus 3.16's test parser allows).
fn name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == ':'
}

fn name_char(c: char) -> bool {
    name_start(c) || c.is_numeric() || c == '.'
}

/// Reads a name at the start of `s`: unquoted, or a quoted string.
fn read_name(s: &str) -> Result<(String, &str), String> {
    if s.starts_with(['"', '\'', '`']) {
        return unquote_prefix(s);
    }
    let len = s
        .char_indices()
        .find(|&(i, c)| !(if i == 0 { name_start(c) } else { name_char(c) }))
        .map_or(s.len(), |(i, _)| i);
    if len == 0 {
        return Err(format!("expected a name at {s:?}"));
    }
    Ok((s[..len].to_string(), &s[len..]))
}

/// Parses `metric{a="b", "c.d"="e"}` or `{"metric", a="b"}` into sorted
/// labels; returns the rest of the line.
pub fn parse_series_labels(s: &str) -> Result<(Vec<Label>, &str), String> {
    let mut rest = s.trim_start();
    let mut labels = Vec::new();
    if !rest.starts_with('{') {
        let (name, r) = read_name(rest)?;
        labels.push(Label::new("__name__", name));
        rest = r;
    }
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start().trim_start_matches(',').trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let (name, r) = read_name(rest)?;
            rest = r.trim_start();
            // A quoted string alone names the metric.
            let Some(r) = rest.strip_prefix('=') else {
                labels.push(Label::new("__name__", name));
                continue;
            };
            let (value, r) = unquote_prefix(r.trim_start())?;
            rest = r;
            labels.push(Label::new(name, value));
        }
    }
    labels.sort();
    Ok((labels, rest))
}

/// Reads a Go string literal (`"…"` with escapes, `'…'` or `` `…` ``) at
/// the start of `s`; returns its value and the rest.
pub fn unquote_prefix(s: &str) -> Result<(String, &str), String> {
    let quote = s.chars().next().ok_or("expected a string")?;
    if !matches!(quote, '"' | '\'' | '`') {
        return Err(format!("expected a string at {s:?}"));
    }
    let body = &s[1..];
    if quote == '`' {
        let end = body.find('`').ok_or("unterminated string")?;
        return Ok((body[..end].to_string(), &body[end + 1..]));
    }
    let mut out: Vec<u8> = Vec::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            return Ok((String::from_utf8_lossy(&out).into_owned(), &body[i + 1..]));
        }
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let (_, e) = chars.next().ok_or("unterminated escape")?;
        let mut hex = |n: usize| -> Result<u32, String> {
            let digits: String = (0..n).filter_map(|_| chars.next().map(|p| p.1)).collect();
            u32::from_str_radix(&digits, 16).map_err(|_| format!("bad escape in {s:?}"))
        };
        let byte = |b: u8| vec![b];
        let encoded = |c: u32| -> Result<Vec<u8>, String> {
            let c = char::from_u32(c).ok_or("bad code point")?;
            Ok(c.to_string().into_bytes())
        };
        let bytes = match e {
            'a' => byte(7),
            'b' => byte(8),
            'f' => byte(12),
            'n' => byte(b'\n'),
            'r' => byte(b'\r'),
            't' => byte(b'\t'),
            'v' => byte(11),
            'x' => byte(hex(2)? as u8),
            'u' => encoded(hex(4)?)?,
            'U' => encoded(hex(8)?)?,
            '0'..='7' => {
                let rest: String = (0..2).filter_map(|_| chars.next().map(|p| p.1)).collect();
                let n = u32::from_str_radix(&format!("{e}{rest}"), 8)
                    .map_err(|_| format!("bad escape in {s:?}"))?;
                byte(n as u8)
            }
            other => other.to_string().into_bytes(),
        };
        out.extend(bytes);
    }
    Err("unterminated string".into())
}

/// Milliseconds of a script duration such as `5m`, `1h30m`, `0`, `90s`.
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(n * 1000);
    }
    let mut total = 0i64;
    let mut rest = s;
    while !rest.is_empty() {
        let d = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or(format!("bad duration {s}"))?;
        let n: i64 = rest[..d].parse().map_err(|_| format!("bad duration {s}"))?;
        rest = &rest[d..];
        let u = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mult = match &rest[..u] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            "y" => 365 * 86_400_000,
            other => return Err(format!("bad unit {other:?} in {s:?}")),
        };
        total += n * mult;
        rest = &rest[u..];
    }
    Ok(total)
}
