//! Runs PromQL scripts in Prometheus' promqltest format (`load`, `clear`,
//! `eval instant at`, `eval range from .. to .. step ..`, `eval_fail`,
//! `eval_ordered`) from `tests/testdata/*.test` against a `MemSource`.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;

use strata_codec::histogram::{CounterResetHint, FloatHistogram, Span};
use strata_codec::Label;
use strata_promql::float_histogram as fh;
use strata_promql::{Engine, MemSource, QueryLimits, QueryValue, STALE_NAN_BITS};

/// A series value in a script: a number, a native histogram, or a stale
/// marker, or nothing.
#[derive(Clone, Debug)]
enum Slot {
    Value(f64),
    Hist(Box<FloatHistogram>),
    Missing,
}

/// Splits a series' values into tokens, a `{{…}}` histogram (with any
/// `+{{…}}xN` after it) being one token however many spaces it holds.
fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' && chars.get(i + 1) == Some(&'{') {
            depth += 1;
            cur.push_str("{{");
            i += 2;
            continue;
        }
        if c == '}' && chars.get(i + 1) == Some(&'}') && depth > 0 {
            depth -= 1;
            cur.push_str("}}");
            i += 2;
            continue;
        }
        if c.is_whitespace() && depth == 0 {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses the inside of `{{schema:0 sum:5 count:4 buckets:[1 2 1]}}`.
fn parse_histogram(s: &str) -> Result<FloatHistogram, String> {
    let mut h = FloatHistogram::default();
    let (mut offset, mut n_offset) = (0i32, 0i32);
    let mut rest = s.trim();
    while !rest.is_empty() {
        let colon = rest
            .find(':')
            .ok_or(format!("bad histogram field in {s:?}"))?;
        let key = rest[..colon].trim();
        rest = rest[colon + 1..].trim_start();
        let value;
        if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or("unterminated list")?;
            value = &r[..end];
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            value = &rest[..end];
            rest = rest[end..].trim_start();
        }
        let list =
            || -> Result<Vec<f64>, String> { value.split_whitespace().map(parse_number).collect() };
        match key {
            "schema" => h.schema = value.parse().map_err(|_| "bad schema")?,
            "sum" => h.sum = parse_number(value)?,
            "count" => h.count = parse_number(value)?,
            "z_bucket" => h.zero_count = parse_number(value)?,
            "z_bucket_w" => h.zero_threshold = parse_number(value)?,
            "offset" => offset = value.parse().map_err(|_| "bad offset")?,
            "n_offset" => n_offset = value.parse().map_err(|_| "bad n_offset")?,
            "buckets" => h.positive_buckets = list()?,
            "n_buckets" => h.negative_buckets = list()?,
            "custom_values" => h.custom_values = list()?,
            "counter_reset_hint" => {
                h.counter_reset_hint = match value {
                    "gauge" => CounterResetHint::Gauge,
                    "reset" => CounterResetHint::Reset,
                    "not_reset" => CounterResetHint::NotReset,
                    _ => CounterResetHint::Unknown,
                }
            }
            other => return Err(format!("unknown histogram field {other}")),
        }
    }
    if !h.positive_buckets.is_empty() {
        h.positive_spans = vec![Span::new(offset, h.positive_buckets.len() as u32)];
    }
    if !h.negative_buckets.is_empty() {
        h.negative_spans = vec![Span::new(n_offset, h.negative_buckets.len() as u32)];
    }
    Ok(h)
}

