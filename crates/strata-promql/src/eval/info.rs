//! `info(v, {selector})`: each series of `v` with the data labels of the
//! info series (`target_info` unless the selector names others) that share
//! its identifying labels, `instance` and `job`, as Prometheus' `evalInfo`.
//!
//! Strata reads every selector before evaluating, so the info series are
//! read by their names and data-label matchers alone (see [`load`]); the
//! identifying labels of `v`, known only once it is evaluated, pick among
//! them here, as Prometheus' per-query selection would have.

use std::collections::{BTreeMap, HashMap, HashSet};

use promql_parser::parser::{AtModifier, Call, Expr};
use strata_codec::{Label, MatchOp, Matcher};

use super::selector::{instant_points, instant_points_mixed};
use super::{gather, offset_ms, unwrap_parens, Evaluator, Result};
use crate::error::QueryError;
use crate::plan::SelectorLoad;
use crate::source::Series;
use crate::value::{
    get_label, is_metadata_label, labels_to_string, Labels, Matrix, MatrixSeries, Point, Sample,
    Vector,
};

/// The info metric `info(v)` joins without a selector naming one.
const TARGET_INFO: &str = "target_info";

/// The labels an info series and a series it enriches share.
const IDENTIFYING: [&str; 2] = ["instance", "job"];

/// The key of an `info` call's own read in the selector data.
pub(crate) fn info_key(c: &Call) -> usize {
    c as *const Call as usize
}

/// The matchers of `info`'s second argument, split as Prometheus uses them.
struct InfoSelector {
    /// Matchers of labels other than `__name__`: which info series are
    /// read, and which of their labels are added.
    data: Vec<Matcher>,
    /// The `__name__` matchers that pick the info metrics.
    names: Vec<Matcher>,
}

impl InfoSelector {
    fn of(c: &Call) -> Result<Self> {
        let mut data = Vec::new();
        let mut written = Vec::new();
        if let Some(arg) = c.args.args.get(1) {
            let Expr::VectorSelector(vs) = unwrap_parens(arg) else {
                return Err(QueryError::exec(
                    "expected a label selector as argument 2 of info()",
                ));
            };
            if !vs.matchers.or_matchers.is_empty() {
                return Err(QueryError::unsupported(
                    "`or` in the label selector of info()",
                ));
            }
            if let Some(name) = &vs.name {
                written.push(matcher(MatchOp::Equal, "__name__", name)?);
            }
            for m in &vs.matchers.matchers {
                let m = crate::plan::to_matcher(m)?;
                if m.name == "__name__" {
                    written.push(m);
                } else {
                    data.push(m);
                }
            }
        }
        Ok(Self {
            data,
            names: effective_names(written)?,
        })
    }

    /// Whether any data-label matcher refuses a missing label: a series no
    /// info series enriches is then left out.
    fn requires_data(&self) -> bool {
        self.data.iter().any(|m| !m.matches(""))
    }

    /// Whether the info label `name` may be added: every label when there
    /// are no data-label matchers, else those they name.
    fn adds(&self, name: &str) -> bool {
        self.data.is_empty() || self.data.iter().any(|m| m.name == name)
    }
}

fn matcher(op: MatchOp, name: &str, value: &str) -> Result<Matcher> {
    Matcher::new(op, name, value).map_err(|e| QueryError::BadData(e.to_string()))
}

/// The `__name__` matchers info series are read by, as Prometheus'
/// `effectiveInfoNameMatchers`: those written if one is positive; only
/// negative ones narrow `.+_info`; none is `target_info`.
fn effective_names(written: Vec<Matcher>) -> Result<Vec<Matcher>> {
    let positive = |m: &Matcher| matches!(m.op, MatchOp::Equal | MatchOp::RegexMatch);
    if written.iter().any(positive) {
        return Ok(written);
    }
    let first = if written.is_empty() {
        matcher(MatchOp::Equal, "__name__", TARGET_INFO)?
    } else {
        matcher(MatchOp::RegexMatch, "__name__", ".+_info")?
    };
    Ok(std::iter::once(first).chain(written).collect())
}

