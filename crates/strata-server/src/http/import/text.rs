//! One line of the Prometheus text exposition format or of OpenMetrics, as
//! `promtool tsdb dump-openmetrics` and VictoriaMetrics'
//! `/api/v1/export/prometheus` write them.
//!
//! A line is a comment (`#`, which covers `# TYPE`, `# HELP`, `# UNIT` and
//! `# EOF`), blank, or a sample:
//!
//! ```text
//! name{label="value",...} value [timestamp] [# exemplar]
//! {"name.in.utf8", "label.name"="value"} value [timestamp]
//! ```
//!
//! Choices, with VictoriaMetrics' parser as the reference where the formats
//! leave room:
//!
//! - Timestamps with a decimal point and no exponent are Unix seconds
//!   (OpenMetrics, and
//!   promtool always writes three decimals); other numbers are seconds
//!   when below 2^31 in magnitude and milliseconds (the Prometheus text
//!   format) otherwise, as VictoriaMetrics decides. So both formats parse
//!   without being told which one they are. Seconds convert exactly from
//!   their decimal digits; digits past the millisecond are dropped.
//! - Label values are unescaped as Go quotes strings (`\\`, `\"`, `\n`,
//!   `\t`, `\r`, `\a`, `\b`, `\f`, `\v`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`):
//!   promtool writes them with Go's quoting, and the exposition formats'
//!   own three escapes are a subset. Any other backslash is kept as is.
//! - Label names and a metric name outside the braces may be any UTF-8 up
//!   to the next delimiter, as promtool writes Prometheus 3's names bare.
//! - A label with an empty value is the same as no label, as in Prometheus.
//! - Values are floats as Go writes them (`1e+06`, `NaN`, `+Inf`, `-Inf`).
//!   Staleness markers cannot be written in these formats: a dump shows
//!   them as `NaN`, which is read as an ordinary NaN.

/// Timestamps of smaller magnitude are seconds, larger ones milliseconds.
const SECONDS_BELOW: u64 = 1 << 31;

/// A sample line with its series not yet decoded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SampleLine<'a> {
    /// The metric name and label braces as written: equal bytes are the
    /// same series, so consecutive lines of one series decode it once.
    pub series: &'a [u8],
    pub value: f64,
    /// Milliseconds since the Unix epoch, when the line has a timestamp.
    pub timestamp_ms: Option<i64>,
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_space(b)).count();
    s.get(n..).unwrap_or_default()
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rev()
        .take_while(|&&b| is_space(b) || b == b'\r')
        .count();
    s.get(..s.len() - n).unwrap_or_default()
}

/// The first whitespace-delimited token of `s` and what follows it.
fn split_token(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|&&b| !is_space(b)).count();
    s.split_at(n)
}

/// `s` shown in an error message: lossy UTF-8, cut at 64 characters.
fn shown(s: &[u8]) -> String {
    let text = String::from_utf8_lossy(s);
    let mut out: String = text.chars().take(64).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    format!("{out:?}")
}

/// Splits a line (without its newline) into series, value and timestamp;
/// `Ok(None)` for blank lines and comments.
pub(crate) fn split_line(line: &[u8]) -> Result<Option<SampleLine<'_>>, String> {
    let line = trim_start(trim_end(line));
    match line.first() {
        None | Some(b'#') => return Ok(None),
        _ => {}
    }
    let name_len = line
        .iter()
        .take_while(|&&b| !is_space(b) && b != b'{' && b != b'"')
        .count();
    let after_name = line.get(name_len..).unwrap_or_default();
    if after_name.first() == Some(&b'"') {
        return Err("a quoted metric name must be inside the braces: {\"name\", ...}".into());
    }
    let spaced = trim_start(after_name);
    let series_len = if spaced.first() == Some(&b'{') {
        let open = line.len() - spaced.len();
        closing_brace(line, open)? + 1
    } else if name_len == 0 {
        return Err("missing metric name".into());
    } else {
        name_len
    };
    let (series, rest) = line.split_at(series_len.min(line.len()));
    let rest = trim_start(rest);
    let (value, rest) = split_token(rest);
    if value.is_empty() || value.first() == Some(&b'#') {
        return Err("missing value".into());
    }
    let value = parse_value(value)?;
    let rest = trim_start(rest);
    let (timestamp, rest) = if rest.first() == Some(&b'#') {
        (&b""[..], rest)
    } else {
        split_token(rest)
    };
    let timestamp_ms = if timestamp.is_empty() {
        None
    } else {
        Some(parse_timestamp(timestamp)?)
    };
    let rest = trim_start(rest);
    // After the timestamp only an OpenMetrics exemplar may follow; it is
    // dropped, as remote write drops exemplars.
    if !rest.is_empty() && rest.first() != Some(&b'#') {
        return Err(format!("unexpected {} after the timestamp", shown(rest)));
    }
    Ok(Some(SampleLine {
        series,
        value,
        timestamp_ms,
    }))
}

