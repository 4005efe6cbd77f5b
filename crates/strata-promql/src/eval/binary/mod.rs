//! Binary operators: arithmetic, comparisons, `and`/`or`/`unless`, with
//! Prometheus' vector matching (`on`, `ignoring`, `group_left`,
//! `group_right`) and its rules for dropping the metric name.

use std::collections::{HashMap, HashSet};

use promql_parser::parser::token::{
    T_ADD, T_ATAN2, T_DIV, T_EQLC, T_GTE, T_GTR, T_LAND, T_LOR, T_LSS, T_LTE, T_LUNLESS, T_MOD,
    T_MUL, T_NEQ, T_POW, T_SUB,
};
use promql_parser::parser::value::ValueType;
use promql_parser::parser::{BinaryExpr, LabelModifier, VectorMatchCardinality};
use strata_codec::Label;

use super::{Evaluator, Result};
use crate::annotations::Shared;
use crate::error::QueryError;
use crate::value::{
    drop_metric_name, empty_labels, is_metadata_label, labels_to_string, Labels, Matrix, Sample,
    Vector,
};

mod elem;

pub(crate) use elem::scalar_binop;
use elem::{bool_to_f64, elem_binop, elem_binop_histogram, is_trim};

/// How the two sides of a vector/vector operation are matched.
struct Matching {
    on: bool,
    labels: Vec<String>,
    card: Card,
    include: Vec<String>,
    /// `fill_left`'s value: what stands in for a missing left operand.
    fill_lhs: Option<f64>,
    /// `fill_right`'s value: what stands in for a missing right operand.
    fill_rhs: Option<f64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Card {
    OneToOne,
    ManyToOne,
    OneToMany,
    ManyToMany,
}

impl Matching {
    fn from_expr(b: &BinaryExpr, set_op: bool) -> Self {
        let (on, labels) = match b.modifier.as_ref().and_then(|m| m.matching.as_ref()) {
            Some(LabelModifier::Include(ls)) => (true, ls.labels.clone()),
            Some(LabelModifier::Exclude(ls)) => (false, ls.labels.clone()),
            None => (false, Vec::new()),
        };
        let (card, include) = match b.modifier.as_ref().map(|m| &m.card) {
            _ if set_op => (Card::ManyToMany, Vec::new()),
            Some(VectorMatchCardinality::ManyToOne(ls)) => (Card::ManyToOne, ls.labels.clone()),
            Some(VectorMatchCardinality::OneToMany(ls)) => (Card::OneToMany, ls.labels.clone()),
            Some(VectorMatchCardinality::ManyToMany) => (Card::ManyToMany, Vec::new()),
            Some(VectorMatchCardinality::OneToOne) | None => (Card::OneToOne, Vec::new()),
        };
        let fill = b.modifier.as_ref().map(|m| &m.fill_values);
        Self {
            on,
            labels,
            card,
            include,
            fill_lhs: fill.and_then(|f| f.lhs),
            fill_rhs: fill.and_then(|f| f.rhs),
        }
    }

    /// The join key of a series: its `on` labels, or all labels but the
    /// `ignoring` ones and the metric name, type and unit.
    fn signature(&self, labels: &[Label]) -> String {
        let mut sig = String::new();
        for l in labels {
            let keep = if self.on {
                self.labels.iter().any(|n| n == &l.name)
            } else {
                !is_metadata_label(&l.name) && !self.labels.iter().any(|n| n == &l.name)
            };
            if keep {
                sig.push_str(&l.name);
                sig.push('\u{ff}');
                sig.push_str(&l.value);
                sig.push('\u{ff}');
            }
        }
        sig
    }

