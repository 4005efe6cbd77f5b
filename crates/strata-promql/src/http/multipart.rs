//! `multipart/form-data` bodies (RFC 7578), read as Go's
//! `Request.ParseMultipartForm` reads them for `FormValue`: every named
//! part without a file name is a value; file parts are not.

/// The boundary a `multipart/form-data` content type names, or `None`
/// when the type is another one. An error says what is wrong with it.
pub fn form_data_boundary(content_type: &str) -> Option<Result<String, String>> {
    let mut parts = split_params(content_type).into_iter();
    let media = parts.next()?;
    if !media.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = parts
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("boundary")
                .then(|| unquote(v.trim()))
        })
        .next();
    Some(match boundary {
        Some(b) if !b.is_empty() && b.len() <= 70 => Ok(b),
        Some(b) => Err(format!("invalid boundary {b:?}")),
        None => Err("no multipart boundary param in Content-Type".into()),
    })
}

/// The values of a multipart body delimited by `boundary`, in order; an
/// error says where the body stops making sense.
pub fn parse_form_data(body: &[u8], boundary: &str) -> Result<Vec<(String, String)>, String> {
    let delimiter = format!("--{boundary}").into_bytes();
    let first =
        find_line_start(body, &delimiter).ok_or("multipart: no boundary line in the body")?;
    let mut at = first + delimiter.len();
    // The first boundary line fixes the line ending, as Go's reader does.
    let nl: &[u8] = match body.get(at..) {
        Some(rest) if rest.starts_with(b"--") => return Ok(Vec::new()),
        Some(rest) if after_padding(rest).starts_with(b"\r\n") => b"\r\n",
        Some(rest) if after_padding(rest).starts_with(b"\n") => b"\n",
        _ => return Err("multipart: boundary line does not end".into()),
    };
    let mut next_delimiter = nl.to_vec();
    next_delimiter.extend_from_slice(&delimiter);
    let mut values = Vec::new();
    loop {
        let rest = body.get(at..).unwrap_or_default();
        if rest.starts_with(b"--") {
            return Ok(values);
        }
        let padded = after_padding(rest);
        if !padded.starts_with(nl) {
            return Err("multipart: boundary line does not end".into());
        }
        let start = at + (rest.len() - padded.len()) + nl.len();
        let part_len = find(body.get(start..).unwrap_or_default(), &next_delimiter)
            .ok_or("multipart: a part has no closing boundary")?;
        let part = body.get(start..start + part_len).unwrap_or_default();
        if let Some(value) = form_value(part, nl)? {
            values.push(value);
        }
        at = start + part_len + next_delimiter.len();
    }
}

/// A part's (name, value) when it is a named form value.
fn form_value(part: &[u8], nl: &[u8]) -> Result<Option<(String, String)>, String> {
    let (head, content) = if part.starts_with(nl) {
        (&[][..], part.get(nl.len()..).unwrap_or_default())
    } else {
        let mut end = nl.to_vec();
        end.extend_from_slice(nl);
        let split = find(part, &end).ok_or("multipart: a part's headers do not end")?;
        (
            part.get(..split).unwrap_or_default(),
            part.get(split + end.len()..).unwrap_or_default(),
        )
    };
    let head = String::from_utf8_lossy(head);
    let disposition = head
        .split('\n')
        .filter_map(|line| line.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-disposition"))
        .map(|(_, v)| v.trim().to_owned());
    let Some(disposition) = disposition else {
        return Ok(None);
    };
    let mut params = split_params(&disposition).into_iter();
    if !params
        .next()
        .is_some_and(|d| d.eq_ignore_ascii_case("form-data"))
    {
        return Ok(None);
    }
    let (mut name, mut file) = (String::new(), false);
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            continue;
        };
        match k.trim().to_ascii_lowercase().as_str() {
            "name" => name = unquote(v.trim()),
            "filename" => file = true,
            _ => {}
        }
    }
    if name.is_empty() || file {
        return Ok(None);
    }
    Ok(Some((name, String::from_utf8_lossy(content).into_owned())))
}

/// `a; b="x;y"; c` split at the semicolons outside quotes, trimmed.
fn split_params(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in s.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => {
                out.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_owned());
    out
}

/// A token or a quoted string with its backslash escapes undone.
fn unquote(v: &str) -> String {
    let Some(inner) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return v.to_owned();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    out
}

/// Spaces and tabs after a boundary (RFC 2046's transport padding) skipped.
fn after_padding(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    s.get(n..).unwrap_or_default()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The first `needle` that starts a line.
fn find_line_start(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let i = at + find(haystack.get(at..)?, needle)?;
        if i == 0 || haystack.get(i - 1) == Some(&b'\n') {
            return Some(i);
        }
        at = i + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_from_content_type() {
        let b = form_data_boundary("multipart/form-data; boundary=----x1");
        assert_eq!(b, Some(Ok("----x1".into())));
        let b = form_data_boundary("Multipart/Form-Data; charset=utf-8; boundary=\"a b;c\"");
        assert_eq!(b, Some(Ok("a b;c".into())));
        assert!(matches!(
            form_data_boundary("multipart/form-data"),
            Some(Err(_))
        ));
        assert_eq!(
            form_data_boundary("application/x-www-form-urlencoded"),
            None
        );
    }

    #[test]
    fn values_in_order_files_left_out() {
        let body = "preamble\r\n--XyZ\r\n\
            Content-Disposition: form-data; name=\"query\"\r\n\r\n\
            sum(rate(x[5m]))\r\n\
            --XyZ  \r\n\
            Content-Disposition: form-data; name=\"upload\"; filename=\"a.txt\"\r\n\
            Content-Type: text/plain\r\n\r\n\
            file\r\n\
            --XyZ\r\n\
            content-disposition: form-data; name=\"time\"\r\n\r\n\
            1700000000\r\n--XyZ\r\n\
            Content-Disposition: form-data; name=\"multi\"\r\n\r\n\
            line one\r\nline two\r\n--XyZ--\r\nepilogue";
        let v = parse_form_data(body.as_bytes(), "XyZ").unwrap();
        assert_eq!(
            v,
            [
                ("query".into(), "sum(rate(x[5m]))".into()),
                ("time".into(), "1700000000".into()),
                ("multi".into(), "line one\r\nline two".into())
            ]
        );
    }

    #[test]
    fn bare_newlines_and_empty_forms() {
        let body = "--b\nContent-Disposition: form-data; name=q\n\nup\n--b--\n";
        assert_eq!(
            parse_form_data(body.as_bytes(), "b").unwrap(),
            [("q".into(), "up".into())]
        );
        assert_eq!(parse_form_data(b"--b--\r\n", "b").unwrap(), []);
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert!(parse_form_data(b"no boundary here", "b").is_err());
        let unclosed = "--b\r\nContent-Disposition: form-data; name=q\r\n\r\nup";
        assert!(parse_form_data(unclosed.as_bytes(), "b").is_err());
        let headless = "--b\r\nContent-Disposition: form-data; name=q\r\n--b--";
        assert!(parse_form_data(headless.as_bytes(), "b").is_err());
    }
}
