//! The functions Prometheus adds to Go's (`template/template.go` in
//! Prometheus 3.x), and what they read of the expansion under way.
//!
//! gtmpl functions are plain `fn` pointers, so the expansion's time,
//! external URL and query results reach them through a thread-local set
//! for the expansion. `query` cannot call back into the caller's querier
//! from there; instead it answers from results already fetched, and when a
//! query's result is missing it stops the run and names the query: the
//! expansion fetches it and runs the template again (templates have no
//! side effects, so only the last run's output counts).

use std::cell::RefCell;
use std::collections::HashMap;

use gtmpl_value::{FuncError, Value};
use regex::Regex;

use super::builtins::{arity, calling, fail, str_arg, wrong_type, Res};
use super::clock;
use super::gofmt::format_float;
use super::text;
use super::value::{self, Go};
use super::QueryResultSample;

/// What the functions of one expansion read.
pub(super) struct Expansion {
    pub now_ms: i64,
    pub external_url: String,
    /// Query results fetched so far, by query text.
    pub results: HashMap<String, Result<Vec<QueryResultSample>, String>>,
    /// The query the last run stopped at, to fetch before the next run.
    pub pending: Option<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Expansion>> = const { RefCell::new(None) };
}

/// The error `query` stops a run with when it needs a result fetched.
pub(super) const NEEDS_QUERY: &str = "\u{0}needs query";

/// Runs `f` with `e` as the current expansion. An expansion already
/// current (a querier that expands templates itself) is put back after,
/// even if `f` panics.
pub(super) fn with_expansion<T>(e: Expansion, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Expansion>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = outer);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(e))));
    f()
}

/// The query the last run stopped at, taken.
pub(super) fn take_pending() -> Option<String> {
    current(|e| e.pending.take()).flatten()
}

/// Records a fetched query result for the runs that follow.
pub(super) fn record(q: String, result: Result<Vec<QueryResultSample>, String>) {
    current(|e| e.results.insert(q, result));
}

fn current<T>(f: impl FnOnce(&mut Expansion) -> T) -> Option<T> {
    CURRENT.with(|c| c.borrow_mut().as_mut().map(f))
}

/// The functions of this module, by template name.
pub(super) const FUNCS: &[(&str, gtmpl_value::Func)] = &[
    ("query", query),
    ("first", first),
    ("label", label),
    ("value", sample_value),
    ("strvalue", strvalue),
    ("args", args),
    ("reReplaceAll", re_replace_all),
    ("safeHtml", safe_html),
    ("match", match_re),
    ("title", title),
    ("toUpper", to_upper),
    ("toLower", to_lower),
    ("graphLink", graph_link),
    ("tableLink", table_link),
    ("sortByLabel", sort_by_label),
    ("stripPort", strip_port),
    ("stripDomain", strip_domain),
    ("humanize", humanize),
    ("humanize1024", humanize1024),
    ("humanizeDuration", humanize_duration),
    ("humanizePercentage", humanize_percentage),
    ("humanizeTimestamp", humanize_timestamp),
    ("toTime", to_time),
    ("toDuration", to_duration),
    ("now", now),
    ("pathPrefix", path_prefix),
    ("externalURL", external_url),
    ("parseDuration", parse_duration),
    ("urlQueryEscape", url_query_escape),
];

fn query(args: &[Value]) -> Res {
    arity("query", args, 1)?;
    let q = str_arg(args, 0)?;
    let found = current(|e| match e.results.get(q) {
        Some(r) => Some(r.clone()),
        None => {
            e.pending = Some(q.to_owned());
            None
        }
    })
    .flatten();
    match found {
        None => Err(fail(NEEDS_QUERY)),
        Some(Err(msg)) => Err(calling("query", msg)),
        Some(Ok(samples)) => Ok(Value::Array(
            samples
                .iter()
                .map(|s| {
                    let labels =
                        value::string_map(s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                    value::sample(labels, s.value)
                })
                .collect(),
        )),
    }
}

/// A `*template.sample` argument's fields.
fn sample_arg<'a>(
    name: &str,
    args: &'a [Value],
    i: usize,
) -> Result<&'a HashMap<String, Value>, FuncError> {
    let v = args.get(i).unwrap_or(&Value::Nil);
    match value::go(v) {
        Go::Sample(o) => Ok(o),
        Go::Nil => Err(fail(format!("error calling {name}: nil sample"))),
        _ => Err(wrong_type("*template.sample", v)),
    }
}