/// The read of an `info` call evaluated at steps in `[start, end]`: the
/// info series by name and data labels, over the lookback before each
/// step, at the time the first argument's selectors share
/// ([`info_reference`]).
pub(crate) fn load(
    c: &Call,
    (start, end): (i64, i64),
    lookback: i64,
    at: &dyn Fn(&Option<AtModifier>) -> Option<i64>,
) -> Result<SelectorLoad> {
    let selector = InfoSelector::of(c)?;
    let (pinned, offset) = c
        .args
        .args
        .first()
        .map_or((None, 0), |a| info_reference(a, at));
    let (s, e) = pinned.map_or((start, end), |t| (t, t));
    let mut matchers = selector.data;
    matchers.extend(selector.names);
    Ok(SelectorLoad {
        key: info_key(c),
        matcher_sets: vec![matchers],
        mint: s
            .saturating_sub(lookback.saturating_sub(1))
            .saturating_sub(offset),
        maxt: e.saturating_sub(offset),
        reduce: None,
    })
}

/// The time one selector reads at: its `@` time if pinned, and its offset
/// (those of the subqueries around it added).
#[derive(Clone, Copy)]
struct Reference {
    at: Option<i64>,
    offset: i64,
}

impl Reference {
    fn same(&self, other: &Reference) -> bool {
        match (self.at, other.at) {
            (Some(a), Some(b)) => a - self.offset == b - other.offset,
            (None, None) => self.offset == other.offset,
            _ => false,
        }
    }
}

/// The `@` time and offset the info series are read and evaluated at:
/// those of the first selector of `arg`, when every vector in it comes from
/// a selector with the same reference time; else none, the evaluation
/// time (Prometheus' `infoSeriesSelectTimestampAndOffset`). Scalar
/// subexpressions do not count.
pub(crate) fn info_reference(
    arg: &Expr,
    at: &dyn Fn(&Option<AtModifier>) -> Option<i64>,
) -> (Option<i64>, i64) {
    let mut walk = ReferenceWalk {
        at,
        first: None,
        uniform: true,
        reference_free: false,
    };
    walk.inspect(arg, &mut Vec::new());
    match walk.first {
        Some(r) if walk.uniform && !walk.reference_free => (r.at, r.offset),
        _ => (None, 0),
    }
}

struct ReferenceWalk<'f> {
    at: &'f dyn Fn(&Option<AtModifier>) -> Option<i64>,
    first: Option<Reference>,
    uniform: bool,
    /// A vector with no selector under it (`vector(1)`), which reads at
    /// the evaluation time.
    reference_free: bool,
}

impl ReferenceWalk<'_> {
    /// Whether `e` has a selector under it; `subqueries` holds the `@` time
    /// and offset of those around it, outermost first.
    fn inspect(&mut self, e: &Expr, subqueries: &mut Vec<Reference>) -> bool {
        use promql_parser::parser::value::ValueType;
        if !matches!(e.value_type(), ValueType::Vector | ValueType::Matrix) {
            return false;
        }
        let vs = match e {
            Expr::VectorSelector(vs) => Some(vs),
            Expr::MatrixSelector(ms) => Some(&ms.vs),
            _ => None,
        };
        if let Some(vs) = vs {
            let mut r = Reference {
                at: (self.at)(&vs.at),
                offset: offset_ms(&vs.offset),
            };
            // Subqueries shift the reference until one pins it.
            for sq in subqueries.iter().rev() {
                if r.at.is_some() {
                    break;
                }
                r.offset += sq.offset;
                r.at = sq.at;
            }
            match &self.first {
                None => self.first = Some(r),
                Some(first) if !first.same(&r) => self.uniform = false,
                Some(_) => {}
            }
            return true;
        }
        let children: Vec<&Expr> = match e {
            Expr::Paren(p) => vec![&p.expr],
            Expr::Unary(u) => vec![&u.expr],
            Expr::Binary(b) => vec![&b.lhs, &b.rhs],
            Expr::Aggregate(a) => std::iter::once(&*a.expr)
                .chain(a.param.as_deref())
                .collect(),
            // A nested info's label selector is not a vector it reads.
            Expr::Call(c) if c.func.name == "info" => {
                c.args.args.iter().take(1).map(|a| &**a).collect()
            }
            Expr::Call(c) => c.args.args.iter().map(|a| &**a).collect(),
            Expr::Subquery(sq) => {
                subqueries.push(Reference {
                    at: (self.at)(&sq.at),
                    offset: offset_ms(&sq.offset),
                });
                let found = self.inspect(&sq.expr, subqueries);
                subqueries.pop();
                if !found {
                    self.reference_free = true;
                }
                return found;
            }
            _ => Vec::new(),
        };
        let mut found = false;
        for child in children {
            found |= self.inspect(child, subqueries);
        }
        if !found {
            self.reference_free = true;
        }
        found
    }
}

