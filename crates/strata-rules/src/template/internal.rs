//! The functions [`super::emit`] writes calls to, for what gtmpl does
//! not do as Go does: printing, truth, ranging, float literals, fields and
//! methods.

use std::collections::HashMap;

use gtmpl_value::{FuncError, Value};

use super::builtins::{arg, arity, fail, str_arg, wrong_type, Res};
use super::clock;
use super::value::{self, Go};

/// The functions of this module, by template name; templates cannot call
/// them, only what `emit` writes can.
pub(super) const FUNCS: &[(&str, gtmpl_value::Func)] = &[
    ("__print", print_value),
    ("__truth", truth),
    ("__with", with),
    ("__range", range),
    ("__float", float),
    ("__field", field),
    ("__method", method),
    ("__nil", nil),
    ("__fail", fail_with),
    ("__chop", chop),
];

/// A string without its last character.
fn chop(args: &[Value]) -> Res {
    let mut s = str_arg(args, 0)?.to_owned();
    s.pop();
    Ok(Value::String(s))
}

fn nil(_: &[Value]) -> Res {
    Ok(Value::Nil)
}

/// Fails with its argument: what Go only finds wrong when it runs.
fn fail_with(args: &[Value]) -> Res {
    Err(fail(str_arg(args, 0)?))
}

/// What an action prints: the value as Go's `%v`, a missing map entry as
/// Go's zero string.
fn print_value(args: &[Value]) -> Res {
    Ok(Value::String(match args.last() {
        Some(Value::Nil) => "<no value>".to_owned(),
        Some(v) => value::sprint(v),
        None => String::new(),
    }))
}

fn truth(args: &[Value]) -> Res {
    Ok(Value::Bool(args.last().is_some_and(value::truth)))
}

/// The value, when Go's `with` would take it; else false.
fn with(args: &[Value]) -> Res {
    Ok(match args.last() {
        Some(v) if value::truth(v) => v.clone(),
        _ => Value::Bool(false),
    })
}

/// A range's entries: `{k, v, d: [v]}` in Go's order, map keys sorted.
fn range(args: &[Value]) -> Res {
    let vars = match args.first().map(value::go) {
        Some(Go::Int(n)) => n,
        _ => 0,
    };
    let v = arg(args, 1);
    let entry = |k: Value, v: Value| {
        let mut o = HashMap::with_capacity(3);
        o.insert("d".to_owned(), Value::Array(vec![v.clone()]));
        o.insert("k".to_owned(), k);
        o.insert("v".to_owned(), v);
        Value::Object(o)
    };
    let entries = match value::go(v) {
        Go::List(l) => l
            .iter()
            .enumerate()
            .map(|(i, v)| entry(Value::from(i), v.clone()))
            .collect(),
        Go::Map(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter()
                .filter_map(|k| Some(entry(Value::String(k.clone()), m.get(k)?.clone())))
                .collect()
        }
        Go::Int(n) => {
            if vars > 1 {
                return Err(fail(format!(
                    "can't use {n} to iterate over more than one variable"
                )));
            }
            (0..n.max(0))
                .map(|i| entry(Value::from(i), Value::from(i)))
                .collect()
        }
        Go::Nil => Vec::new(),
        _ => {
            return Err(fail(format!(
                "range can't iterate over {}",
                value::sprint(v)
            )))
        }
    };
    Ok(Value::Array(entries))
}

fn float(args: &[Value]) -> Res {
    match args.first().map(value::go) {
        Some(Go::Uint(bits)) => Ok(value::float(f64::from_bits(bits))),
        Some(Go::Int(bits)) => Ok(value::float(f64::from_bits(bits as u64))),
        _ => Err(fail("internal error: bad float literal")),
    }
}

/// `recv.a.b…`: a struct's field, a map's entry (the zero string when
/// missing), or a method without arguments.
fn field(args: &[Value]) -> Res {
    let mut v = arg(args, 0).clone();
    for name in args.iter().skip(1) {
        let name = match name {
            Value::String(s) => s.as_str(),
            _ => return Err(fail("internal error: bad field name")),
        };
        v = lookup(&v, name, &[])?;
    }
    Ok(v)
}