fn sample_label(o: &HashMap<String, Value>, name: &str) -> String {
    match o.get("Labels") {
        Some(Value::Map(m)) => match m.get(name) {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

fn query_result(args: &[Value], i: usize) -> Result<&[Value], FuncError> {
    let v = args.get(i).unwrap_or(&Value::Nil);
    match value::go(v) {
        Go::List(l) => Ok(l),
        _ => Err(wrong_type("template.queryResult", v)),
    }
}

fn first(args: &[Value]) -> Res {
    arity("first", args, 1)?;
    query_result(args, 0)?
        .first()
        .cloned()
        .ok_or_else(|| calling("first", "first() called on vector with no elements"))
}

fn label(args: &[Value]) -> Res {
    arity("label", args, 2)?;
    let name = str_arg(args, 0)?;
    Ok(Value::String(sample_label(
        sample_arg("label", args, 1)?,
        name,
    )))
}

fn sample_value(args: &[Value]) -> Res {
    arity("value", args, 1)?;
    let o = sample_arg("value", args, 0)?;
    Ok(o.get("Value").cloned().unwrap_or(Value::NoValue))
}

fn strvalue(args: &[Value]) -> Res {
    arity("strvalue", args, 1)?;
    Ok(Value::String(sample_label(
        sample_arg("strvalue", args, 0)?,
        "__value__",
    )))
}

fn args(args: &[Value]) -> Res {
    Ok(Value::Map(
        args.iter()
            .enumerate()
            .map(|(i, a)| (format!("arg{i}"), a.clone()))
            .collect(),
    ))
}

fn re_replace_all(args: &[Value]) -> Res {
    arity("reReplaceAll", args, 3)?;
    let (pattern, repl, text) = (str_arg(args, 0)?, str_arg(args, 1)?, str_arg(args, 2)?);
    // Go's MustCompile panics; the template's call reports the panic.
    let re = compile_regex(pattern).map_err(|e| {
        calling(
            "reReplaceAll",
            format!("regexp: Compile({}): {e}", text::go_backquote(pattern)),
        )
    })?;
    Ok(Value::String(re.replace_all(text, repl).into_owned()))
}

/// A regular expression, or Go's `regexp` error text for it: "error
/// parsing regexp: <what>: `<pattern>`", with Go's wording for the common
/// mistakes and the regex crate's otherwise.
fn compile_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        let detail = e.to_string();
        let last = detail.lines().last().unwrap_or("").trim();
        let what = last.strip_prefix("error: ").unwrap_or(last);
        let what = match what {
            "unclosed group" => "missing closing )",
            "unopened group" => "unexpected )",
            "unclosed character class" => "missing closing ]",
            "repetition operator missing expression" => "missing argument to repetition operator",
            "incomplete escape sequence, reached end of pattern prematurely" => {
                "trailing backslash at end of expression"
            }
            w => w,
        };
        format!("error parsing regexp: {what}: `{pattern}`")
    })
}

fn safe_html(args: &[Value]) -> Res {
    arity("safeHtml", args, 1)?;
    Ok(Value::String(str_arg(args, 0)?.to_owned()))
}

fn match_re(args: &[Value]) -> Res {
    arity("match", args, 2)?;
    let re = compile_regex(str_arg(args, 0)?).map_err(|e| calling("match", e))?;
    Ok(Value::Bool(re.is_match(str_arg(args, 1)?)))
}

fn string_fn(name: &str, args: &[Value], f: impl Fn(&str) -> String) -> Res {
    arity(name, args, 1)?;
    Ok(Value::String(f(str_arg(args, 0)?)))
}

fn title(args: &[Value]) -> Res {
    string_fn("title", args, text::title)
}

fn to_upper(args: &[Value]) -> Res {
    string_fn("toUpper", args, text::to_upper)
}

fn to_lower(args: &[Value]) -> Res {
    string_fn("toLower", args, text::to_lower)
}

fn graph_link(args: &[Value]) -> Res {
    string_fn("graphLink", args, |e| {
        format!("/graph?g0.expr={}&g0.tab=0", text::query_escape(e))
    })
}

fn table_link(args: &[Value]) -> Res {
    string_fn("tableLink", args, |e| {
        format!("/graph?g0.expr={}&g0.tab=1", text::query_escape(e))
    })
}

fn strip_port(args: &[Value]) -> Res {
    string_fn("stripPort", args, text::strip_port)
}

fn strip_domain(args: &[Value]) -> Res {
    string_fn("stripDomain", args, text::strip_domain)
}

fn url_query_escape(args: &[Value]) -> Res {
    string_fn("urlQueryEscape", args, text::query_escape)
}

fn sort_by_label(args: &[Value]) -> Res {
    arity("sortByLabel", args, 2)?;
    let name = str_arg(args, 0)?;
    let mut v = query_result(args, 1)?.to_vec();
    let key = |s: &Value| match value::go(s) {
        Go::Sample(o) => sample_label(o, name),
        _ => String::new(),
    };
    v.sort_by_cached_key(key);
    Ok(Value::Array(v))
}

/// Go's `strconv.ParseFloat(s, 64)`, with its error text.
fn parse_float(s: &str) -> Result<f64, String> {
    let err = |why: &str| format!("strconv.ParseFloat: parsing {}: {why}", text::go_quote(s));
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let named = matches!(unsigned, "inf" | "infinity" | "nan");
    match s.parse::<f64>() {
        Ok(f) if f.is_infinite() && !named => Err(err("value out of range")),
        Ok(f) => Ok(f),
        Err(_) => Err(err("invalid syntax")),
    }
}

