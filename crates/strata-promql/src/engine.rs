//! The query engine: parse, check, load every selector's data once for the
//! whole query, evaluate, shape the result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use promql_parser::parser::value::ValueType;
use promql_parser::parser::Expr;

pub use crate::duration_expr::DurationContext;
use crate::error::QueryError;
use crate::eval::reduce::{series_map, FirstError, QuerySteps};
use crate::eval::{Evaluator, Loaded, SelectorData};
use crate::gate::{QueryGate, Reservation};
pub use crate::parse::{parse_query, parse_query_in, ParseOptions, MAX_EXPR_DEPTH, MAX_OPERATORS};
use crate::plan::{check_supported, plan_selectors, SelectorLoad};
use crate::source::{Queryable, Series};
use crate::value::{InstantSample, QueryValue};

/// Prometheus' default lookback delta (5 minutes).
pub const DEFAULT_LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// Step of subqueries written without one (`[1h:]`), Prometheus' default
/// global evaluation interval.
pub const DEFAULT_SUBQUERY_STEP_MS: i64 = 60 * 1000;

/// Limits every query runs under.
#[derive(Clone, Debug)]
pub struct QueryLimits {
    /// Longest a query may run (a request's `timeout` can only shorten it).
    pub timeout: Duration,
    /// Most samples a query may hold in memory at once.
    pub max_samples: usize,
    /// Most points a range query may return per series.
    pub max_points_per_series: usize,
    /// Longest pattern, in bytes, of a `=~` or `!~` matcher, in a query or
    /// in a `match[]` selector. A longer one is refused (400 `bad_data`)
    /// before it is compiled.
    ///
    /// The default, 64 KiB, is far above hand-written patterns and leaves
    /// room for the alternations dashboards build from multi-value
    /// variables (some two thousand host names). Compiling costs time and
    /// memory in proportion to the pattern, so a pattern of megabytes would
    /// be a cheap way to keep a server busy; whatever the length, the
    /// compiled size is bounded by [`strata_codec::labels::REGEX_SIZE_LIMIT`].
    pub max_regex_bytes: usize,
    /// Most points a subquery may evaluate per series: its range (plus a
    /// range query's span) over its step. A subquery over it is refused
    /// (400 `bad_data`) before it runs.
    pub max_subquery_points: usize,
    /// Most queries that run at once; the others wait their turn, within
    /// their timeout.
    pub max_concurrent: usize,
    /// Most samples all running queries may hold loaded at once; a query
    /// that would go over it is answered 503 (`unavailable`).
    pub max_samples_total: usize,
    /// Whether the functions and aggregations Prometheus 3.16 keeps behind
    /// `--enable-feature=promql-experimental-functions` (`limitk`,
    /// `sort_by_label`, `mad_over_time`, ...) are evaluated. Off, a query
    /// using one is refused with Prometheus' parse error. On by default:
    /// Grafana sends `limitk` and `sort_by_label`.
    pub experimental_functions: bool,
    /// Whether the `fill`, `fill_left` and `fill_right` modifiers of binary
    /// operators, which Prometheus 3.16 keeps behind
    /// `--enable-feature=promql-binop-fill-modifiers`, are evaluated. Off,
    /// a query using one is refused with Prometheus' parse error.
    pub binop_fill_modifiers: bool,
    /// Whether the `anchored` and `smoothed` selector modifiers are
    /// evaluated (Prometheus' `promql-extended-range-selectors`, always on
    /// since 3.16). Off, a query using one is refused with the parse error
    /// Prometheus gave while the flag was off.
    pub extended_range_selectors: bool,
    /// Whether duration expressions (`x[5m * 2]`, `y offset step()`) are
    /// evaluated (Prometheus' `promql-duration-expr`, always on since
    /// 3.16). Off, a query using one is refused with the parse error
    /// Prometheus gave while the flag was off.
    pub duration_expr: bool,
    /// Whether unquoted metric and label names may hold dots and Unicode
    /// letters (`http.requests{service.name="a"}`), as with Prometheus'
    /// `--enable-feature=promql-unquoted-utf8-names`. Off, such a query is
    /// the parse error it is without the flag.
    pub unquoted_utf8_names: bool,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            max_samples: 50_000_000,
            max_points_per_series: 11_000,
            max_regex_bytes: 64 << 10,
            max_subquery_points: 100_000,
            max_concurrent: 20,
            max_samples_total: 100_000_000,
            experimental_functions: true,
            binop_fill_modifiers: true,
            extended_range_selectors: true,
            duration_expr: true,
            unquoted_utf8_names: true,
        }
    }
}