/// Expands `{{A}}`, `{{A}}xN`, `{{A}}+{{B}}xN` and `{{A}}-{{B}}xN`.
fn parse_histogram_token(tok: &str, out: &mut Vec<Slot>) -> Result<(), String> {
    let end = tok.find("}}").ok_or("unterminated histogram")?;
    let first = parse_histogram(&tok[2..end])?;
    let rest = &tok[end + 2..];
    if rest.is_empty() {
        out.push(Slot::Hist(Box::new(first)));
        return Ok(());
    }
    if let Some(n) = rest.strip_prefix('x') {
        let n: usize = n.parse().map_err(|_| format!("bad repeat {tok}"))?;
        for _ in 0..=n {
            out.push(Slot::Hist(Box::new(first.clone())));
        }
        return Ok(());
    }
    let negate = rest.starts_with('-');
    let inc = rest
        .get(1..)
        .and_then(|r| r.strip_prefix("{{"))
        .ok_or(format!("bad histogram series {tok}"))?;
    let end = inc.find("}}").ok_or("unterminated histogram")?;
    let delta = parse_histogram(&inc[..end])?;
    let n: usize = inc[end + 2..]
        .strip_prefix('x')
        .and_then(|n| n.parse().ok())
        .ok_or(format!("bad repeat {tok}"))?;
    let mut cur = first;
    for _ in 0..=n {
        out.push(Slot::Hist(Box::new(cur.clone())));
        let hint = cur.counter_reset_hint;
        let mut d = delta.clone();
        d.counter_reset_hint = hint;
        fh::add(&mut cur, &d, negate).map_err(|_| "incompatible increment")?;
        cur.counter_reset_hint = hint;
    }
    Ok(())
}

/// Expands `1+2x3 _ stale 5x2` into one slot per step.
fn parse_values(tokens: &[&str]) -> Result<Vec<Slot>, String> {
    let mut out = Vec::new();
    for tok in tokens {
        // A comment ends the values.
        if tok.starts_with('#') {
            break;
        }
        if tok.starts_with("{{") {
            parse_histogram_token(tok, &mut out)?;
            continue;
        }
        if *tok == "_" {
            out.push(Slot::Missing);
            continue;
        }
        if *tok == "stale" {
            out.push(Slot::Value(f64::from_bits(STALE_NAN_BITS)));
            continue;
        }
        if let Some(n) = tok.strip_prefix("_x") {
            let n: usize = n.parse().map_err(|_| format!("bad repeat {tok}"))?;
            out.extend(std::iter::repeat_n(Slot::Missing, n));
            continue;
        }
        if let Some((head, times)) = tok.split_once('x') {
            let n: usize = times.parse().map_err(|_| format!("bad repeat {tok}"))?;
            // `a+bxN` / `a-bxN` / `axN`: N+1 values.
            let (start, delta) = split_increment(head)?;
            for i in 0..=n {
                out.push(Slot::Value(start + delta * i as f64));
            }
            continue;
        }
        out.push(Slot::Value(parse_number(tok)?));
    }
    Ok(out)
}

/// Splits `a+b` / `a-b` (the sign of `b` may not be the first character).
fn split_increment(s: &str) -> Result<(f64, f64), String> {
    let bytes = s.as_bytes();
    for i in 1..bytes.len() {
        let c = bytes[i];
        if (c == b'+' || c == b'-') && bytes[i - 1] != b'e' && bytes[i - 1] != b'E' {
            let start = parse_number(&s[..i])?;
            let delta = parse_number(&s[i + 1..])?;
            return Ok((start, if c == b'-' { -delta } else { delta }));
        }
    }
    Ok((parse_number(s)?, 0.0))
}

fn parse_number(s: &str) -> Result<f64, String> {
    match s {
        "NaN" => Ok(f64::NAN),
        "Inf" | "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse().map_err(|_| format!("bad number {s:?}")),
    }
}

/// Parses `metric{a="b", c="d"}` into sorted labels; returns the rest.
fn parse_series_labels(s: &str) -> Result<(Vec<Label>, &str), String> {
    let s = s.trim_start();
    let name_len = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(s.len());
    let mut labels = Vec::new();
    if name_len > 0 {
        labels.push(Label::new("__name__", &s[..name_len]));
    }
    let mut rest = &s[name_len..];
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start().trim_start_matches(',').trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=').ok_or("expected =")?;
            let name = rest[..eq].trim().to_string();
            rest = rest[eq + 1..].trim_start();
            let r = rest.strip_prefix('"').ok_or("expected quote")?;
            let mut value = String::new();
            let mut chars = r.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(match n {
                                'n' => '\n',
                                't' => '\t',
                                other => other,
                            });
                        }
                    }
                    '"' => {
                        end = Some(i);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let end = end.ok_or("unterminated string")?;
            rest = &r[end + 1..];
            labels.push(Label::new(name, value));
        }
    }
    labels.sort();
    Ok((labels, rest))
}

