//! Go's literals: strings unquoted by `strconv.Unquote`'s rules, numbers
//! typed as Go's exec types them (an int, or a float64 when written with a
//! point or an exponent).

use super::parse::Arg;

/// A number literal typed as Go's exec types it: a float64 when written
/// with a point or exponent (and not a hex or rune integer), else an int.
pub(super) fn number(text: &str) -> Result<Arg, String> {
    if text.ends_with('i') {
        return Err("complex numbers are not supported".into());
    }
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1
        && lower.starts_with('0')
        && lower.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        (8, lower.get(1..).unwrap_or(""))
    } else {
        (10, lower.as_str())
    };
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let is_float = radix == 10 && lower.contains(['.', 'e']);
    if radix == 16 && lower.contains('p') {
        return Err("hexadecimal floating-point numbers are not supported".into());
    }
    if !is_float {
        return match i128::from_str_radix(&clean, radix) {
            Ok(v) => {
                let v = if neg { -v } else { v };
                i64::try_from(v)
                    .map(Arg::Int)
                    .map_err(|_| format!("{text} overflows int"))
            }
            Err(_) => Err(format!(
                "illegal number syntax: {}",
                super::text::go_quote(text)
            )),
        };
    }
    match clean.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(Arg::Float(if neg { -f } else { f })),
        _ => Err(format!(
            "illegal number syntax: {}",
            super::text::go_quote(text)
        )),
    }
}

/// Go's `strconv.Unquote` of a quoted or raw string literal.
pub(super) fn unquote(s: &str) -> Option<String> {
    if let Some(raw) = s.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return Some(raw.replace('\r', ""));
    }
    let body = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut bytes = Vec::with_capacity(body.len());
    let mut rest = body;
    while !rest.is_empty() {
        let (c, tail) = unquote_one(rest, '"')?;
        match c {
            Unquoted::Byte(b) => bytes.push(b),
            Unquoted::Char(c) => {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        rest = tail;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Go's `strconv.UnquoteChar` of a whole character constant such as `'a'`.
pub(super) fn unquote_char(s: &str) -> Option<char> {
    let body = s.strip_prefix('\'')?.strip_suffix('\'')?;
    match unquote_one(body, '\'')? {
        (Unquoted::Char(c), "") => Some(c),
        (Unquoted::Byte(b), "") => Some(char::from(b)),
        _ => None,
    }
}

enum Unquoted {
    Byte(u8),
    Char(char),
}

/// The first character of a literal's body and what follows it.
fn unquote_one(s: &str, quote: char) -> Option<(Unquoted, &str)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c == quote {
        return None;
    }
    if c != '\\' {
        return Some((Unquoted::Char(c), chars.as_str()));
    }
    let e = chars.next()?;
    let rest = chars.as_str();
    let simple = match e {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' if e == quote => Some(e),
        _ => None,
    };
    if let Some(c) = simple {
        return Some((Unquoted::Char(c), rest));
    }
    let hex = |n: usize| -> Option<(u32, &str)> {
        let h = rest.get(..n)?;
        Some((u32::from_str_radix(h, 16).ok()?, rest.get(n..)?))
    };
    match e {
        'x' => {
            let (v, tail) = hex(2)?;
            Some((Unquoted::Byte(v as u8), tail))
        }
        'u' | 'U' => {
            let (v, tail) = hex(if e == 'u' { 4 } else { 8 })?;
            Some((Unquoted::Char(char::from_u32(v)?), tail))
        }
        '0'..='7' => {
            let o = s.get(1..4)?;
            let v = u32::from_str_radix(o, 8).ok()?;
            Some((Unquoted::Byte(u8::try_from(v).ok()?), s.get(4..)?))
        }
        _ => None,
    }
}
