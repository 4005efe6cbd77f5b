//! The string functions templates call, as Go's libraries behave: quoting,
//! case mapping, title case, escaping, and host:port splitting.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether Go's `strconv.IsPrint` holds, near enough: no controls, no
/// spaces but ' ', no format characters.
fn is_print(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{AD}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{FEFF}'))
}

fn push_escaped(out: &mut String, c: char, quote: char) {
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        '\\' => out.push_str("\\\\"),
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        c if is_print(c) => out.push(c),
        c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `strconv.Quote`.
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

/// Go's `%#q`: back-quoted when it can be, else [`go_quote`].
pub(super) fn go_backquote(s: &str) -> String {
    if s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !c.is_control()))
    {
        format!("`{s}`")
    } else {
        go_quote(s)
    }
}

/// Go's `strconv.QuoteRune`.
pub(super) fn go_quote_rune(c: char) -> String {
    let mut out = String::from("'");
    push_escaped(&mut out, c, '\'');
    out.push('\'');
    out
}

/// Go's `%#U` of a rune, as lexer errors print it.
pub(super) fn go_rune_name(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// A rune mapped by Unicode's simple (one rune to one rune) case mapping,
/// as Go's `unicode.ToUpper`/`ToLower` map; Rust's full mapping may give
/// several, and then the rune stays.
fn simple<I: Iterator<Item = char> + ExactSizeIterator>(c: char, mapped: I) -> char {
    let mut mapped = mapped;
    match (mapped.len(), mapped.next()) {
        (1, Some(m)) => m,
        _ => c,
    }
}

/// Go's `strings.ToUpper`.
pub(super) fn to_upper(s: &str) -> String {
    s.chars().map(|c| simple(c, c.to_uppercase())).collect()
}

/// Go's `strings.ToLower`.
pub(super) fn to_lower(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'İ' => 'i',
            c => simple(c, c.to_lowercase()),
        })
        .collect()
}

/// A rune's title case, as x/text maps it (full mapping: ß is "Ss").
fn push_title(out: &mut String, c: char) {
    match c {
        'Ǆ' | 'ǅ' | 'ǆ' => out.push('ǅ'),
        'Ǉ' | 'ǈ' | 'ǉ' => out.push('ǈ'),
        'Ǌ' | 'ǋ' | 'ǌ' => out.push('ǋ'),
        'Ǳ' | 'ǲ' | 'ǳ' => out.push('ǲ'),
        'ß' => out.push_str("Ss"),
        c => out.push(simple(c, c.to_uppercase())),
    }
}

/// Combining marks, which extend the word they follow.
fn is_mark(c: char) -> bool {
    matches!(c, '\u{300}'..='\u{36F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// Unicode's MidLetter, MidNumLet and Single_Quote word-break classes.
fn is_mid(c: char) -> bool {
    matches!(
        c,
        ':' | '·'
            | '\u{387}'
            | '\u{5F4}'
            | '\u{2027}'
            | '\u{FE13}'
            | '\u{FE55}'
            | '\u{FF1A}'
            | '.'
            | '\u{2018}'
            | '\u{2019}'
            | '\u{2024}'
            | '\u{FE52}'
            | '\u{FF07}'
            | '\u{FF0E}'
            | '\''
    )
}

/// Letters, digits, connectors and marks: never a break between them.
fn is_letter_like(c: char) -> bool {
    c.is_alphanumeric()
        || is_mark(c)
        || matches!(
            c,
            '_' | '\u{203F}' | '\u{2040}' | '\u{2054}' | '\u{FE33}' | '\u{FE34}' | '\u{FE4D}'
                ..='\u{FE4F}' | '\u{FF3F}' | '\u{AD}' | '\u{200C}' | '\u{200D}'
        )
}

/// `cases.Title(language.AmericanEnglish, cases.NoLower)`, with x/text's
/// approximation of Unicode's word breaks: letters, digits and `_` never
/// break a word, one `.`, `'` or `:` does not either but two in a row do,
/// anything else does. The first cased letter of a word is title-cased,
/// the rest left alone.
pub(super) fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut mid_word = false;
    let mut prev_mid = false;
    for c in s.chars() {
        let mid = is_mid(c);
        if prev_mid && mid {
            mid_word = false;
        }
        if c.is_lowercase() || c.is_uppercase() || matches!(c, 'ǅ' | 'ǈ' | 'ǋ' | 'ǲ') {
            if mid_word {
                out.push(c);
            } else {
                push_title(&mut out, c);
                mid_word = true;
            }
        } else {
            out.push(c);
            if !mid && !is_letter_like(c) {
                mid_word = false;
            }
        }
        prev_mid = mid;
    }
    out
}

/// Go's `url.QueryEscape`.
pub(super) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Go's `template.HTMLEscapeString`.
pub(super) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub(super) fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if c.is_ascii() || is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `net.SplitHostPort`, without its error text.
pub(super) fn split_host_port(hp: &str) -> Option<(&str, &str)> {
    let i = hp.rfind(':')?;
    let (host, j, k) = if hp.starts_with('[') {
        let end = hp.find(']')?;
        if end + 1 != i {
            return None;
        }
        (hp.get(1..end)?, 1, end + 1)
    } else {
        let host = hp.get(..i)?;
        if host.contains(':') {
            return None;
        }
        (host, 0, 0)
    };
    if hp.get(j..)?.contains('[') || hp.get(k..)?.contains(']') {
        return None;
    }
    Some((host, hp.get(i + 1..)?))
}

/// Whether Go's `netip.ParseAddr` takes `s`: IPv4, or IPv6 with an
/// optional zone.
fn is_ip(s: &str) -> bool {
    match s.split_once('%') {
        Some((addr, zone)) => !zone.is_empty() && addr.parse::<Ipv6Addr>().is_ok(),
        None => s.parse::<Ipv4Addr>().is_ok() || s.parse::<Ipv6Addr>().is_ok(),
    }
}

/// Prometheus' `stripPort`: the host of a host:port, or the input.
pub(super) fn strip_port(hp: &str) -> String {
    split_host_port(hp).map_or(hp, |(h, _)| h).to_owned()
}

/// Prometheus' `stripDomain`: the first label of a host name, keeping the
/// port; IP addresses stay whole.
pub(super) fn strip_domain(hp: &str) -> String {
    let (host, port) = split_host_port(hp).unwrap_or((hp, ""));
    if is_ip(host) {
        return hp.to_owned();
    }
    let host = host.split('.').next().unwrap_or(host);
    match (port.is_empty(), host.contains(':')) {
        (true, _) => host.to_owned(),
        (false, true) => format!("[{host}]:{port}"),
        (false, false) => format!("{host}:{port}"),
    }
}
