//! Go's `fmt` for the values templates print: `strconv.FormatFloat`'s
//! `%e`, `%f` and `%g` (`%v` of a float is the shortest `%g`: `1`, `0.5`,
//! `1e+06`, `1e-05`), and `Sprintf`, `Sprint` and `Sprintln`.
//!
//! gtmpl's `printf` formats floats as Rust does and has no `%g`, so
//! templates get this one.

mod float;
mod printf;

pub(super) use float::format_float;
pub(super) use printf::sprintf;
use printf::{print_arg, Spec};

use gtmpl_value::Value;

use crate::template::value;

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