    /// Prometheus' `Labels.MatchLabels`, used in error messages.
    fn match_labels(&self, labels: &[Label]) -> Vec<Label> {
        labels
            .iter()
            .filter(|l| {
                if self.on {
                    self.labels.iter().any(|n| n == &l.name)
                } else {
                    !is_metadata_label(&l.name) && !self.labels.iter().any(|n| n == &l.name)
                }
            })
            .cloned()
            .collect()
    }
}

impl Evaluator<'_> {
    pub fn eval_binary(&mut self, b: &BinaryExpr) -> Result<Matrix> {
        let op = b.op.id();
        let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
        let (lt, rt) = (b.lhs.value_type(), b.rhs.value_type());
        let args = [b.lhs.as_ref(), b.rhs.as_ref()];
        match (lt, rt) {
            (ValueType::Scalar, ValueType::Scalar) => self.range_eval(&args, &mut |v, _| {
                let (lhs, rhs) = operands(v);
                let (Some(l), Some(r)) = (lhs.first(), rhs.first()) else {
                    return Ok(Vec::new());
                };
                Ok(vec![Sample::float(
                    empty_labels(),
                    scalar_binop(op, l.v, r.v)?,
                )])
            }),
            (ValueType::Vector, ValueType::Vector) => {
                let set_op = matches!(op, T_LAND | T_LOR | T_LUNLESS);
                let matching = Matching::from_expr(b, set_op);
                let annos = self.annotations.clone();
                self.range_eval(&args, &mut |v, _| {
                    let (lhs, rhs) = operands(v);
                    match op {
                        T_LAND => Ok(vector_and(lhs, rhs, &matching)),
                        T_LOR => Ok(vector_or(lhs, rhs, &matching)),
                        T_LUNLESS => Ok(vector_unless(lhs, rhs, &matching)),
                        _ => vector_binop(op, lhs, rhs, &matching, return_bool, &annos),
                    }
                })
            }
            (ValueType::Vector, ValueType::Scalar) => {
                let annos = self.annotations.clone();
                self.range_eval(&args, &mut |v, _| {
                    let (vector, scalar) = operands(v);
                    match scalar.first() {
                        Some(s) => vector_scalar_binop(op, vector, s.v, false, return_bool, &annos),
                        None => Ok(Vec::new()),
                    }
                })
            }
            (ValueType::Scalar, ValueType::Vector) => {
                let annos = self.annotations.clone();
                self.range_eval(&args, &mut |v, _| {
                    let (scalar, vector) = operands(v);
                    match scalar.first() {
                        Some(s) => vector_scalar_binop(op, vector, s.v, true, return_bool, &annos),
                        None => Ok(Vec::new()),
                    }
                })
            }
            _ => Err(QueryError::exec(format!(
                "binary operator not allowed between {lt} and {rt}"
            ))),
        }
    }
}

/// The left and right operands at one step, of the two vectors
/// [`Evaluator::range_eval`] passes a binary operator.
fn operands(v: &[Vector]) -> (&[Sample], &[Sample]) {
    match v {
        [l, r] => (l, r),
        _ => (&[], &[]),
    }
}

fn is_comparison(op: u16) -> bool {
    matches!(op, T_EQLC | T_NEQ | T_GTR | T_LSS | T_GTE | T_LTE)
}

/// Whether the operator changes what the metric means, so its name goes.
fn changes_metric_schema(op: u16) -> bool {
    matches!(op, T_ADD | T_SUB | T_MUL | T_DIV | T_POW | T_MOD | T_ATAN2)
}

fn vector_scalar_binop(
    op: u16,
    vec: &[Sample],
    scalar: f64,
    swap: bool,
    return_bool: bool,
    annos: &Shared,
) -> Result<Vector> {
    let mut out = Vec::with_capacity(vec.len());
    let mut last_annotation = None;
    for s in vec {
        let (l, r) = if swap { (scalar, s.v) } else { (s.v, scalar) };
        let (mut value, mut histogram, mut keep) = match s.h.as_deref() {
            None if !is_trim(op) => {
                let (value, keep) = elem_binop(op, l, r)?;
                (value, None, keep)
            }
            h => {
                let (lh, rh) = if swap { (None, h) } else { (h, None) };
                match elem_binop_histogram(op, l, r, lh, rh) {
                    Ok(e) => (e.v, e.h, e.keep),
                    Err(text) => {
                        last_annotation = Some(text);
                        continue;
                    }
                }
            }
        };
        if is_comparison(op) && swap {
            value = r;
            histogram = s.h.as_deref().cloned();
        }
        if return_bool {
            value = bool_to_f64(keep);
            histogram = None;
            keep = true;
        }
        if keep {
            let labels = if changes_metric_schema(op) || return_bool {
                drop_metric_name(&s.labels)
            } else {
                s.labels.clone()
            };
            out.push(Sample {
                labels,
                v: value,
                h: histogram.map(Box::new),
            });
        }
    }
    if let Some(text) = last_annotation {
        annos.add(text);
    }
    Ok(out)
}

