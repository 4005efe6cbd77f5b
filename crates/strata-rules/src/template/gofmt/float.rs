//! Go's `strconv.FormatFloat`: `%e`, `%f` and `%g`.

/// The decimal digits of a finite `|v|` without trailing zeros, and where
/// the point goes: `|v| = 0.d₁d₂… × 10^point`. The shortest digits that
/// read back as `v` when `sig` is `None`, else `v` rounded to `sig`
/// significant digits (Rust rounds the exact binary value half to even, as
/// Go does).
fn digits(v: f64, sig: Option<usize>) -> (Vec<u8>, i32) {
    let s = match sig {
        None => format!("{:e}", v.abs()),
        Some(n) => format!("{:.*e}", n.saturating_sub(1), v.abs()),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    while d.last() == Some(&b'0') {
        d.pop();
    }
    if d.is_empty() {
        return (d, 0);
    }
    (d, exp + 1)
}

/// `strconv.FormatFloat(v, verb, prec, 64)` for the verbs `e`, `E`, `f`,
/// `F`, `g` and `G`; `prec` `None` is Go's -1, the shortest.
pub(in crate::template) fn format_float(v: f64, verb: char, prec: Option<usize>) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let neg = v.is_sign_negative();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let upper = verb.is_ascii_uppercase();
    match verb.to_ascii_lowercase() {
        'e' => {
            let (d, point) = digits(v, prec.map(|p| p + 1));
            let p = prec.unwrap_or(d.len().saturating_sub(1));
            fmt_e(&mut out, &d, point, p, upper);
        }
        'f' => match prec {
            // Rust rounds `{:.p}` as Go does; only the sign is ours.
            Some(p) => out.push_str(&format!("{:.*}", p, v.abs())),
            None => {
                let (d, point) = digits(v, None);
                let p = (d.len() as i32 - point).max(0) as usize;
                fmt_f(&mut out, &d, point, p);
            }
        },
        _ => {
            let shortest = prec.is_none();
            let sig = prec.map(|p| p.max(1));
            let (d, point) = digits(v, sig);
            let nd = d.len() as i32;
            let mut eprec = sig.map_or(6, |p| p as i32);
            if !shortest && eprec > nd && nd >= point {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = point - 1;
            if exp < -4 || exp >= eprec {
                let p = sig.map_or(nd, |p| (p as i32).min(nd)) - 1;
                fmt_e(&mut out, &d, point, p.max(0) as usize, upper);
            } else {
                let p = match sig {
                    Some(p) if p as i32 > point => nd,
                    Some(p) => p as i32,
                    None => nd,
                };
                fmt_f(&mut out, &d, point, (p - point).max(0) as usize);
            }
        }
    }
    out
}

/// strconv's `%e` layout of digits `d` with `prec` digits after the point.
fn fmt_e(out: &mut String, d: &[u8], point: i32, prec: usize, upper: bool) {
    out.push(d.first().map_or('0', |&c| c as char));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(d.get(i).map_or('0', |&c| c as char));
        }
    }
    out.push(if upper { 'E' } else { 'e' });
    let exp = if d.is_empty() { 0 } else { point - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let exp = exp.unsigned_abs();
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
}

/// strconv's `%f` layout of digits `d` with `prec` digits after the point.
fn fmt_f(out: &mut String, d: &[u8], point: i32, prec: usize) {
    if point > 0 {
        for i in 0..point as usize {
            out.push(d.get(i).map_or('0', |&c| c as char));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec as i32 {
            let j = point + i;
            let c = if j >= 0 {
                d.get(j as usize).copied()
            } else {
                None
            };
            out.push(c.map_or('0', char::from));
        }
    }
}