/// Milliseconds of a script duration such as `5m`, `1h30m`, `0`, `90s`.
fn parse_duration_ms(s: &str) -> Result<i64, String> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(n * 1000);
    }
    let mut total = 0i64;
    let mut rest = s;
    while !rest.is_empty() {
        let d = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or(format!("bad duration {s}"))?;
        let n: i64 = rest[..d].parse().map_err(|_| format!("bad duration {s}"))?;
        rest = &rest[d..];
        let u = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mult = match &rest[..u] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            "y" => 365 * 86_400_000,
            other => return Err(format!("bad unit {other}")),
        };
        total += n * mult;
        rest = &rest[u..];
    }
    Ok(total)
}

fn almost_equal(a: f64, b: f64) -> bool {
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if a == b {
        return true;
    }
    let diff = (a - b).abs();
    let sum = a.abs() + b.abs();
    if a == 0.0 || b == 0.0 || sum < f64::MIN_POSITIVE {
        return diff < 1e-6 * f64::MIN_POSITIVE;
    }
    diff / sum.min(f64::MAX) < 1e-6
}

fn fmt_labels(l: &[Label]) -> String {
    let inner: Vec<String> = l
        .iter()
        .map(|l| format!("{}={:?}", l.name, l.value))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// A result series: labels and (timestamp, value) points, in time order.
type ActualSeries = (Vec<Label>, Vec<(i64, Slot)>);

/// Whether two histograms are equal as promqltest compares them: counts
/// and sums almost equal, the same populated buckets.
fn histograms_match(a: &FloatHistogram, b: &FloatHistogram) -> bool {
    let side = |spans: &[Span], buckets: &[f64]| -> Vec<(i32, f64)> {
        fh::sparse(spans, buckets)
            .into_iter()
            .filter(|(_, c)| *c != 0.0)
            .collect()
    };
    let same = |x: Vec<(i32, f64)>, y: Vec<(i32, f64)>| {
        x.len() == y.len()
            && x.iter()
                .zip(&y)
                .all(|(p, q)| p.0 == q.0 && almost_equal(p.1, q.1))
    };
    a.schema == b.schema
        && almost_equal(a.count, b.count)
        && almost_equal(a.sum, b.sum)
        && almost_equal(a.zero_count, b.zero_count)
        && (a.zero_count == 0.0 || a.zero_threshold == b.zero_threshold)
        && a.custom_values == b.custom_values
        && same(
            side(&a.positive_spans, &a.positive_buckets),
            side(&b.positive_spans, &b.positive_buckets),
        )
        && same(
            side(&a.negative_spans, &a.negative_buckets),
            side(&b.negative_spans, &b.negative_buckets),
        )
}

fn slots_match(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (Slot::Value(x), Slot::Value(y)) => almost_equal(*x, *y),
        (Slot::Hist(x), Slot::Hist(y)) => histograms_match(x, y),
        (Slot::Missing, Slot::Missing) => true,
        _ => false,
    }
}

enum Expect {
    /// Label set and one slot per step (one for instant queries).
    Series(Vec<(Vec<Label>, Vec<Slot>)>),
    Scalar(f64),
}

struct EvalCmd {
    line: usize,
    query: String,
    range: Option<(i64, i64, i64)>,
    at: i64,
    fail: bool,
    fail_message: Option<String>,
    ordered: bool,
    expect: Expect,
}

