//! A promqltest script read into commands, with the grammar of
//! Prometheus 3.16's runner (`promql/promqltest/test.go`): `load` and
//! `load_with_nhcb`, `clear`, `eval instant at` and `eval range from .. to
//! .. step ..` (and their `_fail`, `_ordered`, `_warn`, `_info` forms), each
//! followed by lines up to a blank one.

use std::sync::LazyLock;

use regex::Regex;
use strata_codec::Label;

use crate::series::{parse_duration_ms, parse_number, parse_series, unquote_prefix, SeriesDesc};

/// The command patterns of Prometheus' runner.
static LOAD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^load(?:_(with_nhcb))?\s+(.+?)$").unwrap());
static EVAL_INSTANT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^eval(?:_(fail|warn|ordered|info))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$").unwrap()
});
static EVAL_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^eval(?:_(fail|warn|info))?\s+range\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+?)\s+(.+)$",
    )
    .unwrap()
});
static EXPECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^expect\s+(ordered|fail|warn|no_warn|info|no_info)(?:\s+(regex|msg):(.+))?$")
        .unwrap()
});
static EXPECT_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^expect range vector\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+)$").unwrap()
});

pub enum Command {
    Clear,
    Load(Load),
    Eval(Box<Eval>),
}

pub struct Load {
    pub step_ms: i64,
    /// Classic histograms are also loaded as custom-bucket native ones.
    pub nhcb: bool,
    pub series: Vec<SeriesDesc>,
}

/// What an error or an annotation is expected to say: exactly a text, or
/// matching a pattern (any text when the line names neither).
pub enum TextMatch {
    Exact(String),
    Pattern(Regex),
}

/// Prometheus appends ` (line:column)` of the expression an annotation is
/// about; Strata's parser gives no positions, so texts are compared
/// without it.
fn strip_position(s: &str) -> &str {
    match s.rfind(" (") {
        Some(i)
            if s.ends_with(')')
                && !s[i + 2..s.len() - 1].is_empty()
                && s[i + 2..s.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ':') =>
        {
            &s[..i]
        }
        _ => s,
    }
}

/// The same for a pattern: a trailing ` \(1:25\)` or ` \([0-9]+:[0-9]+\)`.
fn strip_position_pattern(p: &str) -> &str {
    match p.rfind(r" \(") {
        Some(i)
            if p.ends_with(r"\)")
                && p[i + 3..p.len() - 2]
                    .chars()
                    .all(|c| "0123456789:[]+-*".contains(c)) =>
        {
            &p[..i]
        }
        _ => p,
    }
}

impl TextMatch {
    pub fn matches(&self, text: &str) -> bool {
        match self {
            Self::Exact(m) => m == text,
            Self::Pattern(p) => p.is_match(text),
        }
    }
}

impl std::fmt::Display for TextMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exact(m) => write!(f, "message {m:?}"),
            Self::Pattern(p) => write!(f, "pattern {:?}", p.as_str()),
        }
    }
}

/// When an evaluation runs and where its expected points fall.
#[derive(Clone, Copy)]
pub enum Time {
    Instant(i64),
    Range { start: i64, end: i64, step: i64 },
}

pub enum Expected {
    Scalar(f64),
    /// Expected series in the order written.
    Series(Vec<SeriesDesc>),
}

pub struct Eval {
    pub query: String,
    pub time: Time,
    /// `eval_fail`, or an `expect fail` line (with what it must say).
    pub fail: bool,
    pub fail_match: Vec<TextMatch>,
    pub ordered: bool,
    /// `eval_warn` / `eval_info`: some warning / info is required.
    pub any_warn: bool,
    pub any_info: bool,
    pub warn: Vec<TextMatch>,
    pub info: Vec<TextMatch>,
    pub no_warn: bool,
    pub no_info: bool,
    /// `expect range vector from .. to .. step ..`: an instant query's
    /// range vector, evaluated at the end, with points at these steps.
    pub range_vector: Option<(i64, i64, i64)>,
    pub expected_string: Option<String>,
    pub expected: Expected,
}