/// The index of the `}` closing the brace at `open`, skipping quoted
/// strings.
fn closing_brace(line: &[u8], open: usize) -> Result<usize, String> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, &b) in line.iter().enumerate().skip(open + 1) {
        if quoted {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                quoted = false;
            }
        } else if b == b'"' {
            quoted = true;
        } else if b == b'}' {
            return Ok(i);
        }
    }
    Err(if quoted {
        "unterminated quoted string in the labels".into()
    } else {
        "missing closing brace '}'".into()
    })
}

/// Parses a sample value as Go's `strconv.ParseFloat` reads the ones
/// Prometheus writes.
pub(crate) fn parse_value(s: &[u8]) -> Result<f64, String> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| format!("cannot parse value {}", shown(s)))
}

/// Parses a timestamp into milliseconds: seconds (OpenMetrics) when it has
/// a decimal point or is below 2^31 in magnitude, milliseconds (Prometheus
/// text) otherwise.
pub(crate) fn parse_timestamp(s: &[u8]) -> Result<i64, String> {
    let bad = || format!("cannot parse timestamp {}", shown(s));
    let text = std::str::from_utf8(s).map_err(|_| bad())?;
    if let Ok(i) = text.parse::<i64>() {
        return Ok(if i.unsigned_abs() < SECONDS_BELOW {
            i * 1000
        } else {
            i
        });
    }
    if let Some(ms) = decimal_seconds(text) {
        return Ok(ms);
    }
    let f: f64 = text.parse().map_err(|_| bad())?;
    if !f.is_finite() {
        return Err(bad());
    }
    let decimal = text.contains('.') && !text.contains(['e', 'E']);
    let ms = if decimal || f.abs() < SECONDS_BELOW as f64 {
        f * 1000.0
    } else {
        f
    };
    // i64's range in f64: [-2^63, 2^63).
    if !(i64::MIN as f64..i64::MAX as f64).contains(&ms) {
        return Err(format!(
            "timestamp {} is out of range",
            shown(s).trim_matches('"')
        ));
    }
    Ok(ms.trunc() as i64)
}

/// `[-+]digits.digits` seconds in exact milliseconds.
fn decimal_seconds(s: &str) -> Option<i64> {
    let (negative, unsigned) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let (int, frac) = unsigned.split_once('.')?;
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    let whole: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut millis = 0i64;
    let mut frac_digits = frac.bytes();
    for _ in 0..3 {
        millis = millis * 10 + frac_digits.next().map_or(0, |b| i64::from(b - b'0'));
    }
    let ms = whole.checked_mul(1000)?.checked_add(millis)?;
    Some(if negative { -ms } else { ms })
}

/// Decodes a series (the `series` of a [`SampleLine`]) into `out` as
/// `(name, value)` pairs, the metric name first as `__name__`, in the
/// order written. Labels with empty values are left out.
pub(crate) fn parse_series(series: &[u8], out: &mut Vec<(String, String)>) -> Result<(), String> {
    out.clear();
    let brace = series.iter().position(|&b| b == b'{');
    let (name, labels) = match brace {
        Some(i) => (
            trim_end(series.get(..i).unwrap_or_default()),
            series.get(i + 1..),
        ),
        None => (series, None),
    };
    let mut metric = if name.is_empty() {
        None
    } else {
        Some(utf8(name, "the metric name")?)
    };
    if let Some(labels) = labels {
        // `series` ends with the closing brace.
        let inside = labels.strip_suffix(b"}").unwrap_or(labels);
        parse_labels(inside, &mut metric, out)?;
    }
    if let Some(at) = out.iter().position(|(n, _)| n == "__name__") {
        if metric.is_some() {
            return Err(
                "the metric name is given twice (before the braces and as __name__)".into(),
            );
        }
        metric = Some(out.remove(at).1);
    }
    let name = metric.ok_or("missing metric name")?;
    out.insert(0, ("__name__".to_owned(), name));
    Ok(())
}

fn utf8(b: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| format!("{what} is not valid UTF-8: {}", shown(b)))
}

