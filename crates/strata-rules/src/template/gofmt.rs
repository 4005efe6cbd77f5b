//! Go's `fmt` for the values templates print: `strconv.FormatFloat`'s
//! `%e`, `%f` and `%g` (`%v` of a float is the shortest `%g`: `1`, `0.5`,
//! `1e+06`, `1e-05`), and `Sprintf`, `Sprint` and `Sprintln`.
//!
//! gtmpl's `printf` formats floats as Rust does and has no `%g`, so
//! templates get this one.

use gtmpl_value::Value;

use super::text;
use super::value::{self, Go};

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
pub(super) fn format_float(v: f64, verb: char, prec: Option<usize>) -> String {
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

/// One `%` directive's flags, width and precision.
#[derive(Clone, Copy, Default)]
struct Spec {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    /// `%#v`: Go syntax.
    sharp_v: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    /// Pads `s` to the width, with zeros when asked and `zero_ok`.
    fn pad(&self, s: &str, zero_ok: bool, out: &mut String) {
        let n = s.chars().count();
        let fill = self.width.unwrap_or(0).saturating_sub(n);
        if self.minus {
            out.push_str(s);
            out.extend(std::iter::repeat_n(' ', fill));
        } else {
            let c = if self.zero && zero_ok { '0' } else { ' ' };
            out.extend(std::iter::repeat_n(c, fill));
            out.push_str(s);
        }
    }

    /// Pads a number whose sign (if any) leads `num`: zeros go after it.
    fn pad_number(&self, num: &str, out: &mut String) {
        let width = self.width.unwrap_or(0);
        if self.zero && !self.minus && num.len() < width {
            let (sign, rest) = match num.chars().next() {
                Some(c @ ('+' | '-' | ' ')) => (Some(c), &num[1..]),
                _ => (None, num),
            };
            out.extend(sign);
            out.extend(std::iter::repeat_n('0', width - num.len()));
            out.push_str(rest);
        } else {
            self.pad(num, false, out);
        }
    }

    fn sign(&self, neg: bool) -> &'static str {
        match (neg, self.plus, self.space) {
            (true, _, _) => "-",
            (false, true, _) => "+",
            (false, false, true) => " ",
            _ => "",
        }
    }
}

/// Go's `fmt.Sprintf(format, args...)`.
pub(super) fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printf {
        f: format.as_bytes(),
        i: 0,
        args,
        arg_num: 0,
        reordered: false,
        good_arg_num: true,
        out: String::new(),
    };
    p.run(format);
    p.out
}

/// The state of one `Sprintf`, as Go's `doPrintf` keeps it.
struct Printf<'a> {
    f: &'a [u8],
    i: usize,
    args: &'a [Value],
    arg_num: usize,
    reordered: bool,
    good_arg_num: bool,
    out: String,
}