fn vector_and(lhs: &[Sample], rhs: &[Sample], m: &Matching) -> Vector {
    if lhs.is_empty() || rhs.is_empty() {
        return Vec::new();
    }
    let right: HashSet<String> = rhs.iter().map(|s| m.signature(&s.labels)).collect();
    lhs.iter()
        .filter(|s| right.contains(&m.signature(&s.labels)))
        .cloned()
        .collect()
}

fn vector_or(lhs: &[Sample], rhs: &[Sample], m: &Matching) -> Vector {
    if lhs.is_empty() {
        return rhs.to_vec();
    }
    if rhs.is_empty() {
        return lhs.to_vec();
    }
    let left: HashSet<String> = lhs.iter().map(|s| m.signature(&s.labels)).collect();
    let mut out = lhs.to_vec();
    out.extend(
        rhs.iter()
            .filter(|s| !left.contains(&m.signature(&s.labels)))
            .cloned(),
    );
    out
}

fn vector_unless(lhs: &[Sample], rhs: &[Sample], m: &Matching) -> Vector {
    if lhs.is_empty() || rhs.is_empty() {
        return lhs.to_vec();
    }
    let right: HashSet<String> = rhs.iter().map(|s| m.signature(&s.labels)).collect();
    lhs.iter()
        .filter(|s| !right.contains(&m.signature(&s.labels)))
        .cloned()
        .collect()
}

fn vector_binop(
    op: u16,
    lhs: &[Sample],
    rhs: &[Sample],
    m: &Matching,
    return_bool: bool,
    annos: &Shared,
) -> Result<Vector> {
    let filled = m.fill_lhs.is_some() || m.fill_rhs.is_some();
    if (lhs.is_empty() && rhs.is_empty()) || ((lhs.is_empty() || rhs.is_empty()) && !filled) {
        return Ok(Vec::new());
    }
    // Below, the right side is the "one" side; for one-to-many the sides
    // swap, and their fill values with them.
    let (lhs, rhs, fill_lhs, fill_rhs) = if m.card == Card::OneToMany {
        (rhs, lhs, m.fill_rhs, m.fill_lhs)
    } else {
        (lhs, rhs, m.fill_lhs, m.fill_rhs)
    };
    // The right side is the "one" side: its signatures must be unique.
    let mut right: HashMap<String, &Sample> = HashMap::with_capacity(rhs.len());
    for rs in rhs {
        let sig = m.signature(&rs.labels);
        if let Some(dup) = right.get(&sig) {
            let one_side = if m.card == Card::OneToMany {
                "left"
            } else {
                "right"
            };
            let mut pair = [labels_to_string(&rs.labels), labels_to_string(&dup.labels)];
            pair.sort();
            return Err(QueryError::exec(format!(
                "found duplicate series for the match group {} on the {} hand-side of the operation: [{}, {}];many-to-many matching not allowed: matching labels must be unique on one side",
                labels_to_string(&m.match_labels(&rs.labels)),
                one_side,
                pair[0],
                pair[1]
            )));
        }
        right.insert(sig, rs);
    }
    let mut join = Join {
        op,
        m,
        return_bool,
        matched_one: HashSet::new(),
        matched_many: HashMap::new(),
        out: Vec::new(),
        last_annotation: None,
    };
    for ls in lhs {
        let sig = m.signature(&ls.labels);
        match (right.get(&sig), fill_rhs) {
            (Some(rs), _) => join.pair(ls, rs, sig)?,
            (None, Some(fill)) => join.pair(ls, &m.fill_sample(&ls.labels, fill), sig)?,
            (None, None) => {}
        }
    }
    // Right-side series no left one matched meet the left fill value.
    if let Some(fill) = fill_lhs {
        for rs in rhs {
            let sig = m.signature(&rs.labels);
            if !join.matched(&sig) {
                join.pair(&m.fill_sample(&rs.labels, fill), rs, sig)?;
            }
        }
    }
    if let Some(text) = join.last_annotation {
        annos.add(text);
    }
    Ok(join.out)
}