/// Which identifying labels a series has: bit 0 `instance`, bit 1 `job`.
fn presence(labels: &[Label]) -> (u8, [&str; 2]) {
    let values = IDENTIFYING.map(|n| get_label(labels, n));
    let bits = values
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .fold(0u8, |b, (i, _)| b | (1 << i));
    (bits, values)
}

/// The identifying label values of the series to enrich, by which of the
/// labels they have: an info series is read for them when it has the same
/// labels, each with one of those values (Prometheus'
/// `infoIdentifyingMatcherSets`).
#[derive(Default)]
struct IdentifyingSets<'a> {
    groups: HashMap<u8, [HashSet<&'a str>; 2]>,
}

impl<'a> IdentifyingSets<'a> {
    fn add(&mut self, labels: &'a [Label]) {
        let (bits, values) = presence(labels);
        if bits == 0 {
            return;
        }
        let group = self.groups.entry(bits).or_default();
        for (set, v) in group.iter_mut().zip(values) {
            if !v.is_empty() {
                set.insert(v);
            }
        }
    }

    fn admits(&self, labels: &[Label]) -> bool {
        let (bits, values) = presence(labels);
        self.groups.get(&bits).is_some_and(|group| {
            group
                .iter()
                .zip(values)
                .all(|(set, v)| v.is_empty() || set.contains(v))
        })
    }
}