impl Eval {
    /// Whether Prometheus' runner also checks the instant query in range
    /// mode.
    pub fn range_mode_check(&self) -> bool {
        matches!(self.time, Time::Instant(_))
            && self.range_vector.is_none()
            && self.expected_string.is_none()
            && !self.ordered
            && !["start()", "end()", "range()", "step()"]
                .iter()
                .any(|f| self.query.contains(f))
    }
}

/// A command, or why its lines cannot be read, at its 1-based line.
pub type Parsed = (usize, Result<Command, String>);

/// Reads a whole script. A body ends at a blank line, or (as Strata's own
/// scripts write) at an unindented command.
pub fn parse(text: &str) -> Vec<Parsed> {
    let lines: Vec<&str> = text.lines().collect();
    let is_command = |l: &str| {
        let word = l.split_whitespace().next().unwrap_or("").to_lowercase();
        word == "clear" || word.starts_with("load") || word.starts_with("eval")
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        let lineno = i + 1;
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut body = Vec::new();
        while i < lines.len() {
            let l = lines[i];
            if l.trim().is_empty() || (!l.starts_with([' ', '\t']) && is_command(l)) {
                break;
            }
            if !l.trim().starts_with('#') {
                body.push(l.trim());
            }
            i += 1;
        }
        let word = line.split_whitespace().next().unwrap_or("").to_lowercase();
        let cmd = if word == "clear" {
            Ok(Command::Clear)
        } else if word.starts_with("load") {
            parse_load(line, &body).map(Command::Load)
        } else if word.starts_with("eval") {
            parse_eval(line, &body).map(|e| Command::Eval(Box::new(e)))
        } else {
            Err(format!("invalid command {line:?}"))
        };
        out.push((lineno, cmd));
    }
    out
}

fn parse_load(line: &str, body: &[&str]) -> Result<Load, String> {
    let caps = LOAD
        .captures(line)
        .ok_or("invalid load command. (load[_with_nhcb] <step:duration>)")?;
    let step_ms = parse_duration_ms(&caps[2])?;
    let mut series = Vec::new();
    for b in body {
        // `metric@st …` gives start timestamps, which Strata does not keep.
        let first = b.split_whitespace().next().unwrap_or("");
        if first.ends_with("@st") {
            continue;
        }
        series.push(parse_series(b).map_err(|e| format!("cannot load {b:?}: {e}"))?);
    }
    Ok(Load {
        step_ms,
        nhcb: caps.get(1).is_some(),
        series,
    })
}

fn parse_expect(line: &str) -> Result<(String, TextMatch), String> {
    let caps = EXPECT
        .captures(line)
        .ok_or(format!("invalid expect statement {line:?}"))?;
    let kind = caps[1].to_string();
    let m = match caps.get(2).map(|m| m.as_str()) {
        Some("msg") => TextMatch::Exact(strip_position(caps[3].trim()).to_string()),
        Some(_) => {
            let p = strip_position_pattern(caps[3].trim());
            TextMatch::Pattern(Regex::new(p).map_err(|e| format!("invalid regex {p}: {e}"))?)
        }
        None => TextMatch::Pattern(Regex::new("^.*$").unwrap()),
    };
    Ok((kind, m))
}