impl Matching {
    /// The stand-in for a missing operand across from `other`: the fill
    /// value, labelled with `other`'s matching labels, as Prometheus does.
    fn fill_sample(&self, other: &[Label], value: f64) -> Sample {
        Sample::float(Labels::from(self.match_labels(other)), value)
    }
}

/// The state of one vector/vector operation at one step, as series of the
/// two sides are paired (`lhs` is the "many" side, `rhs` the "one").
struct Join<'a> {
    op: u16,
    m: &'a Matching,
    return_bool: bool,
    /// Signatures paired, for one-to-one matching.
    matched_one: HashSet<String>,
    /// Result labels per signature paired, for many-to-one matching.
    matched_many: HashMap<String, HashSet<Labels>>,
    out: Vector,
    last_annotation: Option<String>,
}

impl Join<'_> {
    /// Whether a pair of this signature was made.
    fn matched(&self, sig: &str) -> bool {
        if self.m.card == Card::OneToOne {
            self.matched_one.contains(sig)
        } else {
            self.matched_many.get(sig).is_some_and(|s| !s.is_empty())
        }
    }

    /// Applies the operator to a pair of series of signature `sig`, as
    /// Prometheus' `VectorBinop` does for each match.
    fn pair(&mut self, ls: &Sample, rs: &Sample, sig: String) -> Result<()> {
        let (op, m) = (self.op, self.m);
        let (fl, fr, hl, hr) = if m.card == Card::OneToMany {
            (rs.v, ls.v, rs.h.as_deref(), ls.h.as_deref())
        } else {
            (ls.v, rs.v, ls.h.as_deref(), rs.h.as_deref())
        };
        let (mut value, mut histogram, keep) = if hl.is_none() && hr.is_none() && !is_trim(op) {
            let (value, keep) = elem_binop(op, fl, fr)?;
            (value, None, keep)
        } else {
            match elem_binop_histogram(op, fl, fr, hl, hr) {
                Ok(e) => {
                    if e.info.is_some() {
                        self.last_annotation = e.info;
                    }
                    (e.v, e.h, e.keep)
                }
                Err(text) => {
                    self.last_annotation = Some(text);
                    return Ok(());
                }
            }
        };
        if self.return_bool {
            value = bool_to_f64(keep);
            histogram = None;
        }
        let metric = result_metric(&ls.labels, &rs.labels, op, m, self.return_bool);
        if m.card == Card::OneToOne {
            if !self.matched_one.insert(sig) {
                return Err(QueryError::exec(
                    "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)",
                ));
            }
        } else if !self
            .matched_many
            .entry(sig)
            .or_default()
            .insert(metric.clone())
        {
            return Err(QueryError::exec(
                "multiple matches for labels: grouping labels must ensure unique matches",
            ));
        }
        if keep || self.return_bool {
            self.out.push(Sample {
                labels: metric,
                v: value,
                h: histogram.map(Box::new),
            });
        }
        Ok(())
    }
}

/// The labels of a vector/vector result, as Prometheus' `resultMetric`.
fn result_metric(lhs: &[Label], rhs: &[Label], op: u16, m: &Matching, return_bool: bool) -> Labels {
    let drop_name = return_bool || changes_metric_schema(op);
    let mut out: Vec<Label> = lhs
        .iter()
        .filter(|l| !(drop_name && is_metadata_label(&l.name)))
        .filter(|l| {
            if m.card != Card::OneToOne {
                return true;
            }
            let listed = m.labels.iter().any(|n| n == &l.name);
            if m.on {
                listed
            } else {
                !listed
            }
        })
        .cloned()
        .collect();
    for name in &m.include {
        out.retain(|l| &l.name != name);
        let v = crate::value::get_label(rhs, name);
        if !v.is_empty() {
            let pos = out.partition_point(|l| l.name.as_str() < name.as_str());
            out.insert(pos, Label::new(name.clone(), v));
        }
    }
    Labels::from(out)
}