/// Prometheus' `ConvertToFloat`: a float64, a numeric string, or an integer.
fn to_float(name: &str, args: &[Value]) -> Result<f64, FuncError> {
    arity(name, args, 1)?;
    let v = args.first().unwrap_or(&Value::NoValue);
    match value::go(v) {
        Go::Float(f) => Ok(f),
        Go::Int(i) => Ok(i as f64),
        Go::Uint(u) => Ok(u as f64),
        Go::Str(s) => parse_float(s).map_err(|e| calling(name, e)),
        _ => Err(calling(
            name,
            format!("can't convert {} to float", value::type_name(v)),
        )),
    }
}

fn g4(v: f64) -> String {
    format_float(v, 'g', Some(4))
}

fn humanize(args: &[Value]) -> Res {
    let mut v = to_float("humanize", args)?;
    if v == 0.0 || v.is_nan() || v.is_infinite() {
        return Ok(Value::String(g4(v)));
    }
    let mut prefix = "";
    if v.abs() >= 1.0 {
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
            if v.abs() < 1000.0 {
                break;
            }
            prefix = p;
            v /= 1000.0;
        }
    } else {
        for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
            if v.abs() >= 1.0 {
                break;
            }
            prefix = p;
            v *= 1000.0;
        }
    }
    Ok(Value::String(format!("{}{prefix}", g4(v))))
}

fn humanize1024(args: &[Value]) -> Res {
    let mut v = to_float("humanize1024", args)?;
    if v.abs() <= 1.0 || v.is_nan() || v.is_infinite() {
        return Ok(Value::String(g4(v)));
    }
    let mut prefix = "";
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] {
        if v.abs() < 1024.0 {
            break;
        }
        prefix = p;
        v /= 1024.0;
    }
    Ok(Value::String(format!("{}{prefix}", g4(v))))
}

fn humanize_duration(args: &[Value]) -> Res {
    let v = to_float("humanizeDuration", args)?;
    Ok(Value::String(clock::humanize_duration(v)))
}

fn humanize_percentage(args: &[Value]) -> Res {
    let v = to_float("humanizePercentage", args)?;
    Ok(Value::String(format!("{}%", g4(v * 100.0))))
}

fn humanize_timestamp(args: &[Value]) -> Res {
    let v = to_float("humanizeTimestamp", args)?;
    if v.is_nan() || v.is_infinite() {
        return Ok(Value::String(g4(v)));
    }
    let t = clock::float_to_time(v).map_err(|e| calling("humanizeTimestamp", e))?;
    Ok(Value::String(clock::time_string(t)))
}

fn to_time(args: &[Value]) -> Res {
    let v = to_float("toTime", args)?;
    let t = clock::float_to_time(v).map_err(|e| calling("toTime", e))?;
    Ok(value::time(t))
}

fn to_duration(args: &[Value]) -> Res {
    let v = to_float("toDuration", args)?;
    Ok(value::duration(clock::go_int64(v * 1e9)))
}

fn now(args: &[Value]) -> Res {
    arity("now", args, 0)?;
    let ms = current(|e| e.now_ms).unwrap_or(0);
    Ok(value::float(ms as f64 / 1000.0))
}

/// The path of the external URL, as Go's `url.URL.Path` holds it.
fn url_path(url: &str) -> String {
    let after_scheme = match url.find("://") {
        Some(i) => url.get(i + 3..).unwrap_or(""),
        None => url,
    };
    let path = match after_scheme.find('/') {
        Some(i) => after_scheme.get(i..).unwrap_or(""),
        None => "",
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    path.get(..end).unwrap_or("").to_owned()
}

fn path_prefix(args: &[Value]) -> Res {
    arity("pathPrefix", args, 0)?;
    Ok(Value::String(
        current(|e| url_path(&e.external_url)).unwrap_or_default(),
    ))
}

fn external_url(args: &[Value]) -> Res {
    arity("externalURL", args, 0)?;
    Ok(Value::String(
        current(|e| e.external_url.clone()).unwrap_or_default(),
    ))
}

fn parse_duration(args: &[Value]) -> Res {
    arity("parseDuration", args, 1)?;
    let d = clock::parse_duration(str_arg(args, 0)?).map_err(|e| calling("parseDuration", e))?;
    Ok(value::float(d as f64 / 1e9))
}

/// How many arguments a function takes: at least the first, at most the
/// second when there is a most. Go checks this before it evaluates them.
pub(super) fn arg_count(name: &str) -> (usize, Option<usize>) {
    match name {
        "now" | "pathPrefix" | "externalURL" => (0, Some(0)),
        "label" | "match" | "sortByLabel" | "ne" | "lt" | "le" | "gt" | "ge" => (2, Some(2)),
        "reReplaceAll" => (3, Some(3)),
        "args" | "print" | "println" | "html" | "js" | "urlquery" => (0, None),
        "and" | "or" | "index" | "slice" | "printf" | "call" | "eq" => (1, None),
        _ => (1, Some(1)),
    }
}

/// Names that are functions in templates: Go's builtins and Prometheus'.
pub(super) fn is_func(name: &str) -> bool {
    super::builtins::FUNCS
        .iter()
        .chain(FUNCS)
        .any(|(n, _)| *n == name)
}
