//! The Prometheus HTTP query API (`/api/v1/query`, `query_range`,
//! `format_query`, `series`, `labels`, `label/{name}/values`, `metadata`,
//! `query_exemplars`),
//! with Prometheus' JSON envelope, error types and status codes.

mod exemplars;
pub mod json;
mod label_name;
mod limit;
mod multipart;
pub mod params;
mod tsdb_status;

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use promql_parser::parser::Expr;
use strata_codec::{Label, Matcher};

use self::params::{
    parse_duration, parse_time, parse_time_param, LongUrlQuery, Params, MAX_TIME_MS, MIN_TIME_MS,
};
use crate::annotations::Annotations;
use crate::engine::{parse_query, too_many_points_message, QueryStats};
use crate::error::QueryError;
use strata_codec::clock::Clock as _;

use crate::plan::matcher_sets;
use crate::{Engine, QueryGate, QueryLimits, QueryValue, Queryable};

/// Largest form body accepted (Prometheus' default is unlimited; queries
/// are small).
const MAX_BODY_BYTES: usize = 16 << 20;

/// Picks the data a request may read (e.g. its tenant's), from the
/// request's headers and extensions; an error is answered as is.
pub type SourceResolver =
    Arc<dyn Fn(&Request) -> Result<Arc<dyn Queryable>, QueryError> + Send + Sync>;

struct Api {
    resolve: SourceResolver,
    limits: QueryLimits,
    /// Shared by every request's engine: turns and the samples budget.
    gate: Arc<QueryGate>,
}

impl Api {
    fn engine(&self, req: &Request) -> Result<Engine, QueryError> {
        Ok(Engine::with_gate(
            (self.resolve)(req)?,
            self.limits.clone(),
            Arc::clone(&self.gate),
        ))
    }
}

/// The API's routes over `source`, each answering GET and form POST
/// (URL-encoded or multipart).
pub fn router(source: Arc<dyn Queryable>, limits: QueryLimits) -> Router {
    router_with(Arc::new(move |_: &Request| Ok(Arc::clone(&source))), limits)
}

/// The API's routes, reading for each request what `resolve` picks.
pub fn router_with(resolve: SourceResolver, limits: QueryLimits) -> Router {
    let gate = Arc::new(QueryGate::new(&limits));
    let api = Arc::new(Api {
        resolve,
        limits,
        gate,
    });
    Router::new()
        .route("/api/v1/query", get(query).post(query))
        .route("/api/v1/query_range", get(query_range).post(query_range))
        .route("/api/v1/format_query", get(format_query).post(format_query))
        .route("/api/v1/series", get(series).post(series))
        .route("/api/v1/labels", get(labels).post(labels))
        .route(
            "/api/v1/label/{name}/values",
            get(label_values).post(label_values),
        )
        .route("/api/v1/metadata", get(metadata).post(metadata))
        .route(
            "/api/v1/status/tsdb",
            get(tsdb_status::tsdb_status).post(tsdb_status::tsdb_status),
        )
        .route(
            "/api/v1/query_exemplars",
            get(exemplars::query_exemplars).post(exemplars::query_exemplars),
        )
        .with_state(api)
}