/// `recv.Method args…`.
fn method(args: &[Value]) -> Res {
    let name = str_arg(args, 0)?;
    lookup(arg(args, 1), name, args.get(2..).unwrap_or(&[]))
}

fn no_field(name: &str, recv: &Value) -> FuncError {
    fail(format!(
        "can't evaluate field {name} in type {}",
        value::type_name(recv)
    ))
}

fn lookup(recv: &Value, name: &str, args: &[Value]) -> Res {
    match value::go(recv) {
        Go::Map(m) => {
            if !args.is_empty() {
                return Err(fail(format!("{name} is not a method but has arguments")));
            }
            Ok(m.get(name).cloned().unwrap_or(Value::NoValue))
        }
        Go::Sample(o) | Go::Data(o) => match o.get(name) {
            Some(v) if !name.starts_with('\0') => {
                if !args.is_empty() {
                    return Err(fail(format!(
                        "{name} has arguments but cannot be invoked as function"
                    )));
                }
                Ok(v.clone())
            }
            _ => Err(no_field(name, recv)),
        },
        Go::Time(t) => time_method(t, name, args, recv),
        Go::Duration(d) => duration_method(d, name, args, recv),
        Go::Nil => Err(fail(format!(
            "nil pointer evaluating interface {{}}.{name}"
        ))),
        _ => Err(no_field(name, recv)),
    }
}

fn time_method(t: clock::Instant, name: &str, args: &[Value], recv: &Value) -> Res {
    let want = match name {
        "Format" | "Add" | "Sub" | "After" | "Before" | "Equal" => 1,
        _ => 0,
    };
    arity(name, args, want)?;
    let [year, _, day, hour, minute, second, yday] = clock::fields(t);
    let nanos = t.nanos();
    let other_time = || match args.first().map(value::go) {
        Some(Go::Time(o)) => Ok(o),
        _ => Err(wrong_type("time.Time", arg(args, 0))),
    };
    Ok(match name {
        "Format" => Value::String(clock::format_layout(t, str_arg(args, 0)?)),
        "String" => Value::String(clock::time_string(t)),
        "Add" => {
            let d = match args.first().map(value::go) {
                Some(Go::Duration(d)) | Some(Go::Int(d)) => d,
                _ => return Err(wrong_type("time.Duration", arg(args, 0))),
            };
            value::time(clock::Instant::from_nanos(nanos + i128::from(d)))
        }
        "Sub" => {
            let d = nanos - other_time()?.nanos();
            value::duration(d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
        }
        "After" => Value::Bool(t > other_time()?),
        "Before" => Value::Bool(t < other_time()?),
        "Equal" => Value::Bool(t == other_time()?),
        "Unix" => Value::from(t.secs),
        "UnixMilli" => Value::from(nanos.div_euclid(1_000_000) as i64),
        "UnixMicro" => Value::from(nanos.div_euclid(1_000) as i64),
        "UnixNano" => Value::from(nanos as i64),
        "Year" => Value::from(year),
        "Month" => Value::String(clock::month_name(t).to_owned()),
        "Day" => Value::from(day),
        "Hour" => Value::from(hour),
        "Minute" => Value::from(minute),
        "Second" => Value::from(second),
        "Nanosecond" => Value::from(t.nanos),
        "YearDay" => Value::from(yday),
        "Weekday" => Value::String(clock::weekday_name(t).to_owned()),
        // Times here are in UTC, as toTime makes them.
        "UTC" => recv.clone(),
        "IsZero" => Value::Bool(t.secs == -62_135_596_800 && t.nanos == 0),
        _ => return Err(no_field(name, recv)),
    })
}

fn duration_method(d: i64, name: &str, args: &[Value], recv: &Value) -> Res {
    arity(name, args, 0)?;
    let f = d as f64;
    Ok(match name {
        "String" => Value::String(clock::duration_string(d)),
        "Hours" => value::float(f / 3.6e12),
        "Minutes" => value::float(f / 6e10),
        "Seconds" => value::float(f / 1e9),
        "Milliseconds" => Value::from(d / 1_000_000),
        "Microseconds" => Value::from(d / 1_000),
        "Nanoseconds" => Value::from(d),
        "Abs" => value::duration(d.saturating_abs()),
        _ => return Err(no_field(name, recv)),
    })
}