fn check(cmd: &EvalCmd, got: Result<QueryValue, strata_promql::QueryError>) -> Result<(), String> {
    let got = match (got, cmd.fail) {
        (Err(e), true) => {
            if let Some(m) = &cmd.fail_message {
                if &e.to_string() != m {
                    return Err(format!("expected error {m:?}, got {:?}", e.to_string()));
                }
            }
            return Ok(());
        }
        (Ok(v), true) => return Err(format!("expected an error, got {v:?}")),
        (Err(e), false) => return Err(format!("unexpected error: {e}")),
        (Ok(v), false) => v,
    };
    let instant_matrix = cmd.range.is_none() && matches!(got, QueryValue::Matrix(_));
    let actual: Vec<ActualSeries> = match got {
        QueryValue::Scalar { v, .. } => {
            return match cmd.expect {
                Expect::Scalar(e) if almost_equal(e, v) => Ok(()),
                Expect::Scalar(e) => Err(format!("expected scalar {e}, got {v}")),
                Expect::Series(_) => Err(format!("expected a vector, got scalar {v}")),
            }
        }
        QueryValue::Vector(v) => v
            .into_iter()
            .map(|s| {
                let value = match s.h {
                    Some(h) => Slot::Hist(h),
                    None => Slot::Value(s.v),
                };
                (s.labels.to_vec(), vec![(s.t, value)])
            })
            .collect(),
        QueryValue::Matrix(m) => m
            .into_iter()
            .map(|s| {
                let mut points: Vec<(i64, Slot)> = s
                    .points
                    .iter()
                    .map(|p| (p.t, Slot::Value(p.v)))
                    .chain(
                        s.histograms
                            .into_iter()
                            .map(|(t, h)| (t, Slot::Hist(Box::new(h)))),
                    )
                    .collect();
                points.sort_by_key(|p| p.0);
                (s.labels.to_vec(), points)
            })
            .collect(),
        QueryValue::String { v, .. } => return Err(format!("got string {v:?}")),
    };
    let Expect::Series(expected) = &cmd.expect else {
        return Err(format!("expected a scalar, got {actual:?}"));
    };
    if expected.len() != actual.len() {
        return Err(format!(
            "expected {} series, got {}: {:?}",
            expected.len(),
            actual.len(),
            actual
                .iter()
                .map(|(l, p)| format!("{} {:?}", fmt_labels(l), p))
                .collect::<Vec<_>>()
        ));
    }
    for (i, (labels, slots)) in expected.iter().enumerate() {
        let Some(pos) = actual.iter().position(|(l, _)| l == labels) else {
            return Err(format!("missing series {}", fmt_labels(labels)));
        };
        if cmd.ordered && pos != i {
            return Err(format!(
                "series {} at position {pos}, expected {i}",
                fmt_labels(labels)
            ));
        }
        let points = &actual[pos].1;
        let expected_points: Vec<(i64, Slot)> = match cmd.range {
            Some((start, _, step)) => slots
                .iter()
                .enumerate()
                .filter(|(_, s)| !matches!(s, Slot::Missing))
                .map(|(k, s)| (start + k as i64 * step, s.clone()))
                .collect(),
            None => match slots.first() {
                Some(Slot::Missing) | None => Vec::new(),
                Some(s) => vec![(cmd.at, s.clone())],
            },
        };
        // An instant query of a range vector returns raw samples: compare
        // their values in order.
        let same = if instant_matrix {
            let values: Vec<&Slot> = slots
                .iter()
                .filter(|s| !matches!(s, Slot::Missing))
                .collect();
            values.len() == points.len()
                && values.iter().zip(points).all(|(e, a)| slots_match(e, &a.1))
        } else {
            expected_points.len() == points.len()
                && expected_points
                    .iter()
                    .zip(points)
                    .all(|(e, a)| e.0 == a.0 && slots_match(&e.1, &a.1))
        };
        if !same {
            return Err(format!(
                "series {}: expected {:?}, got {:?}",
                fmt_labels(labels),
                expected_points,
                points
            ));
        }
    }
    Ok(())
}