/// A successful response with `data` already encoded as JSON.
pub fn success(data: &str) -> Response {
    let body = format!("{{\"status\":\"success\",\"data\":{data}}}");
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The Prometheus `errorType` and HTTP status of an error.
pub fn error_type_and_status(e: &QueryError) -> (&'static str, StatusCode) {
    match e {
        QueryError::BadData(_) => ("bad_data", StatusCode::BAD_REQUEST),
        QueryError::Execution(_) => ("execution", StatusCode::UNPROCESSABLE_ENTITY),
        QueryError::Timeout(_) => ("timeout", StatusCode::SERVICE_UNAVAILABLE),
        QueryError::Canceled(_) => (
            "canceled",
            StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        ),
        QueryError::Unavailable(_) => ("unavailable", StatusCode::SERVICE_UNAVAILABLE),
        QueryError::Internal(_) => ("internal", StatusCode::INTERNAL_SERVER_ERROR),
    }
}

fn error(e: &QueryError) -> Response {
    let (typ, status) = error_type_and_status(e);
    let mut body = String::from("{\"status\":\"error\",\"errorType\":\"");
    body.push_str(typ);
    body.push_str("\",\"error\":");
    json::write_str(&mut body, &e.to_string());
    body.push('}');
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A query's answer: a matrix streamed as it is written, any other value
/// written whole.
fn respond_value(r: Result<(QueryValue, Option<QueryStats>, Annotations), QueryError>) -> Response {
    let stats = |s: Option<QueryStats>| {
        s.map(|s| {
            let mut out = String::new();
            json::write_stats(&mut out, &s);
            out
        })
    };
    match r {
        Ok((QueryValue::Matrix(m), s, annos)) => {
            let chunks = json::MatrixChunks::new(m)
                .with_stats(stats(s))
                .with_annotations(annos)
                .map(Ok::<_, std::convert::Infallible>);
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                axum::body::Body::from_stream(futures::stream::iter(chunks)),
            )
                .into_response()
        }
        Ok((v, s, annos)) => {
            let mut out = String::new();
            json::write_query_data(&mut out, &v);
            if let Some(s) = stats(s) {
                out.pop();
                out.push_str(",\"stats\":");
                out.push_str(&s);
                out.push('}');
            }
            respond_annotated(Ok((out, annos)))
        }
        Err(e) => respond(Err(e)),
    }
}

/// A successful answer ending with the `warnings` and `infos` of its
/// annotations, or an error.
fn respond_annotated(r: Result<(String, Annotations), QueryError>) -> Response {
    match r {
        Ok((data, annos)) if annos.is_empty() => success(&data),
        Ok((data, annos)) => {
            let mut body = String::from("{\"status\":\"success\",\"data\":");
            body.push_str(&data);
            json::write_annotations(&mut body, &annos);
            body.push('}');
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response()
        }
        Err(e) => respond(Err(e)),
    }
}

/// Annotations holding only Prometheus' truncation warning, if `truncated`.
fn truncation(truncated: bool) -> Annotations {
    let mut annos = Annotations::default();
    if truncated {
        annos.add(limit::TRUNCATED.into());
    }
    annos
}

/// Whether the request asks for `stats` (Prometheus' `stats=all`, or any
/// other non-empty value).
fn wants_stats(p: &Params) -> bool {
    !p.get("stats").is_empty()
}

fn respond(r: Result<String, QueryError>) -> Response {
    match r {
        Ok(data) => success(&data),
        Err(e) => {
            tracing::debug!(error = %e, "query API error");
            error(&e)
        }
    }
}

/// Reads the URL query (or the [`LongUrlQuery`] standing in for it) and,
/// for a POST, a URL-encoded or multipart form body.
pub async fn read_params(req: Request) -> Result<Params, QueryError> {
    let query = match req.extensions().get::<LongUrlQuery>() {
        Some(long) => Some(long.0.clone()),
        None => req.uri().query().map(str::to_owned),
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let multipart = multipart::form_data_boundary(content_type);
    let urlencoded = content_type.starts_with("application/x-www-form-urlencoded");
    if req.method() != Method::POST || (multipart.is_none() && !urlencoded) {
        return Ok(Params::parse(query.as_deref(), Vec::new()));
    }
    let form_error = |e: String| QueryError::BadData(format!("error parsing form values: {e}"));
    let body = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|e| form_error(e.to_string()))?;
    let values = match multipart {
        Some(boundary) => {
            multipart::parse_form_data(&body, &boundary.map_err(form_error)?).map_err(form_error)?
        }
        None => url::form_urlencoded::parse(&body).into_owned().collect(),
    };
    Ok(Params::parse(query.as_deref(), values))
}

fn invalid_param(name: &str, e: impl std::fmt::Display) -> QueryError {
    QueryError::BadData(format!("invalid parameter {name:?}: {e}"))
}

/// A query's `lookback_delta`: a duration or float seconds, zero (the
/// engine's default) when absent or not positive, with Prometheus' message
/// when it does not parse.
fn lookback_delta(p: &Params) -> Result<std::time::Duration, QueryError> {
    match p.get("lookback_delta") {
        "" => Ok(std::time::Duration::ZERO),
        s => parse_duration(s).map_err(|e| {
            QueryError::BadData(format!("error parsing lookback delta duration: {e}"))
        }),
    }
}

fn now_ms() -> i64 {
    strata_codec::clock::SystemClock.now_ms()
}

async fn query(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond_value(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = limit::parse_limit(p.get("limit"))?;
            let t = parse_time_param(&p, "time", now_ms())?;
            let timeout = match p.get("timeout") {
                "" => None,
                s => Some(parse_duration(s).map_err(|e| invalid_param("timeout", e))?),
            };
            let engine = engine.with_lookback(lookback_delta(&p)?);
            let (mut v, stats) = engine
                .instant_query_stats(p.get("query"), t, timeout)
                .await?;
            let mut annos = stats.annotations.clone();
            annos.merge(truncation(limit::truncate_value(&mut v, limit)));
            Ok((v, wants_stats(&p).then_some(stats), annos))
        }
        .await,
    )
}