impl Printf<'_> {
    fn byte(&self) -> Option<u8> {
        self.f.get(self.i).copied()
    }

    /// Digits at the cursor, if any.
    fn parse_num(&mut self) -> Option<usize> {
        let mut n: Option<usize> = None;
        while let Some(d @ b'0'..=b'9') = self.byte() {
            n = Some(
                n.unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0')),
            );
            self.i += 1;
        }
        n
    }

    /// An explicit argument index `[n]` at the cursor; whether one was read.
    fn arg_index(&mut self) -> bool {
        if self.byte() != Some(b'[') {
            return false;
        }
        self.reordered = true;
        let close = self
            .f
            .get(self.i..)
            .and_then(|r| r.iter().position(|&b| b == b']'));
        let Some(close) = close else {
            self.i += 1;
            self.good_arg_num = false;
            return false;
        };
        let digits = self.f.get(self.i + 1..self.i + close).unwrap_or(&[]);
        self.i += close + 1;
        let n = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<usize>().ok());
        match n {
            Some(n) if n >= 1 && n <= self.args.len() && digits.iter().all(u8::is_ascii_digit) => {
                self.arg_num = n - 1;
                true
            }
            _ => {
                self.good_arg_num = false;
                false
            }
        }
    }

    /// A `*` width or precision: an int argument.
    fn int_arg(&mut self) -> Option<i64> {
        let v = match self.args.get(self.arg_num).map(value::go) {
            Some(Go::Int(i)) => Some(i).filter(|i| i.unsigned_abs() <= 1_000_000),
            _ => None,
        };
        if self.arg_num < self.args.len() {
            self.arg_num += 1;
        }
        v
    }

    fn run(&mut self, format: &str) {
        while self.i < self.f.len() {
            self.good_arg_num = true;
            let start = self.i;
            while self.byte().is_some_and(|b| b != b'%') {
                self.i += 1;
            }
            self.out.push_str(format.get(start..self.i).unwrap_or(""));
            if self.i >= self.f.len() {
                break;
            }
            self.i += 1;
            let mut spec = Spec::default();
            while let Some(c) = self.byte() {
                match c {
                    b'#' => spec.sharp = true,
                    b'0' => spec.zero = !spec.minus,
                    b'+' => spec.plus = true,
                    b'-' => {
                        spec.minus = true;
                        spec.zero = false;
                    }
                    b' ' => spec.space = true,
                    _ => break,
                }
                self.i += 1;
            }
            let mut after_index = self.arg_index();
            if self.byte() == Some(b'*') {
                self.i += 1;
                match self.int_arg() {
                    Some(w) => {
                        if w < 0 {
                            spec.minus = true;
                            spec.zero = false;
                        }
                        spec.width = Some(w.unsigned_abs() as usize);
                    }
                    None => self.out.push_str("%!(BADWIDTH)"),
                }
                after_index = false;
            } else {
                spec.width = self.parse_num();
                if after_index && spec.width.is_some() {
                    self.good_arg_num = false;
                }
            }
            if self.byte() == Some(b'.') && self.i + 1 < self.f.len() {
                self.i += 1;
                if after_index {
                    self.good_arg_num = false;
                }
                after_index = self.arg_index();
                if self.byte() == Some(b'*') {
                    self.i += 1;
                    match self.int_arg() {
                        Some(p) if p >= 0 => spec.prec = Some(p as usize),
                        Some(_) => {}
                        None => self.out.push_str("%!(BADPREC)"),
                    }
                    after_index = false;
                } else {
                    spec.prec = Some(self.parse_num().unwrap_or(0));
                }
            }
            if !after_index {
                self.arg_index();
            }
            let Some(verb) = format.get(self.i..).and_then(|r| r.chars().next()) else {
                self.out.push_str("%!(NOVERB)");
                break;
            };
            self.i += verb.len_utf8();
            if verb == '%' {
                self.out.push('%');
                continue;
            }
            if !self.good_arg_num {
                self.out.push_str(&format!("%!{verb}(BADINDEX)"));
                continue;
            }
            let Some(arg) = self.args.get(self.arg_num) else {
                self.out.push_str(&format!("%!{verb}(MISSING)"));
                continue;
            };
            if verb == 'v' {
                // %#v and %+v are Go syntax and field names, not flags.
                spec.sharp_v = std::mem::take(&mut spec.sharp);
                spec.plus = false;
            }
            print_arg(arg, verb, &spec, &mut self.out);
            self.arg_num += 1;
        }
        if !self.reordered {
            if let Some(extra) = self.args.get(self.arg_num..).filter(|e| !e.is_empty()) {
                self.out.push_str("%!(EXTRA ");
                for (i, a) in extra.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.out.push_str(value::type_name(a));
                    self.out.push('=');
                    print_arg(a, 'v', &Spec::default(), &mut self.out);
                }
                self.out.push(')');
            }
        }
    }
}

/// Go's `printArg`: `arg` under `verb`, maps, lists and structs element by
/// element.
fn print_arg(arg: &Value, verb: char, spec: &Spec, out: &mut String) {
    if verb == 'T' {
        return spec.pad(value::type_name(arg), false, out);
    }
    match value::go(arg) {
        Go::Int(i) => print_int(i128::from(i), verb, spec, arg, out),
        Go::Uint(u) => print_int(i128::from(u), verb, spec, arg, out),
        Go::Float(f) => print_float(f, verb, spec, arg, out),
        Go::Bool(b) if matches!(verb, 'v' | 't') => {
            spec.pad(if b { "true" } else { "false" }, true, out)
        }
        Go::Str(s) => print_str(s, verb, spec, arg, out),
        Go::Nil if verb == 'v' => spec.pad("<nil>", false, out),
        Go::Nil => {
            out.push_str("%!");
            out.push(verb);
            out.push_str("(<nil>)");
        }
        Go::Time(_) | Go::Duration(_) if matches!(verb, 'v' | 's' | 'q' | 'x' | 'X') => {
            print_str(&value::sprint(arg), verb, spec, arg, out)
        }
        Go::Map(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_arg(&Value::String(k.clone()), verb, spec, out);
                out.push(':');
                if let Some(v) = m.get(k) {
                    print_arg(v, verb, spec, out);
                }
            }
            out.push(']');
        }
        Go::List(l) => {
            out.push('[');
            for (i, v) in l.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_arg(v, verb, spec, out);
            }
            out.push(']');
        }
        Go::Sample(o) | Go::Data(o) => {
            // A sample is a pointer: printf shows it as &{...}.
            let fields: &[&str] = if matches!(value::go(arg), Go::Sample(_)) {
                out.push('&');
                &value::SAMPLE_FIELDS
            } else {
                &value::DATA_FIELDS
            };
            out.push('{');
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                if let Some(v) = o.get(*f) {
                    print_arg(v, verb, spec, out);
                }
            }
            out.push('}');
        }
        _ => bad_verb(verb, arg, spec, out),
    }
}

