//! `/api/v1/query_exemplars`: the exemplars of the series a query's
//! selectors select, in Prometheus' answer:
//! `[{"seriesLabels": {…}, "exemplars": [{"labels": {…}, "value": "…",
//! "timestamp": seconds}]}]`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use promql_parser::parser::{Expr, VectorSelector};
use strata_codec::{Label, SeriesExemplars};

use super::{json, read_params, respond, time_range, Api};
use crate::engine::parse_query;
use crate::error::QueryError;
use crate::plan::matcher_sets;

pub(super) async fn query_exemplars(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let (start, end) = time_range(&p)?;
            if end < start {
                return Err(QueryError::BadData(
                    "end timestamp must not be before start timestamp".into(),
                ));
            }
            let expr = parse_query(p.get("query"), api.limits.max_regex_bytes)?;
            let mut selectors = Vec::new();
            selectors_of(&expr, &mut selectors);
            let mut sets = Vec::new();
            for vs in selectors {
                sets.extend(matcher_sets(vs, api.limits.max_regex_bytes)?);
            }
            let found = if sets.is_empty() {
                Vec::new()
            } else {
                engine.source().exemplars(&sets, start, end).await?
            };
            Ok(write(&found))
        }
        .await,
    )
}

/// Every vector selector of `expr`, those of range selectors and
/// subqueries included (Prometheus' `parser.ExtractSelectors`).
fn selectors_of<'a>(expr: &'a Expr, out: &mut Vec<&'a VectorSelector>) {
    match expr {
        Expr::VectorSelector(vs) => out.push(vs),
        Expr::MatrixSelector(ms) => out.push(&ms.vs),
        Expr::Subquery(sq) => selectors_of(&sq.expr, out),
        Expr::Aggregate(a) => {
            if let Some(p) = &a.param {
                selectors_of(p, out);
            }
            selectors_of(&a.expr, out);
        }
        Expr::Unary(u) => selectors_of(&u.expr, out),
        Expr::Binary(b) => {
            selectors_of(&b.lhs, out);
            selectors_of(&b.rhs, out);
        }
        Expr::Paren(p) => selectors_of(&p.expr, out),
        Expr::Call(c) => {
            for a in &c.args.args {
                selectors_of(a, out);
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

fn write(found: &[SeriesExemplars]) -> String {
    let mut out = String::from("[");
    for (i, s) in found.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"seriesLabels\":");
        json::write_labels(&mut out, &s.labels);
        out.push_str(",\"exemplars\":[");
        for (j, e) in s.exemplars.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            // Label sets print sorted by name, as Prometheus' do.
            let mut labels: Vec<Label> = e.labels.clone();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            out.push_str("{\"labels\":");
            json::write_labels(&mut out, &labels);
            out.push_str(",\"value\":");
            json::write_value(&mut out, e.v);
            out.push_str(",\"timestamp\":");
            json::write_timestamp(&mut out, e.t);
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_codec::Exemplar;

    #[test]
    fn selectors_are_found_everywhere() {
        let expr = parse_query(
            "sum(rate(a[5m])) / on() b + max_over_time(c{x=\"1\"}[1h:1m]) or -d offset 1m",
            1 << 20,
        )
        .unwrap();
        let mut found = Vec::new();
        selectors_of(&expr, &mut found);
        let names: Vec<&str> = found.iter().filter_map(|vs| vs.name.as_deref()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        let (literal, mut none) = (parse_query("1 + 2", 1 << 20).unwrap(), Vec::new());
        selectors_of(&literal, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn writes_prometheus_answer() {
        let found = vec![SeriesExemplars {
            labels: vec![Label::new("__name__", "m"), Label::new("job", "api")],
            exemplars: vec![Exemplar {
                labels: vec![Label::new("trace_id", "abc"), Label::new("span_id", "1")],
                t: 1_600_096_945_479,
                v: 6.0,
            }],
        }];
        assert_eq!(
            write(&found),
            "[{\"seriesLabels\":{\"__name__\":\"m\",\"job\":\"api\"},\"exemplars\":[\
             {\"labels\":{\"span_id\":\"1\",\"trace_id\":\"abc\"},\"value\":\"6\",\
             \"timestamp\":1600096945.479}]}]"
        );
        assert_eq!(write(&[]), "[]");
    }
}