/// `format_query`: the expression as Prometheus' pretty-printer writes it.
async fn format_query(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond(
        async {
            let p = read_params(req).await?;
            let expr = parse_query(p.get("query"), api.limits.max_regex_bytes)?;
            // As for parsing: a panic in the library is a bad answer, not a
            // dropped connection. Nothing reads `expr` after one.
            let prettify = std::panic::AssertUnwindSafe(|| expr.prettify());
            let pretty = std::panic::catch_unwind(prettify).map_err(|_| {
                QueryError::Internal("the expression could not be pretty-printed".into())
            })?;
            let mut out = String::new();
            json::write_str(&mut out, &pretty);
            Ok(out)
        }
        .await,
    )
}

async fn query_range(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond_value(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = limit::parse_limit(p.get("limit"))?;
            let start = parse_time(p.get("start")).map_err(|e| invalid_param("start", e))?;
            let end = parse_time(p.get("end")).map_err(|e| invalid_param("end", e))?;
            if end < start {
                return Err(invalid_param(
                    "end",
                    "end timestamp must not be before start time",
                ));
            }
            let step = parse_duration(p.get("step")).map_err(|e| invalid_param("step", e))?;
            let step_ms = i64::try_from(step.as_millis()).unwrap_or(i64::MAX);
            if step.is_zero() || step_ms <= 0 {
                return Err(invalid_param(
                    "step",
                    "zero or negative query resolution step widths are not accepted. Try a positive integer",
                ));
            }
            let max_points = engine.limits().max_points_per_series;
            if end.saturating_sub(start) / step_ms > max_points as i64 {
                return Err(QueryError::BadData(too_many_points_message(max_points)));
            }
            let timeout = match p.get("timeout") {
                "" => None,
                s => Some(parse_duration(s).map_err(|e| invalid_param("timeout", e))?),
            };
            let engine = engine.with_lookback(lookback_delta(&p)?);
            let answer = engine.range_query_stats(p.get("query"), start, end, step_ms, timeout);
            let (mut v, stats) = answer.await?;
            let mut annos = stats.annotations.clone();
            annos.merge(truncation(limit::truncate_value(&mut v, limit)));
            Ok((v, wants_stats(&p).then_some(stats), annos))
        }
        .await,
    )
}

/// The `match[]` selectors of a request, one matcher list per selector
/// (and per `or` branch), their patterns at most `max_regex_bytes` long.
pub fn parse_match_params(
    values: &[&str],
    max_regex_bytes: usize,
) -> Result<Vec<Vec<Matcher>>, QueryError> {
    let mut sets = Vec::new();
    for v in values {
        let expr = parse_query(v, max_regex_bytes).map_err(|e| {
            if e.to_string().contains("max_regex_bytes") {
                QueryError::BadData(format!("invalid parameter \"match[]\": {e}"))
            } else if e.to_string().contains("at least one non-empty matcher") {
                QueryError::BadData("match[] must contain at least one non-empty matcher".into())
            } else {
                QueryError::BadData(format!(
                    "invalid parameter \"match[]\": 1:1: parse error: invalid selector {v:?}"
                ))
            }
        })?;
        let Expr::VectorSelector(vs) = expr else {
            return Err(QueryError::BadData(format!(
                "invalid parameter \"match[]\": 1:1: parse error: expected a selector, got {v:?}"
            )));
        };
        let sets_of_selector = matcher_sets(&vs, max_regex_bytes)
            .map_err(|e| QueryError::BadData(format!("invalid parameter \"match[]\": {e}")))?;
        for set in sets_of_selector {
            if set.iter().all(Matcher::matches_empty) {
                return Err(QueryError::BadData(
                    "match[] must contain at least one non-empty matcher".into(),
                ));
            }
            sets.push(set);
        }
    }
    Ok(sets)
}

fn time_range(p: &Params) -> Result<(i64, i64), QueryError> {
    Ok((
        parse_time_param(p, "start", MIN_TIME_MS)?,
        parse_time_param(p, "end", MAX_TIME_MS)?,
    ))
}