/// Go's `%!verb(type=value)`, the value printed with the directive's flags.
fn bad_verb(verb: char, arg: &Value, spec: &Spec, out: &mut String) {
    out.push_str("%!");
    out.push(verb);
    out.push('(');
    out.push_str(value::type_name(arg));
    out.push('=');
    let plain = Spec {
        sharp: false,
        plus: false,
        ..*spec
    };
    match value::go(arg) {
        Go::Bool(b) => plain.pad(if b { "true" } else { "false" }, false, out),
        Go::Time(_) | Go::Duration(_) | Go::Func => value::write_v(arg, out),
        _ => print_arg(arg, 'v', &plain, out),
    }
    out.push(')');
}

fn print_str(s: &str, verb: char, spec: &Spec, arg: &Value, out: &mut String) {
    let cut = |s: &str| match spec.prec {
        Some(p) => s.chars().take(p).collect::<String>(),
        None => s.to_owned(),
    };
    match verb {
        'v' if spec.sharp_v => spec.pad(&text::go_quote(&cut(s)), true, out),
        'v' | 's' => spec.pad(&cut(s), true, out),
        'q' => spec.pad(&text::go_quote(&cut(s)), true, out),
        'x' | 'X' => {
            let hex: String = s
                .bytes()
                .map(|b| {
                    if verb == 'x' {
                        format!("{b:02x}")
                    } else {
                        format!("{b:02X}")
                    }
                })
                .collect();
            spec.pad(&hex, true, out)
        }
        _ => bad_verb(verb, arg, spec, out),
    }
}

fn print_int(i: i128, verb: char, spec: &Spec, arg: &Value, out: &mut String) {
    let abs = i.unsigned_abs();
    let (digits, prefix) = match verb {
        'v' | 'd' => (abs.to_string(), ""),
        'b' => (format!("{abs:b}"), if spec.sharp { "0b" } else { "" }),
        'o' => (format!("{abs:o}"), if spec.sharp { "0" } else { "" }),
        'O' => (format!("{abs:o}"), "0o"),
        'x' => (format!("{abs:x}"), if spec.sharp { "0x" } else { "" }),
        'X' => (format!("{abs:X}"), if spec.sharp { "0X" } else { "" }),
        'c' | 'q' | 'U' => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            let s = match verb {
                'c' => c.to_string(),
                'q' => text::go_quote_rune(c),
                _ => format!("U+{:04X}", u32::from(c)),
            };
            return spec.pad(&s, false, out);
        }
        _ => return bad_verb(verb, arg, spec, out),
    };
    let mut digits = digits;
    if let Some(p) = spec.prec {
        if p == 0 && i == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let num = format!("{}{prefix}{digits}", spec.sign(i < 0));
    if spec.prec.is_some() {
        // Go ignores the zero flag once a precision is given.
        spec.pad(&num, false, out)
    } else {
        spec.pad_number(&num, out)
    }
}

fn print_float(f: f64, verb: char, spec: &Spec, arg: &Value, out: &mut String) {
    let (fverb, prec) = match verb {
        'v' => ('g', spec.prec),
        'e' | 'E' | 'f' | 'F' => (verb, Some(spec.prec.unwrap_or(6))),
        'g' | 'G' => (verb, spec.prec),
        _ => return bad_verb(verb, arg, spec, out),
    };
    let mut num = format_float(f, fverb, prec);
    if f.is_nan() {
        if spec.plus {
            num.insert(0, '+');
        } else if spec.space {
            num.insert(0, ' ');
        }
        return spec.pad(&num, false, out);
    }
    if f.is_infinite() {
        if f > 0.0 && !spec.plus && spec.space {
            num.replace_range(0..1, " ");
        }
        return spec.pad(&num, false, out);
    }
    if !num.starts_with('-') {
        num.insert_str(0, spec.sign(false));
    }
    spec.pad_number(&num, out)
}

/// Go's `fmt.Sprint(args...)`: a space between operands when neither is a
/// string.
pub(super) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    let mut prev_string = true;
    for (i, a) in args.iter().enumerate() {
        let is_string = value::is_string(a);
        if i > 0 && !is_string && !prev_string {
            out.push(' ');
        }
        print_arg(a, 'v', &Spec::default(), &mut out);
        prev_string = is_string;
    }
    out
}

/// `Sprint` of values made printable as Go's `printableValue` makes them:
/// nil is the string "<no value>", a pointer prints as what it points to.
pub(super) fn sprint_printable(args: &[Value]) -> String {
    let mut out = String::new();
    let mut prev_string = true;
    for (i, a) in args.iter().enumerate() {
        let is_string = value::is_string(a) || matches!(a, Value::Nil);
        if i > 0 && !is_string && !prev_string {
            out.push(' ');
        }
        match a {
            Value::Nil => out.push_str("<no value>"),
            a => value::write_v(a, &mut out),
        }
        prev_string = is_string;
    }
    out
}

/// Go's `fmt.Sprintln(args...)`: spaces between all operands and a newline.
pub(super) fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        print_arg(a, 'v', &Spec::default(), &mut out);
    }
    out.push('\n');
    out
}