/// Evaluates PromQL against a [`Queryable`].
#[derive(Clone)]
pub struct Engine {
    source: Arc<dyn Queryable>,
    limits: QueryLimits,
    lookback_ms: i64,
    gate: Arc<QueryGate>,
}

impl Engine {
    /// An engine whose queries share only its own gate.
    pub fn new(source: Arc<dyn Queryable>, limits: QueryLimits) -> Self {
        let gate = Arc::new(QueryGate::new(&limits));
        Self::with_gate(source, limits, gate)
    }

    /// An engine whose queries take their turns and samples from `gate`,
    /// shared with other engines (one per request on a server).
    pub fn with_gate(
        source: Arc<dyn Queryable>,
        limits: QueryLimits,
        gate: Arc<QueryGate>,
    ) -> Self {
        Self {
            source,
            limits,
            lookback_ms: DEFAULT_LOOKBACK_MS,
            gate,
        }
    }

    /// The engine with queries looking back `lookback` (Prometheus'
    /// `lookback_delta`) for an instant selector's latest sample instead of
    /// [`DEFAULT_LOOKBACK_MS`]; zero keeps the default, as in Prometheus. A
    /// part of a millisecond is dropped, as Prometheus drops it.
    pub fn with_lookback(mut self, lookback: Duration) -> Self {
        if !lookback.is_zero() {
            self.lookback_ms = i64::try_from(lookback.as_millis()).unwrap_or(i64::MAX);
        }
        self
    }

    pub fn limits(&self) -> &QueryLimits {
        &self.limits
    }

    pub fn source(&self) -> &Arc<dyn Queryable> {
        &self.source
    }