/// Parses `a="1", "b.c"="2", "metric"` (the inside of the braces).
fn parse_labels(
    mut s: &[u8],
    metric: &mut Option<String>,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    loop {
        s = trim_start(s);
        let Some(&first) = s.first() else {
            return Ok(());
        };
        let name = if first == b'"' {
            let (name, rest) = quoted(s)?;
            s = trim_start(rest);
            if s.first() != Some(&b'=') {
                // A quoted string alone is the metric name.
                if metric.is_some() {
                    return Err(format!(
                        "the metric name is given twice: {:?} after {:?}",
                        name,
                        metric.as_deref().unwrap_or_default()
                    ));
                }
                *metric = Some(name);
                s = after_comma(s)?;
                continue;
            }
            name
        } else {
            let n = s
                .iter()
                .take_while(|&&b| !is_space(b) && !b"=,\"{}".contains(&b))
                .count();
            if n == 0 {
                return Err(format!("expected a label name, found {}", shown(s)));
            }
            let (name, rest) = s.split_at(n);
            s = trim_start(rest);
            utf8(name, "a label name")?
        };
        if s.first() != Some(&b'=') {
            return Err(format!("expected '=' after label name {name:?}"));
        }
        s = trim_start(s.get(1..).unwrap_or_default());
        if s.first() != Some(&b'"') {
            return Err(format!("the value of label {name:?} is not quoted"));
        }
        let (value, rest) = quoted(s)?;
        if name.is_empty() {
            return Err("a label has an empty name".into());
        }
        if !value.is_empty() {
            out.push((name, value));
        }
        s = after_comma(rest)?;
    }
}

/// Skips a `,` (or nothing at the end) after a label.
fn after_comma(s: &[u8]) -> Result<&[u8], String> {
    let s = trim_start(s);
    match s.first() {
        None => Ok(s),
        Some(b',') => Ok(s.get(1..).unwrap_or_default()),
        Some(_) => Err(format!(
            "expected ',' or '}}' in the labels, found {}",
            shown(s)
        )),
    }
}

/// Decodes the quoted string `s` starts with; answers it and what follows.
fn quoted(s: &[u8]) -> Result<(String, &[u8]), String> {
    let body = s.get(1..).unwrap_or_default();
    let mut out = Vec::with_capacity(body.len().min(64));
    let mut it = body.iter().enumerate();
    while let Some((i, &b)) = it.next() {
        match b {
            b'"' => {
                let text = String::from_utf8(out).map_err(|e| {
                    format!(
                        "a quoted string is not valid UTF-8: {}",
                        shown(e.as_bytes())
                    )
                })?;
                return Ok((text, body.get(i + 1..).unwrap_or_default()));
            }
            b'\\' => {
                let Some((_, &e)) = it.next() else { break };
                match e {
                    b'\\' | b'"' => out.push(e),
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(0x07),
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'v' => out.push(0x0b),
                    b'x' | b'u' | b'U' => {
                        let len = match e {
                            b'x' => 2,
                            b'u' => 4,
                            _ => 8,
                        };
                        let hex: Vec<u8> = it.by_ref().take(len).map(|(_, &h)| h).collect();
                        let code = std::str::from_utf8(&hex)
                            .ok()
                            .filter(|h| h.len() == len)
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                            .ok_or_else(|| {
                                format!(
                                    "bad escape \\{}{}",
                                    e as char,
                                    String::from_utf8_lossy(&hex)
                                )
                            })?;
                        if e == b'x' {
                            // One byte, which may be part of a UTF-8 sequence.
                            out.push(code as u8);
                        } else {
                            let c = char::from_u32(code).ok_or_else(|| {
                                format!(
                                    "bad escape \\{}{}",
                                    e as char,
                                    String::from_utf8_lossy(&hex)
                                )
                            })?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                    other => {
                        out.push(b'\\');
                        out.push(other);
                    }
                }
            }
            _ => out.push(b),
        }
    }
    Err("unterminated quoted string".into())
}

/// Renders pairs as promtool's dump does: `name{a="1",b="2"}`, values in
/// Go-compatible quoting (for tests and messages).
#[cfg(test)]
pub(crate) fn render(labels: &[(String, String)]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut rest = Vec::new();
    for (n, v) in labels {
        if n == "__name__" {
            out.push_str(v);
        } else {
            rest.push((n, v));
        }
    }
    out.push('{');
    for (i, (n, v)) in rest.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{n}=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
