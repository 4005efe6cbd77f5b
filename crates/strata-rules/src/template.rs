//! Alerting rules' label and annotation templates, expanded as Prometheus
//! expands them (`template/template.go`, `rules/alerting.go`): Go's
//! `text/template` language with Prometheus' functions, so that a rule file
//! written for Prometheus works unchanged.
//!
//! ```text
//!  text ─▶ lex ─▶ parse (Go's grammar and errors) ─▶ emit ─▶ gtmpl ─▶ output
//!                                                              │
//!                     builtins, internal, prom (functions) ◀───┘
//! ```
//!
//! gtmpl runs the template, but its Go is partial: `emit` rewrites the
//! parsed template into the part of the language gtmpl runs as Go does,
//! and the functions here replace gtmpl's (`emit` lists each difference).
//!
//! The same as Prometheus (`tests/template.rs` holds the cases, each
//! checked against Prometheus itself): every function of Prometheus'
//! `template.go` (`query`, `first`, `label`, `value`, `strvalue`, `args`,
//! `reReplaceAll`, `safeHtml`, `match`, `title`, `toUpper`, `toLower`,
//! `graphLink`, `tableLink`, `sortByLabel`, `stripPort`, `stripDomain`,
//! `humanize`, `humanize1024`, `humanizeDuration`, `humanizePercentage`,
//! `humanizeTimestamp`, `toTime`, `toDuration`, `now`, `pathPrefix`,
//! `externalURL`, `parseDuration`, `urlQueryEscape`); Go's builtins (`and`,
//! `or`, `not`, `len`, `index`, `slice`, `print`, `printf`, `println`,
//! `html`, `js`, `urlquery`, `call`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`);
//! Go's printing of values (`{{ $value }}` of 1e21 is `1e+21`,
//! `{{ $labels }}` is `map[a:b]`); `printf`'s verbs, flags, widths,
//! precisions and argument indexes; variables, their scopes and `=`;
//! `if`/`else if`, `with`/`else with`, `range` (maps in key order, `else`,
//! over an int); `define`, `template`, `block`; comments and trim markers;
//! methods of `toTime`'s and `toDuration`'s results (`Format`, `Add`,
//! `Sub`, `Unix`, `UnixMilli`, `String`, …); parse errors, with Go's text
//! and line.
//!
//! Refused with an error that names them, as gtmpl cannot run them:
//! `{{break}}` and `{{continue}}`; assigning with `=`, inside a `range`,
//! to a variable declared outside it; complex and hexadecimal float
//! literals.
//!
//! Different: execution errors lack Go's line, column and node; a missing
//! key of an `args` map prints as "" where Go prints `<no value>`; a query
//! result printed whole shows its samples where Go shows their addresses;
//! `%x` of a float is not Go's hexadecimal float; `and` and `or` evaluate
//! all their arguments where Go stops at the first that decides.

mod builtins;
mod clock;
mod emit;
mod gofmt;
mod internal;
mod lex;
mod literal;
mod parse;
mod prom;
mod text;
mod value;

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// The variables Prometheus' alerting rule declares ahead of every label
/// and annotation template.
pub const PREAMBLE: &str = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}\
{{$externalURL := .ExternalURL}}{{$value := .Value}}";

/// How many distinct queries one expansion may run.
const MAX_QUERIES: usize = 64;

/// How many parsed templates are kept; past that the cache starts over.
/// A rule file's templates are a fixed set, far below this.
const MAX_PARSED: usize = 4096;

/// Parsed templates by name and text: gtmpl's parser starts a thread per
/// template and costs far more than running one.
type Parsed = Mutex<HashMap<(String, String), Arc<gtmpl::Template>>>;
static PARSED: OnceLock<Parsed> = OnceLock::new();

/// What a template reads as `.` (Prometheus' `AlertTemplateData`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TemplateData {
    /// `.Labels`, `$labels`: the alert's labels.
    pub labels: BTreeMap<String, String>,
    /// `.ExternalLabels`, `$externalLabels`.
    pub external_labels: BTreeMap<String, String>,
    /// `.ExternalURL`, `$externalURL`; also what `externalURL` and
    /// `pathPrefix` read.
    pub external_url: String,
    /// `.Value`, `$value`: the alert's sample value.
    pub value: f64,
}

/// One sample of the vector a template's `query` returns.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResultSample {
    /// The series' labels, `__name__` among them.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// Runs the PromQL queries of the `query` template function. Templates
/// expand inside a rule's evaluation, so this blocks until it has the
/// result.
pub trait QueryFn {
    /// The instant vector (a scalar as one sample without labels) of `q`
    /// at `at_ms`, or the error text.
    fn query(&self, q: &str, at_ms: i64) -> Result<Vec<QueryResultSample>, String>;
}

impl<F> QueryFn for F
where
    F: Fn(&str, i64) -> Result<Vec<QueryResultSample>, String>,
{
    fn query(&self, q: &str, at_ms: i64) -> Result<Vec<QueryResultSample>, String> {
        self(q, at_ms)
    }
}

