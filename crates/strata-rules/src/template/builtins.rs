//! Go's builtin template functions with Go's semantics (gtmpl's `eq` wants
//! all arguments equal, its `and` and `or` use its own truth, its `index`
//! and `len` know no Go types, and it has no `html`, `js` or `slice`), and
//! the helpers every function checks its arguments with.

use gtmpl_value::{FuncError, Value};

use super::gofmt;
use super::text;
use super::value::{self, Go};

pub(super) type Res = Result<Value, FuncError>;

pub(super) fn fail(msg: impl Into<String>) -> FuncError {
    FuncError::Generic(msg.into())
}

/// An error a function returned, as Go's exec reports it.
pub(super) fn calling(name: &str, msg: impl std::fmt::Display) -> FuncError {
    fail(format!("error calling {name}: {msg}"))
}

pub(super) fn arity(name: &str, args: &[Value], want: usize) -> Result<(), FuncError> {
    if args.len() == want {
        return Ok(());
    }
    Err(fail(format!(
        "wrong number of args for {name}: want {want} got {}",
        args.len()
    )))
}

pub(super) fn at_least(name: &str, args: &[Value], want: usize) -> Result<(), FuncError> {
    if args.len() >= want {
        return Ok(());
    }
    Err(fail(format!(
        "wrong number of args for {name}: want at least {want} got {}",
        args.len()
    )))
}

pub(super) fn wrong_type(expected: &str, got: &Value) -> FuncError {
    fail(format!(
        "wrong type for value; expected {expected}; got {}",
        value::type_name(got)
    ))
}

/// Argument `i` as a Go string.
pub(super) fn str_arg(args: &[Value], i: usize) -> Result<&str, FuncError> {
    let v = args.get(i).unwrap_or(&Value::NoValue);
    match value::go(v) {
        Go::Str(s) => Ok(s),
        _ => Err(wrong_type("string", v)),
    }
}

pub(super) fn arg(args: &[Value], i: usize) -> &Value {
    args.get(i).unwrap_or(&Value::NoValue)
}

/// The functions of this module, by template name.
pub(super) const FUNCS: &[(&str, gtmpl_value::Func)] = &[
    ("and", and),
    ("or", or),
    ("not", not),
    ("len", len),
    ("index", index),
    ("slice", slice),
    ("print", print),
    ("println", println),
    ("printf", printf),
    ("html", html),
    ("js", js),
    ("urlquery", urlquery),
    ("call", call),
    ("eq", eq),
    ("ne", ne),
    ("lt", lt),
    ("le", le),
    ("gt", gt),
    ("ge", ge),
];

fn and(args: &[Value]) -> Res {
    at_least("and", args, 1)?;
    let v = args.iter().find(|a| !value::truth(a)).or(args.last());
    Ok(v.cloned().unwrap_or(Value::NoValue))
}

fn or(args: &[Value]) -> Res {
    at_least("or", args, 1)?;
    let v = args.iter().find(|a| value::truth(a)).or(args.last());
    Ok(v.cloned().unwrap_or(Value::NoValue))
}

fn not(args: &[Value]) -> Res {
    arity("not", args, 1)?;
    Ok(Value::Bool(!value::truth(arg(args, 0))))
}

fn len(args: &[Value]) -> Res {
    arity("len", args, 1)?;
    let v = arg(args, 0);
    let n = match value::go(v) {
        Go::Str(s) => s.len(),
        Go::List(l) => l.len(),
        Go::Map(m) => m.len(),
        _ => {
            return Err(calling(
                "len",
                format!("len of type {}", value::elem_type_name(v)),
            ))
        }
    };
    Ok(Value::from(n))
}

/// An integer index, as Go's `indexArg` takes it.
fn int_index(name: &str, v: &Value, cap: usize) -> Result<usize, FuncError> {
    let x = match value::go(v) {
        Go::Int(i) => i128::from(i),
        Go::Uint(u) => i128::from(u),
        Go::Nil => return Err(calling(name, "cannot index slice/array with nil")),
        _ => {
            return Err(calling(
                name,
                format!("cannot index slice/array with type {}", value::type_name(v)),
            ))
        }
    };
    usize::try_from(x)
        .ok()
        .filter(|&i| i <= cap)
        .ok_or_else(|| calling(name, format!("index out of range: {x}")))
}

