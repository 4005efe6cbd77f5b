//! Go's values as they live in gtmpl's `Value`.
//!
//! gtmpl has one number type that turns every float without a fraction into
//! an integer and every negative float into its truncation, and it prints
//! floats, maps and lists in Rust's way. So a float64, a time, a duration and
//! the structs Prometheus hands to templates are objects tagged under a key
//! no template can name, and every function here reads values through
//! [`Go`], the Go type a value stands for.

use std::collections::HashMap;

use gtmpl_value::Value;

use super::clock::{self, Instant};
use super::gofmt;

/// The key that tags an object with the Go type it stands for; templates
/// cannot spell a field name with a NUL in it.
const KIND: &str = "\u{0}kind";
/// A float64's bits.
const BITS: &str = "\u{0}bits";
/// A time's seconds since the epoch.
const SECS: &str = "\u{0}secs";
/// A time's nanoseconds within the second, or a duration's nanoseconds.
const NANOS: &str = "\u{0}nanos";

/// The fields of Prometheus' alert template data, in Go's order.
pub(super) const DATA_FIELDS: [&str; 4] = ["Labels", "ExternalLabels", "ExternalURL", "Value"];
/// The fields of a query result's sample, in Go's order.
pub(super) const SAMPLE_FIELDS: [&str; 2] = ["Labels", "Value"];

/// A template value seen as the Go value it stands for.
pub(super) enum Go<'a> {
    /// A string; a missing map entry reads as Go's zero string.
    Str(&'a str),
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
    /// Go's untyped nil.
    Nil,
    /// A map with string keys: labels, or what `args` builds.
    Map(&'a HashMap<String, Value>),
    /// A slice: a query result, or what a range entry holds.
    List(&'a [Value]),
    /// `*template.sample`, one element of a query result.
    Sample(&'a HashMap<String, Value>),
    /// The alert template data: `.Labels`, `.ExternalLabels`, `.ExternalURL`, `.Value`.
    Data(&'a HashMap<String, Value>),
    /// `*time.Time`.
    Time(Instant),
    /// `*time.Duration`, in nanoseconds.
    Duration(i64),
    /// A function value, which only gtmpl's own data could hold.
    Func,
}

/// Reads `v` as the Go value it stands for.
pub(super) fn go(v: &Value) -> Go<'_> {
    match v {
        Value::String(s) => Go::Str(s),
        Value::NoValue => Go::Str(""),
        Value::Nil => Go::Nil,
        Value::Bool(b) => Go::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Go::Int(i),
            (None, Some(u), _) => Go::Uint(u),
            (None, None, f) => Go::Float(f.unwrap_or(f64::NAN)),
        },
        Value::Map(m) => Go::Map(m),
        Value::Array(a) => Go::List(a),
        Value::Function(_) => Go::Func,
        Value::Object(o) => tagged(o),
    }
}

fn tagged(o: &HashMap<String, Value>) -> Go<'_> {
    let num = |k: &str| match o.get(k) {
        Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)),
        _ => None,
    };
    match o.get(KIND) {
        Some(Value::String(k)) => match k.as_str() {
            "float64" => Go::Float(f64::from_bits(num(BITS).unwrap_or(0) as u64)),
            "time" => Go::Time(Instant {
                secs: num(SECS).unwrap_or(0),
                nanos: num(NANOS).unwrap_or(0) as u32,
            }),
            "duration" => Go::Duration(num(NANOS).unwrap_or(0)),
            "sample" => Go::Sample(o),
            _ => Go::Data(o),
        },
        // Objects without a tag are gtmpl's own; treat them as maps.
        _ => Go::Map(o),
    }
}

fn object(kind: &str, fields: Vec<(&str, Value)>) -> Value {
    let mut o: HashMap<String, Value> =
        fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    o.insert(KIND.to_owned(), Value::String(kind.to_owned()));
    Value::Object(o)
}

/// A Go float64.
pub(super) fn float(f: f64) -> Value {
    object("float64", vec![(BITS, Value::from(f.to_bits()))])
}

/// A Go `*time.Time`.
pub(super) fn time(t: Instant) -> Value {
    object(
        "time",
        vec![(SECS, Value::from(t.secs)), (NANOS, Value::from(t.nanos))],
    )
}