async fn run_script(path: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(path).expect("read script");
    let lines: Vec<&str> = text.lines().collect();
    let source = Arc::new(MemSource::new());
    let engine = Engine::new(source.clone(), QueryLimits::default());
    let mut failures = Vec::new();
    let mut evals = 0;
    let mut i = 0;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    while i < lines.len() {
        let line = lines[i].trim();
        let lineno = i + 1;
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "clear" {
            source.clear();
            continue;
        }
        // The indented lines that follow a command.
        let mut body = Vec::new();
        while i < lines.len() && lines[i].starts_with([' ', '\t']) && !lines[i].trim().is_empty() {
            body.push(lines[i].trim());
            i += 1;
        }
        if let Some(interval) = line.strip_prefix("load ") {
            let interval = parse_duration_ms(interval.trim()).expect("load interval");
            for b in body {
                let parsed = parse_series_labels(b).and_then(|(labels, rest)| {
                    let tokens = tokenize(rest);
                    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
                    Ok((labels, parse_values(&tokens)?))
                });
                let (labels, values) = match parsed {
                    Ok(p) => p,
                    Err(e) => {
                        failures.push(format!("{name}:{lineno}: cannot load {b:?}: {e}"));
                        continue;
                    }
                };
                for (k, v) in values.iter().enumerate() {
                    match v {
                        Slot::Value(v) => source.append(&labels, k as i64 * interval, *v),
                        Slot::Hist(h) => {
                            source.append_histogram(&labels, k as i64 * interval, (**h).clone())
                        }
                        Slot::Missing => {}
                    }
                }
            }
            continue;
        }
        let (head, fail, ordered) = if let Some(r) = line.strip_prefix("eval_fail ") {
            (r, true, false)
        } else if let Some(r) = line.strip_prefix("eval_ordered ") {
            (r, false, true)
        } else if let Some(r) = line.strip_prefix("eval ") {
            (r, false, false)
        } else {
            failures.push(format!("{name}:{lineno}: unknown command {line:?}"));
            continue;
        };
        let (range, at, query) = if let Some(r) = head.strip_prefix("instant at ") {
            let (t, q) = r.split_once(' ').expect("instant query");
            (None, parse_duration_ms(t).expect("time"), q.to_string())
        } else if let Some(r) = head.strip_prefix("range from ") {
            let parts: Vec<&str> = r.splitn(6, ' ').collect();
            assert!(
                parts.len() == 6 && parts[1] == "to" && parts[3] == "step",
                "{name}:{lineno}: bad range"
            );
            let start = parse_duration_ms(parts[0]).expect("start");
            let end = parse_duration_ms(parts[2]).expect("end");
            let step = parse_duration_ms(parts[4]).expect("step");
            (Some((start, end, step)), start, parts[5].to_string())
        } else {
            failures.push(format!("{name}:{lineno}: bad eval {line:?}"));
            continue;
        };
        let mut fail_message = None;
        let mut series = Vec::new();
        let mut scalar = None;
        for b in body {
            if let Some(m) = b.strip_prefix("expected_fail_message ") {
                fail_message = Some(m.to_string());
                continue;
            }
            // Annotation expectations are not checked here.
            if b.starts_with("expect ") || b.starts_with('#') {
                continue;
            }
            if let Ok(v) = parse_number(b) {
                scalar = Some(v);
                continue;
            }
            let parsed = parse_series_labels(b).and_then(|(labels, rest)| {
                let tokens = tokenize(rest);
                let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
                Ok((labels, parse_values(&tokens)?))
            });
            match parsed {
                Ok(s) => series.push(s),
                Err(e) => {
                    failures.push(format!("{name}:{lineno}: cannot read {b:?}: {e}"));
                    continue;
                }
            }
        }
        let cmd = EvalCmd {
            line: lineno,
            query,
            range,
            at,
            fail,
            fail_message,
            ordered,
            expect: match scalar {
                Some(v) => Expect::Scalar(v),
                None => Expect::Series(series),
            },
        };
        evals += 1;
        let got = match cmd.range {
            Some((s, e, step)) => engine.range_query(&cmd.query, s, e, step, None).await,
            None => engine.instant_query(&cmd.query, cmd.at, None).await,
        };
        if let Err(e) = check(&cmd, got) {
            failures.push(format!("{name}:{}: {}: {e}", cmd.line, cmd.query));
        }
    }
    (evals, failures)
}

#[tokio::test]
async fn promql_scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no scripts found");
    // More scripts to run, from outside the repository (say Prometheus'
    // own), separated by `:`.
    if let Ok(extra) = std::env::var("STRATA_PROMQLTEST_EXTRA") {
        paths.extend(extra.split(':').filter(|p| !p.is_empty()).map(Into::into));
    }
    let mut total = 0;
    let mut failures = Vec::new();
    for p in &paths {
        let (n, f) = run_script(p).await;
        total += n;
        failures.extend(f);
    }
    println!("{total} evaluations in {} scripts", paths.len());
    assert!(
        failures.is_empty(),
        "{} of {total} evaluations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