fn index(args: &[Value]) -> Res {
    at_least("index", args, 1)?;
    let mut item = arg(args, 0).clone();
    for key in args.iter().skip(1) {
        item = match value::go(&item) {
            Go::List(l) => {
                let i = int_index("index", key, l.len())?;
                l.get(i)
                    .cloned()
                    .ok_or_else(|| calling("index", format!("index out of range: {i}")))?
            }
            Go::Str(s) => {
                let i = int_index("index", key, s.len())?;
                let b = s
                    .as_bytes()
                    .get(i)
                    .ok_or_else(|| calling("index", format!("index out of range: {i}")))?;
                Value::from(*b)
            }
            Go::Map(m) => match value::go(key) {
                Go::Str(k) => m.get(k).cloned().unwrap_or(Value::NoValue),
                _ => {
                    return Err(calling(
                        "index",
                        format!("value has type {}; should be string", value::type_name(key)),
                    ))
                }
            },
            Go::Nil => return Err(calling("index", "index of untyped nil")),
            _ => {
                return Err(calling(
                    "index",
                    format!("can't index item of type {}", value::elem_type_name(&item)),
                ))
            }
        };
    }
    Ok(item)
}

fn slice(args: &[Value]) -> Res {
    at_least("slice", args, 1)?;
    let item = arg(args, 0);
    let idx = args.get(1..).unwrap_or(&[]);
    let (len, is_str) = match value::go(item) {
        Go::Str(s) => (s.len(), true),
        Go::List(l) => (l.len(), false),
        _ => {
            return Err(calling(
                "slice",
                format!("can't slice item of type {}", value::type_name(item)),
            ))
        }
    };
    if idx.len() > 3 || (is_str && idx.len() > 2) {
        return Err(calling(
            "slice",
            if is_str {
                "cannot 3-index slice a string".to_owned()
            } else {
                format!("too many slice indexes: {}", idx.len())
            },
        ));
    }
    let mut bounds = [0, len];
    for (i, v) in idx.iter().take(2).enumerate() {
        if let Some(b) = bounds.get_mut(i) {
            *b = int_index("slice", v, len)?;
        }
    }
    let [lo, hi] = bounds;
    if lo > hi {
        return Err(calling(
            "slice",
            format!("invalid slice index: {lo} > {hi}"),
        ));
    }
    Ok(match value::go(item) {
        Go::Str(s) => Value::String(
            String::from_utf8_lossy(s.as_bytes().get(lo..hi).unwrap_or(&[])).into_owned(),
        ),
        Go::List(l) => Value::Array(l.get(lo..hi).unwrap_or(&[]).to_vec()),
        _ => Value::NoValue,
    })
}

fn print(args: &[Value]) -> Res {
    Ok(Value::String(gofmt::sprint(args)))
}

fn println(args: &[Value]) -> Res {
    Ok(Value::String(gofmt::sprintln(args)))
}

fn printf(args: &[Value]) -> Res {
    at_least("printf", args, 1)?;
    let format = str_arg(args, 0)?;
    Ok(Value::String(gofmt::sprintf(
        format,
        args.get(1..).unwrap_or(&[]),
    )))
}

/// Go's `evalArgs`: the one string argument, or all printed as `Sprint`
/// prints them once made printable (nil as "<no value>", pointers
/// followed).
fn eval_args(args: &[Value]) -> String {
    match args {
        [Value::String(s)] => s.clone(),
        _ => gofmt::sprint_printable(args),
    }
}

fn html(args: &[Value]) -> Res {
    Ok(Value::String(text::html_escape(&eval_args(args))))
}

fn js(args: &[Value]) -> Res {
    Ok(Value::String(text::js_escape(&eval_args(args))))
}

fn urlquery(args: &[Value]) -> Res {
    Ok(Value::String(text::query_escape(&eval_args(args))))
}

fn call(args: &[Value]) -> Res {
    at_least("call", args, 1)?;
    let f = arg(args, 0);
    match f {
        Value::Function(func) => (func.f)(args.get(1..).unwrap_or(&[])),
        _ => Err(calling(
            "call",
            format!(
                "non-function {} of type {}",
                value::sprint(f),
                value::type_name(f)
            ),
        )),
    }
}

/// Go's comparable basic kinds.
#[derive(PartialEq)]
enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
}

fn basic(v: &Value) -> Option<Basic<'_>> {
    Some(match value::go(v) {
        Go::Bool(b) => Basic::Bool(b),
        Go::Int(i) => Basic::Int(i),
        Go::Uint(u) => Basic::Uint(u),
        Go::Float(f) => Basic::Float(f),
        Go::Str(s) => Basic::Str(s),
        _ => return None,
    })
}