/// Why a template did not expand; the text is Prometheus'.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error("error parsing template {name}: {msg}")]
    Parse { name: String, msg: String },
    #[error("error executing template {name}: {msg}")]
    Execute { name: String, msg: String },
    /// gtmpl panicked; Prometheus recovers from panics the same way.
    #[error("panic expanding template {name}: {msg}")]
    Panic { name: String, msg: String },
}

/// What Prometheus' alerting rule puts in a label or annotation whose
/// template failed.
pub fn error_value(err: &TemplateError) -> String {
    format!("<error expanding template: {err}>")
}

/// Expands a label or annotation template of an alert as Prometheus'
/// alerting rule does: [`PREAMBLE`] ahead of `text`, `data` as `.`,
/// `now_ms` as the time of `now` and of `query`'s queries. `name` is the
/// template's name in errors (Prometheus uses `__alert_<alertname>`).
pub fn expand(
    name: &str,
    text: &str,
    data: &TemplateData,
    now_ms: i64,
    query: &dyn QueryFn,
) -> Result<String, TemplateError> {
    let panicked = |p: Box<dyn std::any::Any + Send>| TemplateError::Panic {
        name: name.into(),
        msg: panic_message(p),
    };
    // A bug in gtmpl must cost an annotation, not the evaluation.
    let tmpl = catch_unwind(AssertUnwindSafe(|| parsed(name, text)))
        .map_err(panicked)?
        .map_err(|msg| TemplateError::Parse {
            name: name.into(),
            msg,
        })?;
    let map = |m: &BTreeMap<String, String>| {
        value::string_map(m.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    };
    let dot = value::data(
        map(&data.labels),
        map(&data.external_labels),
        &data.external_url,
        data.value,
    );
    let ctx = gtmpl::Context::from(dot);
    let expansion = prom::Expansion {
        now_ms,
        external_url: data.external_url.clone(),
        results: HashMap::new(),
        pending: None,
    };
    prom::with_expansion(expansion, || {
        for _ in 0..=MAX_QUERIES {
            let run = || tmpl.render(&ctx).map_err(|e| exec_error(name, &e));
            match catch_unwind(AssertUnwindSafe(run)).map_err(panicked)? {
                Ok(out) => return Ok(out),
                Err(e) => match prom::take_pending() {
                    Some(q) => {
                        let result = query.query(&q, now_ms);
                        prom::record(q, result);
                    }
                    None => return Err(e),
                },
            }
        }
        Err(TemplateError::Execute {
            name: name.into(),
            msg: format!("template: {name}: runs more than {MAX_QUERIES} queries"),
        })
    })
}

/// Parses a template as `promtool check rules` does, without running it.
/// The text is taken as it is: an alert's templates need [`PREAMBLE`]
/// ahead of them for `$labels` and the others.
pub fn check(text: &str) -> Result<(), String> {
    compile("__alert", text).map(drop)
}

/// The parsed template of an alert's `text`, [`PREAMBLE`] ahead of it.
fn parsed(name: &str, text: &str) -> Result<Arc<gtmpl::Template>, String> {
    let cache = PARSED.get_or_init(Parsed::default);
    let key = (name.to_owned(), text.to_owned());
    if let Some(t) = cache.lock().get(&key) {
        return Ok(t.clone());
    }
    let tmpl = Arc::new(compile(name, &format!("{PREAMBLE}{text}"))?);
    let mut cache = cache.lock();
    if cache.len() >= MAX_PARSED {
        cache.clear();
    }
    cache.insert(key, tmpl.clone());
    Ok(tmpl)
}

/// Go's parse error text: "template: name:line: message".
fn parse_message(name: &str, text: &str, pos: usize, msg: &str) -> String {
    let upto = text.get(..pos.min(text.len())).unwrap_or(text);
    let line = 1 + upto.matches('\n').count();
    format!("template: {name}:{line}: {msg}")
}

/// The gtmpl template of a Go template.
fn compile(name: &str, text: &str) -> Result<gtmpl::Template, String> {
    let toks = lex::lex(text).map_err(|e| parse_message(name, text, e.pos, &e.msg))?;
    let tree = parse::parse(&toks, &prom::is_func)
        .map_err(|e| parse_message(name, text, e.pos, &e.msg))?;
    let rewritten = emit::emit(&tree).map_err(|e| parse_message(name, text, e.pos, &e.msg))?;
    let mut tmpl = gtmpl::Template::with_name(name);
    tmpl.add_funcs(builtins::FUNCS);
    tmpl.add_funcs(internal::FUNCS);
    tmpl.add_funcs(prom::FUNCS);
    tmpl.parse(rewritten)
        .map_err(|e| format!("template: {name}: {e}"))?;
    Ok(tmpl)
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    match p.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast_ref::<&str>()
            .map_or_else(|| "unknown panic".to_owned(), |s| (*s).to_owned()),
    }
}

fn exec_error(name: &str, e: &gtmpl::error::ExecError) -> TemplateError {
    use gtmpl::error::ExecError;
    let msg = match e {
        ExecError::FuncError(gtmpl::FuncError::Generic(m)) => m.clone(),
        ExecError::TemplateNotDefined(t) => format!("template {} not defined", text::go_quote(t)),
        other => other.to_string(),
    };
    TemplateError::Execute {
        name: name.into(),
        msg: format!("template: {name}: executing \"{name}\": {msg}"),
    }
}