/// A Go `*time.Duration` of `nanos` nanoseconds.
pub(super) fn duration(nanos: i64) -> Value {
    object("duration", vec![(NANOS, Value::from(nanos))])
}

/// A Go `map[string]string`.
pub(super) fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
            .collect(),
    )
}

/// A `*template.sample` of a query result.
pub(super) fn sample(labels: Value, value: f64) -> Value {
    object("sample", vec![("Labels", labels), ("Value", float(value))])
}

/// The alert template data.
pub(super) fn data(labels: Value, external_labels: Value, external_url: &str, v: f64) -> Value {
    object(
        "data",
        vec![
            ("Labels", labels),
            ("ExternalLabels", external_labels),
            ("ExternalURL", Value::String(external_url.to_owned())),
            ("Value", float(v)),
        ],
    )
}

/// The Go type name of `v`, as Go's error messages and `%!v(...)` spell it.
pub(super) fn type_name(v: &Value) -> &'static str {
    match go(v) {
        Go::Str(_) => "string",
        Go::Int(_) => "int",
        Go::Uint(_) => "uint64",
        Go::Float(_) => "float64",
        Go::Bool(_) => "bool",
        Go::Nil => "<nil>",
        Go::Map(m) if m.values().all(|v| matches!(go(v), Go::Str(_))) => "map[string]string",
        Go::Map(_) => "map[string]interface {}",
        Go::List(l) if l.iter().all(|v| matches!(go(v), Go::Sample(_))) => "template.queryResult",
        Go::List(_) => "[]interface {}",
        Go::Sample(_) => "*template.sample",
        Go::Data(_) => {
            "struct { Labels map[string]string; ExternalLabels map[string]string; \
             ExternalURL string; Value interface {} }"
        }
        Go::Time(_) => "*time.Time",
        Go::Duration(_) => "*time.Duration",
        Go::Func => "func",
    }
}

/// The type name of what a pointer `v` points to, as Go names it once it
/// has followed the pointer.
pub(super) fn elem_type_name(v: &Value) -> &'static str {
    let t = type_name(v);
    t.strip_prefix('*').unwrap_or(t)
}

/// Go's truth of a value, as `if`, `with`, `and`, `or` and `not` see it.
pub(super) fn truth(v: &Value) -> bool {
    match go(v) {
        Go::Str(s) => !s.is_empty(),
        Go::Int(i) => i != 0,
        Go::Uint(u) => u != 0,
        Go::Float(f) => f != 0.0,
        Go::Bool(b) => b,
        Go::Nil => false,
        Go::Map(m) => !m.is_empty(),
        Go::List(l) => !l.is_empty(),
        Go::Sample(_) | Go::Data(_) | Go::Time(_) | Go::Duration(_) | Go::Func => true,
    }
}

/// Whether `v` is a Go string, for `print`'s spacing.
pub(super) fn is_string(v: &Value) -> bool {
    matches!(go(v), Go::Str(_))
}

/// `v` printed as Go's `%v` prints it.
pub(super) fn sprint(v: &Value) -> String {
    let mut out = String::new();
    write_v(v, &mut out);
    out
}

/// Appends `v` as Go's `%v` prints it.
pub(super) fn write_v(v: &Value, out: &mut String) {
    match go(v) {
        Go::Str(s) => out.push_str(s),
        Go::Int(i) => out.push_str(&i.to_string()),
        Go::Uint(u) => out.push_str(&u.to_string()),
        Go::Float(f) => out.push_str(&gofmt::format_float(f, 'g', None)),
        Go::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Go::Nil => out.push_str("<nil>"),
        Go::Map(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                if let Some(v) = m.get(k) {
                    write_v(v, out);
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
                write_v(v, out);
            }
            out.push(']');
        }
        Go::Sample(o) => write_struct(o, &SAMPLE_FIELDS, out),
        Go::Data(o) => write_struct(o, &DATA_FIELDS, out),
        Go::Time(t) => out.push_str(&clock::time_string(t)),
        Go::Duration(d) => out.push_str(&clock::duration_string(d)),
        Go::Func => out.push_str("<func>"),
    }
}

fn write_struct(o: &HashMap<String, Value>, fields: &[&str], out: &mut String) {
    out.push('{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if let Some(v) = o.get(*f) {
            write_v(v, out);
        }
    }
    out.push('}');
}