async fn series(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond_annotated(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let matches = p.all("match[]");
            if matches.is_empty() {
                return Err(QueryError::BadData("no match[] parameter provided".into()));
            }
            let limit = limit::parse_limit(p.get("limit"))?;
            let (start, end) = time_range(&p)?;
            let sets = parse_match_params(&matches, api.limits.max_regex_bytes)?;
            let mut all: BTreeSet<Vec<Label>> = BTreeSet::new();
            for set in &sets {
                all.extend(engine.source().series(set, start, end).await?);
            }
            let mut all: Vec<Vec<Label>> = all.into_iter().collect();
            let annos = truncation(limit::truncate(&mut all, limit));
            let mut out = String::from("[");
            for (i, labels) in all.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_labels(&mut out, labels);
            }
            out.push(']');
            Ok((out, annos))
        }
        .await,
    )
}

async fn labels(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond_annotated(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = limit::parse_limit(p.get("limit"))?;
            let (start, end) = time_range(&p)?;
            let sets = parse_match_params(&p.all("match[]"), api.limits.max_regex_bytes)?;
            let mut names: BTreeSet<String> = BTreeSet::new();
            if sets.is_empty() {
                names.extend(engine.source().label_names(&[], start, end).await?);
            }
            for set in &sets {
                names.extend(engine.source().label_names(set, start, end).await?);
            }
            let mut names: Vec<String> = names.into_iter().collect();
            let annos = truncation(limit::truncate(&mut names, limit));
            let mut out = String::new();
            json::write_str_list(&mut out, &names);
            Ok((out, annos))
        }
        .await,
    )
}

/// `/api/v1/label/{name}/values`. The name is read from the path as sent,
/// not by the router's extractor, which refuses a segment that is not
/// UTF-8 with a plain-text answer: Prometheus answers `bad_data`.
async fn label_values(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond_annotated(
        async {
            let segment = req.uri().path().rsplit('/').nth(1).unwrap_or("");
            let name = label_name::from_path_segment(segment)?;
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = limit::parse_limit(p.get("limit"))?;
            let (start, end) = time_range(&p)?;
            let sets = parse_match_params(&p.all("match[]"), api.limits.max_regex_bytes)?;
            let mut values: BTreeSet<String> = BTreeSet::new();
            if sets.is_empty() {
                values.extend(engine.source().label_values(&name, &[], start, end).await?);
            }
            for set in &sets {
                values.extend(engine.source().label_values(&name, set, start, end).await?);
            }
            let mut values: Vec<String> = values.into_iter().collect();
            let annos = truncation(limit::truncate(&mut values, limit));
            let mut out = String::new();
            json::write_str_list(&mut out, &values);
            Ok((out, annos))
        }
        .await,
    )
}

/// `/api/v1/metadata`: `{"<metric>": [{"type", "unit", "help"}, …]}`, in
/// Prometheus' field order, with its `metric`, `limit` and
/// `limit_per_metric` parameters (a negative or absent limit is none).
async fn metadata(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = |name: &str| -> Result<Option<usize>, QueryError> {
                match p.get(name) {
                    "" => Ok(None),
                    v => v
                        .parse::<i64>()
                        .map(|n| usize::try_from(n).ok().filter(|&n| n > 0))
                        .map_err(|_| {
                            QueryError::BadData(format!(
                                "invalid parameter \"{name}\": {v:?} is not a number"
                            ))
                        }),
                }
            };
            let (limit, per_metric) = (limit("limit")?, limit("limit_per_metric")?);
            let metric = Some(p.get("metric")).filter(|m| !m.is_empty());
            let all = engine.source().metadata("", metric).await?;
            let mut out = String::from("{");
            for (i, (name, entries)) in all.iter().take(limit.unwrap_or(usize::MAX)).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_str(&mut out, name);
                out.push_str(":[");
                for (j, e) in entries
                    .iter()
                    .take(per_metric.unwrap_or(usize::MAX))
                    .enumerate()
                {
                    if j > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"type\":");
                    json::write_str(&mut out, &e.kind);
                    out.push_str(",\"unit\":");
                    json::write_str(&mut out, &e.unit);
                    out.push_str(",\"help\":");
                    json::write_str(&mut out, &e.help);
                    out.push('}');
                }
                out.push(']');
            }
            out.push('}');
            Ok(out)
        }
        .await,
    )
}