fn parse_eval(line: &str, body: &[&str]) -> Result<Eval, String> {
    let (modifier, query, time) = if let Some(c) = EVAL_INSTANT.captures(line) {
        let at = c.get(2).map_or("", |m| m.as_str());
        let at = parse_duration_ms(at).map_err(|e| format!("invalid timestamp: {e}"))?;
        (c.get(1), c[3].to_string(), Time::Instant(at))
    } else if let Some(c) = EVAL_RANGE.captures(line) {
        let (start, end, step) = durations(&c[2], &c[3], &c[4])?;
        (c.get(1), c[5].to_string(), Time::Range { start, end, step })
    } else {
        return Err(format!("invalid evaluation command {line:?}"));
    };
    let modifier = modifier.map_or("", |m| m.as_str());
    let mut eval = Eval {
        query,
        time,
        fail: modifier == "fail",
        fail_match: Vec::new(),
        ordered: modifier == "ordered",
        any_warn: modifier == "warn",
        any_info: modifier == "info",
        warn: Vec::new(),
        info: Vec::new(),
        no_warn: false,
        no_info: false,
        range_vector: None,
        expected_string: None,
        expected: Expected::Series(Vec::new()),
    };
    for b in body {
        if let Some(m) = b.strip_prefix("expected_fail_message") {
            eval.fail_match.push(TextMatch::Exact(m.trim().to_string()));
            continue;
        }
        if let Some(p) = b.strip_prefix("expected_fail_regexp") {
            let p = Regex::new(p.trim()).map_err(|e| format!("invalid regexp: {e}"))?;
            eval.fail_match.push(TextMatch::Pattern(p));
            continue;
        }
        if b.starts_with("expect range vector") {
            let c = EXPECT_RANGE
                .captures(b)
                .ok_or(format!("invalid range vector definition {b:?}"))?;
            eval.range_vector = Some(durations(&c[1], &c[2], &c[3])?);
            continue;
        }
        if let Some(s) = b.strip_prefix("expect string") {
            let (s, rest) = unquote_prefix(s.trim_start())
                .map_err(|_| "expected string literal not valid".to_string())?;
            if !rest.trim().is_empty() {
                return Err("expected string literal not valid".into());
            }
            eval.expected_string = Some(s);
            continue;
        }
        if b.split(' ').next() == Some("expect") {
            let (kind, m) = parse_expect(b)?;
            match kind.as_str() {
                "ordered" => eval.ordered = true,
                "fail" => {
                    if eval.fail && !eval.fail_match.is_empty() {
                        return Err("multiple expect fail lines are not allowed".into());
                    }
                    eval.fail = true;
                    eval.fail_match.push(m);
                }
                "warn" => eval.warn.push(m),
                "info" => eval.info.push(m),
                "no_warn" => eval.no_warn = true,
                _ => eval.no_info = true,
            }
            if (eval.no_warn && !eval.warn.is_empty()) || (eval.no_info && !eval.info.is_empty()) {
                return Err("an expect line and its no_ form cannot be used together".into());
            }
            continue;
        }
        if let Ok(v) = parse_number(b) {
            eval.expected = Expected::Scalar(v);
            continue;
        }
        let (labels, values) = parse_series(b).map_err(|e| format!("cannot read {b:?}: {e}"))?;
        if values.len() > 1 && matches!(time, Time::Instant(_)) && eval.range_vector.is_none() {
            return Err("expecting multiple values in instant evaluation not allowed".into());
        }
        push_expected(&mut eval.expected, labels, values);
    }
    Ok(eval)
}

/// Adds an expected series; a second line for the same labels replaces
/// the first, as in Prometheus' runner.
fn push_expected(expected: &mut Expected, labels: Vec<Label>, values: Vec<crate::series::Slot>) {
    if let Expected::Scalar(_) = expected {
        *expected = Expected::Series(Vec::new());
    }
    if let Expected::Series(list) = expected {
        match list.iter_mut().find(|(l, _)| *l == labels) {
            Some(s) => s.1 = values,
            None => list.push((labels, values)),
        }
    }
}

fn durations(from: &str, to: &str, step: &str) -> Result<(i64, i64, i64), String> {
    let start = parse_duration_ms(from.trim())?;
    let end = parse_duration_ms(to.trim())?;
    if end < start {
        return Err(format!(
            "invalid test definition, end timestamp ({to}) is before start timestamp ({from})"
        ));
    }
    Ok((start, end, parse_duration_ms(step.trim())?))
}