fn incompatible(a: &Value, b: &Value) -> FuncError {
    fail(format!(
        "incompatible types for comparison: {} and {}",
        value::type_name(a),
        value::type_name(b)
    ))
}

/// Go's `eq` of two values; `name` is the function reporting errors.
fn equal(name: &str, a: &Value, b: &Value) -> Result<bool, FuncError> {
    match (basic(a), basic(b)) {
        (Some(Basic::Int(x)), Some(Basic::Uint(y)))
        | (Some(Basic::Uint(y)), Some(Basic::Int(x))) => Ok(u64::try_from(x).is_ok_and(|x| x == y)),
        (Some(x), Some(y)) if std::mem::discriminant(&x) == std::mem::discriminant(&y) => {
            Ok(x == y)
        }
        (Some(_), Some(_)) => Err(calling(name, incompatible(a, b))),
        (Some(_), None) | (None, Some(_))
            if !matches!(value::go(a), Go::Nil) && !matches!(value::go(b), Go::Nil) =>
        {
            Err(calling(name, incompatible(a, b)))
        }
        _ => match (value::go(a), value::go(b)) {
            (Go::Nil, Go::Nil) => Ok(true),
            (Go::Nil, _) | (_, Go::Nil) => Ok(false),
            (Go::Map(_), Go::Map(_)) | (Go::List(_), Go::List(_)) => Err(calling(
                name,
                format!(
                    "non-comparable type {}: {}",
                    value::sprint(a),
                    value::type_name(a)
                ),
            )),
            // Pointers: equal only when the same, which two values never are.
            (Go::Time(_), Go::Time(_))
            | (Go::Duration(_), Go::Duration(_))
            | (Go::Sample(_), Go::Sample(_)) => Ok(false),
            _ => Err(calling(
                name,
                format!(
                    "non-comparable types {}: {}, {}: {}",
                    value::sprint(a),
                    value::type_name(a),
                    value::type_name(b),
                    value::sprint(b)
                ),
            )),
        },
    }
}

/// Go's `lt`; `name` is the function reporting errors.
fn less(name: &str, a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (Some(x), Some(y)) = (basic(a), basic(b)) else {
        return Err(calling(name, "invalid type for comparison"));
    };
    match (x, y) {
        (Basic::Int(x), Basic::Uint(y)) => Ok(x < 0 || (x as u64) < y),
        (Basic::Uint(x), Basic::Int(y)) => Ok(y >= 0 && x < y as u64),
        (Basic::Int(x), Basic::Int(y)) => Ok(x < y),
        (Basic::Uint(x), Basic::Uint(y)) => Ok(x < y),
        (Basic::Float(x), Basic::Float(y)) => Ok(x < y),
        (Basic::Str(x), Basic::Str(y)) => Ok(x < y),
        (Basic::Bool(_), Basic::Bool(_)) => Err(calling(name, "invalid type for comparison")),
        _ => Err(calling(name, incompatible(a, b))),
    }
}

fn eq(args: &[Value]) -> Res {
    at_least("eq", args, 1)?;
    let first = arg(args, 0);
    if args.len() < 2 {
        return Err(calling("eq", "missing argument for comparison"));
    }
    for other in args.iter().skip(1) {
        if equal("eq", first, other)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn ne(args: &[Value]) -> Res {
    arity("ne", args, 2)?;
    Ok(Value::Bool(!equal("ne", arg(args, 0), arg(args, 1))?))
}

fn lt(args: &[Value]) -> Res {
    arity("lt", args, 2)?;
    Ok(Value::Bool(less("lt", arg(args, 0), arg(args, 1))?))
}

fn le(args: &[Value]) -> Res {
    arity("le", args, 2)?;
    let (a, b) = (arg(args, 0), arg(args, 1));
    Ok(Value::Bool(less("le", a, b)? || equal("le", a, b)?))
}

fn gt(args: &[Value]) -> Res {
    arity("gt", args, 2)?;
    let (a, b) = (arg(args, 0), arg(args, 1));
    Ok(Value::Bool(!(less("gt", a, b)? || equal("gt", a, b)?)))
}

fn ge(args: &[Value]) -> Res {
    arity("ge", args, 2)?;
    Ok(Value::Bool(!less("ge", arg(args, 0), arg(args, 1))?))
}