/// What an info series and a series it enriches agree on: the info
/// metric's name and the identifying labels ("" when missing).
type Signature<'a> = (&'a str, [&'a str; 2]);

impl Evaluator<'_> {
    /// `info(args[0], args[1])`.
    pub fn eval_info(&mut self, c: &Call, args: &[&Expr]) -> Result<Matrix> {
        let base_expr = args
            .first()
            .ok_or_else(|| QueryError::exec("expected a vector as argument 1 of info()"))?;
        let at = |m: &Option<AtModifier>| self.at_ms(m);
        let (pinned, offset) = info_reference(base_expr, &at);
        let base = self.eval_matrix(base_expr)?;
        let selector = InfoSelector::of(c)?;
        // Series of the info metrics themselves are left as they are.
        let ignored: Vec<bool> = base
            .iter()
            .map(|s| {
                let name = get_label(&s.labels, "__name__");
                selector.names.iter().all(|m| m.matches(name))
            })
            .collect();
        let mut sets = IdentifyingSets::default();
        for (s, _) in base.iter().zip(&ignored).filter(|(_, i)| !**i) {
            sets.add(&s.labels);
        }
        let loaded = self
            .data
            .get(&info_key(c))
            .ok_or_else(|| QueryError::Internal("info series were not loaded".into()))?;
        let info = self.info_points(&loaded.series, &sets, pinned, offset)?;
        let names: Vec<&str> = {
            let mut n: Vec<&str> = info
                .iter()
                .map(|s| get_label(&s.labels, "__name__"))
                .collect();
            n.sort_unstable();
            n.dedup();
            n
        };
        let info_sigs: Vec<Signature<'_>> = info
            .iter()
            .map(|s| (get_label(&s.labels, "__name__"), presence(&s.labels).1))
            .collect();
        let (mut base_cursors, mut info_cursors) =
            (vec![(0, 0); base.len()], vec![(0, 0); info.len()]);
        let (mut base_now, mut info_now) = (Vector::new(), Vector::new());
        let base_index: HashMap<&Labels, usize> = base
            .iter()
            .enumerate()
            .map(|(i, s)| (&s.labels, i))
            .collect();
        let info_index: HashMap<&Labels, usize> = info
            .iter()
            .enumerate()
            .map(|(i, s)| (&s.labels, i))
            .collect();
        self.range_eval(&[], &mut |_, ts| {
            gather(ts, &base, &mut base_cursors, &mut base_now);
            gather(ts, &info, &mut info_cursors, &mut info_now);
            // The newest info sample of each signature.
            let mut newest: HashMap<Signature<'_>, &Sample> = HashMap::new();
            for s in &info_now {
                let Some(&sig) = info_index.get(&s.labels).and_then(|&i| info_sigs.get(i)) else {
                    continue;
                };
                match newest.get(&sig) {
                    Some(e) if e.v > s.v => {}
                    Some(e) if e.v == s.v => {
                        return Err(QueryError::exec(format!(
                            "found duplicate series for info metric: existing {} @ {}, new {} @ {}",
                            labels_to_string(&e.labels),
                            (e.v * 1000.0).round() as i64,
                            labels_to_string(&s.labels),
                            (s.v * 1000.0).round() as i64,
                        )));
                    }
                    _ => {
                        newest.insert(sig, s);
                    }
                }
            }
            let mut out = Vector::with_capacity(base_now.len());
            for bs in &base_now {
                let i = base_index.get(&bs.labels).copied();
                if i.and_then(|i| ignored.get(i)).copied().unwrap_or(false) {
                    out.push(bs.clone());
                    continue;
                }
                let identifying = presence(&bs.labels).1;
                let mut added: BTreeMap<&str, &str> = BTreeMap::new();
                let mut matched = false;
                for name in &names {
                    let Some(is) = newest.get(&(*name, identifying)) else {
                        continue;
                    };
                    matched = true;
                    for l in is.labels.iter() {
                        if is_metadata_label(&l.name) || !selector.adds(&l.name) {
                            continue;
                        }
                        if added.get(l.name.as_str()).is_some_and(|v| *v != l.value) {
                            return Err(QueryError::exec(format!("conflicting label: {}", l.name)));
                        }
                        if bs.labels.iter().any(|b| b.name == l.name) {
                            continue;
                        }
                        added.insert(&l.name, &l.value);
                    }
                }
                if !matched && selector.requires_data() {
                    continue;
                }
                let mut labels: Vec<Label> = bs.labels.to_vec();
                labels.extend(added.into_iter().map(|(n, v)| Label::new(n, v)));
                labels.sort();
                out.push(Sample {
                    labels: Labels::from(labels),
                    v: bs.v,
                    h: bs.h.clone(),
                });
            }
            Ok(out)
        })
    }

    /// The info series the identifying `sets` admit, at each step: the
    /// time, in seconds, of the sample an instant selector would take, at
    /// `pinned` (or the step) minus `offset`.
    fn info_points(
        &mut self,
        loaded: &[Series],
        sets: &IdentifyingSets<'_>,
        pinned: Option<i64>,
        offset: i64,
    ) -> Result<Matrix> {
        let mut out = Matrix::new();
        for s in loaded.iter().filter(|s| sets.admits(&s.labels)) {
            self.check_deadline()?;
            let points: Vec<Point> = if s.histograms.is_empty() {
                instant_points(s, self.steps(), pinned, offset, self.lookback, true)
            } else {
                let steps = self.steps();
                let (_, hs) = instant_points_mixed(s, steps, pinned, offset, self.lookback, false);
                if !hs.is_empty() {
                    return Err(QueryError::exec(format!(
                        "this should be an info metric, with float samples: {}",
                        labels_to_string(&s.labels)
                    )));
                }
                let steps = self.steps();
                instant_points_mixed(s, steps, pinned, offset, self.lookback, true).0
            };
            if !points.is_empty() {
                self.add_samples(points.len())?;
                out.push(MatrixSeries::floats(Labels::from(&*s.labels), points));
            }
        }
        Ok(out)
    }
}
