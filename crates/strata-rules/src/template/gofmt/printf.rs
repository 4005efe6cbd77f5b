//! Go's `fmt.Sprintf`: flags, width, precision and verbs per argument
//! kind, with Go's `%!verb(type=value)` for a verb that does not fit.

use gtmpl_value::Value;

use super::format_float;
use crate::template::text;
use crate::template::value::{self, Go};

/// One `%` directive's flags, width and precision.
#[derive(Clone, Copy, Default)]
pub(super) struct Spec {
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
pub(in crate::template) fn sprintf(format: &str, args: &[Value]) -> String {
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
pub(super) fn print_arg(arg: &Value, verb: char, spec: &Spec, out: &mut String) {
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