    /// An instant query at `time_ms`.
    pub async fn instant_query(
        &self,
        query: &str,
        time_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<QueryValue, QueryError> {
        Ok(self.instant_query_stats(query, time_ms, timeout).await?.0)
    }

    /// [`Engine::instant_query`], with what it cost.
    pub async fn instant_query_stats(
        &self,
        query: &str,
        time_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<(QueryValue, QueryStats), QueryError> {
        let expr = Box::new(self.parse(query, DurationContext::default())?);
        if expr.value_type() == ValueType::String {
            let v = QueryValue::String {
                t: time_ms,
                v: string_value(&expr),
            };
            return Ok((v, QueryStats::default()));
        }
        let deadline = self.deadline(timeout);
        let value_type = expr.value_type();
        let string = string_value(&expr);
        let (result, stats) = self.exec(expr, time_ms, time_ms, 1, deadline).await?;
        let value = match value_type {
            ValueType::Vector => QueryValue::Vector(
                result
                    .into_iter()
                    .filter_map(|s| {
                        if let Some((_, h)) = s.histograms.into_iter().next() {
                            return Some(InstantSample {
                                labels: s.labels,
                                t: time_ms,
                                v: 0.0,
                                h: Some(Box::new(h)),
                            });
                        }
                        let p = s.points.first()?;
                        Some(InstantSample {
                            labels: s.labels,
                            t: time_ms,
                            v: p.v,
                            h: None,
                        })
                    })
                    .collect(),
            ),
            ValueType::Scalar => QueryValue::Scalar {
                t: time_ms,
                v: result
                    .first()
                    .and_then(|s| s.points.first())
                    .map_or(f64::NAN, |p| p.v),
            },
            ValueType::Matrix => QueryValue::Matrix(result),
            ValueType::String => QueryValue::String {
                t: time_ms,
                v: string,
            },
        };
        Ok((value, stats))
    }

    /// A range query from `start_ms` to `end_ms` every `step_ms`.
    pub async fn range_query(
        &self,
        query: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<QueryValue, QueryError> {
        let answer = self.range_query_stats(query, start_ms, end_ms, step_ms, timeout);
        Ok(answer.await?.0)
    }

    /// [`Engine::range_query`], with what it cost.
    pub async fn range_query_stats(
        &self,
        query: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<(QueryValue, QueryStats), QueryError> {
        if step_ms <= 0 {
            return Err(QueryError::BadData(
                "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
            ));
        }
        if end_ms < start_ms {
            return Err(QueryError::BadData(
                "invalid parameter \"end\": end timestamp must not be before start time".into(),
            ));
        }
        if end_ms.saturating_sub(start_ms) / step_ms > self.limits.max_points_per_series as i64 {
            return Err(QueryError::BadData(too_many_points_message(
                self.limits.max_points_per_series,
            )));
        }
        let durations = DurationContext {
            step_ms,
            range_ms: end_ms - start_ms,
        };
        let expr = Box::new(self.parse(query, durations)?);
        match expr.value_type() {
            ValueType::Vector | ValueType::Scalar => {}
            t => {
                let name = match t {
                    ValueType::Matrix => "range vector",
                    ValueType::String => "string",
                    _ => "unknown",
                };
                return Err(QueryError::BadData(format!(
                    "invalid parameter \"query\": invalid expression type \"{name}\" for range query, must be Scalar or instant Vector"
                )));
            }
        }
        let deadline = self.deadline(timeout);
        let (mut result, stats) = self.exec(expr, start_ms, end_ms, step_ms, deadline).await?;
        result.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok((QueryValue::Matrix(result), stats))
    }

    /// [`parse_query_in`] under this engine's limits.
    fn parse(&self, query: &str, durations: DurationContext) -> Result<Expr, QueryError> {
        let options = ParseOptions {
            durations: self.limits.duration_expr.then_some(durations),
            unquoted_utf8_names: self.limits.unquoted_utf8_names,
        };
        parse_query_in(query, self.limits.max_regex_bytes, options)
    }

    fn deadline(&self, timeout: Option<Duration>) -> Instant {
        let t = timeout.map_or(self.limits.timeout, |t| t.min(self.limits.timeout));
        Instant::now() + t
    }

    async fn exec(
        &self,
        expr: Box<Expr>,
        start: i64,
        end: i64,
        interval: i64,
        deadline: Instant,
    ) -> Result<(crate::value::Matrix, QueryStats), QueryError> {
        let began = Instant::now();
        check_supported(&expr, &self.limits)?;
        let mut expr = expr;
        crate::eval::query_context::fold(&mut expr, start, end, interval);
        let loads = plan_selectors(&expr, start, end, self.lookback_ms, &self.limits)?;
        let _turn = self.gate.turn(deadline).await?;
        let queued = began.elapsed();
        let steps = QuerySteps {
            start,
            end,
            interval,
            lookback: self.lookback_ms,
            deadline: Some(deadline),
            max_samples: self.limits.max_samples,
        };
        let loading = Instant::now();
        let annotations = crate::annotations::Shared::default();
        // Each selector's samples are taken from the budget all running
        // queries share as it arrives, so a query over it stops loading
        // then, not once everything is in memory.
        let (data, _reservations) = tokio::time::timeout_at(
            deadline.into(),
            self.load(loads, steps, annotations.clone()),
        )
        .await
        .map_err(|_| QueryError::timeout())??;
        let load_time = loading.elapsed();
        let loaded: usize = data
            .values()
            .flat_map(|v| v.series.iter())
            .map(|s| s.timestamps.len() + s.histograms.len())
            .sum();
        if loaded > self.limits.max_samples {
            return Err(QueryError::too_many_samples());
        }
        let lookback = self.lookback_ms;
        let max_samples = self.limits.max_samples;
        // Evaluation is CPU-bound: keep it off the async workers. The
        // selector data is keyed by node address, which the boxed AST keeps
        // stable across the move.
        let evaluating = Instant::now();
        let eval_annotations = annotations.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut ev = Evaluator {
                start,
                end,
                interval,
                query_start: start,
                query_end: end,
                lookback,
                data: &data,
                deadline: Some(deadline),
                max_samples,
                current_samples: 0,
                peak_samples: 0,
                default_subquery_step: DEFAULT_SUBQUERY_STEP_MS,
                annotations: eval_annotations,
            };
            let matrix = ev.eval_matrix(&expr)?;
            Ok::<_, QueryError>((matrix, ev.peak_samples))
        });
        let (matrix, eval_peak) = task
            .await
            .map_err(|e| QueryError::Internal(format!("query evaluation failed: {e}")))??;
        let stats = QueryStats {
            loaded_samples: loaded,
            peak_samples: loaded.max(eval_peak),
            queue_time: queued,
            load_time,
            eval_time: evaluating.elapsed(),
            total_time: began.elapsed(),
            annotations: annotations.take(),
        };
        Ok((matrix, stats))
    }

    /// Reads every selector's series, all selectors at once; those the plan
    /// reduces are reduced to their points at `steps` as they are read.
    async fn load(
        &self,
        loads: Vec<SelectorLoad>,
        steps: QuerySteps,
        annotations: crate::annotations::Shared,
    ) -> Result<(SelectorData, Vec<Reservation<'_>>), QueryError> {
        let futures = loads.into_iter().map(|l| {
            let source = self.source.clone();
            let annotations = annotations.clone();
            let gate = &self.gate;
            async move {
                let error = FirstError::default();
                let map = l
                    .reduce
                    .map(|r| series_map(r, steps, error.clone(), annotations.clone()));
                let mut all: Vec<Series> = Vec::new();
                for matchers in &l.matcher_sets {
                    let mut got = match &map {
                        Some(map) => {
                            source
                                .select_mapped(matchers, l.mint, l.maxt, map.clone())
                                .await?
                        }
                        None => source.select(matchers, l.mint, l.maxt).await?,
                    };
                    if let Some(e) = error.lock().ok().and_then(|mut e| e.take()) {
                        return Err(e);
                    }
                    if l.matcher_sets.len() > 1 {
                        got.retain(|s| !all.iter().any(|a| a.labels == s.labels));
                    }
                    all.extend(got);
                }
                let samples: usize = all
                    .iter()
                    .map(|s| s.timestamps.len() + s.histograms.len())
                    .sum();
                let reservation = gate.reserve(samples)?;
                // Prometheus evaluates series in label order.
                all.sort_by(|a, b| a.labels.cmp(&b.labels));
                let loaded = Loaded {
                    series: all,
                    reduced: l.reduce.is_some(),
                };
                Ok::<_, QueryError>(((l.key, loaded), reservation))
            }
        });
        let loaded = futures::future::try_join_all(futures).await?;
        let (data, reservations) = loaded.into_iter().unzip();
        Ok((data, reservations))
    }
}

fn string_value(expr: &Expr) -> String {
    match crate::eval::unwrap_parens(expr) {
        Expr::StringLiteral(s) => s.val.clone(),
        _ => String::new(),
    }
}

/// What a query cost: the `stats` a query answers with when asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Samples the selectors loaded (a selector the plan reduces to its
    /// steps while reading counts its reduced points).
    pub loaded_samples: usize,
    /// The most samples counted against `max_samples` at once (Prometheus'
    /// `peakSamples`): the larger of `loaded_samples`, all read before
    /// evaluating, and the evaluation's running count of the samples its
    /// results and selector windows hold (Prometheus' `currentSamples`).
    /// The loaded samples stay in memory while evaluating, so the memory
    /// held at once can reach the sum of the two.
    pub peak_samples: usize,
    /// Waiting for a turn under `query.max_concurrent`.
    pub queue_time: Duration,
    /// Reading the selectors' series.
    pub load_time: Duration,
    /// Evaluating the expression over what was read.
    pub eval_time: Duration,
    pub total_time: Duration,
    /// The warnings and infos the evaluation met (Prometheus'
    /// `warnings` and `infos` beside the result).
    pub annotations: crate::annotations::Annotations,
}

/// Prometheus' message for a range query with too many steps.
pub fn too_many_points_message(max: usize) -> String {
    let digits = max.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!(
        "exceeded maximum resolution of {grouped} points per timeseries. Try decreasing the query resolution (?step=XX)"
    )
}
