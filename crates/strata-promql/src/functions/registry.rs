//! The PromQL functions Strata evaluates, one entry each: name, argument
//! and result kinds, and how it is computed, as Prometheus' `FunctionCalls`
//! and its parser's `Functions` together.
//!
//! The planner refuses a call whose function is not here; the evaluator
//! looks a call's entry up once and dispatches on its [`Eval`].

use chrono::{DateTime, Utc};
use promql_parser::parser::value::ValueType;

use super::{histogram, math, over_time, rate, time};
use crate::eval::range_steps::{RangeFn, WindowFn};

/// The kind of a function's argument or result, as Prometheus' value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Scalar,
    InstantVector,
    RangeVector,
    String,
}

impl From<ValueType> for Kind {
    fn from(t: ValueType) -> Self {
        match t {
            ValueType::Scalar => Self::Scalar,
            ValueType::Vector => Self::InstantVector,
            ValueType::Matrix => Self::RangeVector,
            ValueType::String => Self::String,
        }
    }
}

/// How many times a function's last argument may be given, as Prometheus'
/// `Variadic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variadic {
    /// Exactly once: every listed argument is required.
    No,
    /// From zero to this many times.
    UpTo(u8),
    /// Any number of times, zero included.
    Unbounded,
}

/// What a range-vector function outputs for its input series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeOutput {
    /// One series per input series, without the metric name.
    Series,
    /// One series per input series, keeping the metric name.
    SeriesWithName,
    /// One series with value 1 at the steps where no input series has a
    /// sample, labelled from the selector (`absent_over_time`).
    Absent,
}

/// How a function is computed. `eval::call` dispatches on it, handing the
/// [`Eval::Range`] functions to `eval::matrix_call`.
#[derive(Clone, Copy)]
pub(crate) enum Eval {
    /// Element-wise on the vector argument, dropping the metric name.
    Map(fn(f64) -> f64),
    /// A calendar field of the argument's values taken as Unix seconds, or
    /// of the step's time when there is no argument.
    Date(fn(&DateTime<Utc>) -> f64),
    /// Over each step's window of the range-vector argument.
    Range(RangeFn, RangeOutput),
    // The rest are one function each.
    Absent,
    Clamp,
    ClampMax,
    ClampMin,
    HistogramQuantile,
    /// `histogram_quantile` at several quantiles, each labelled with its
    /// own.
    HistogramQuantiles,
    HistogramFraction,
    /// A number of each native histogram (`histogram_count`, ...).
    HistogramStat(fn(&strata_codec::histogram::FloatHistogram) -> f64),
    /// `info`, which also reads info series its label selector picks.
    Info,
    LabelJoin,
    LabelReplace,
    Pi,
    Round,
    Scalar,
    Sort {
        descending: bool,
    },
    SortByLabel {
        descending: bool,
    },
    Time,
    Timestamp,
    Vector,
    /// `max_of` (`max`) or `min_of` of two scalars, as Go's `math.Max` and
    /// `math.Min`.
    Extremum {
        max: bool,
    },
    /// `start()`, `end()`, `range()`, `step()`: numbers by the time the
    /// evaluator sees them.
    QueryContext,
}

/// One function Strata evaluates.
pub(crate) struct Function {
    pub name: &'static str,
    pub args: &'static [Kind],
    /// How often the last of `args` may be given.
    pub variadic: Variadic,
    pub returns: Kind,
    pub eval: Eval,
    /// Whether Prometheus 3.16 has it only behind
    /// `--enable-feature=promql-experimental-functions` (Strata's
    /// [`crate::QueryLimits::experimental_functions`]).
    pub experimental: bool,
}

impl Function {
    const fn new(name: &'static str, args: &'static [Kind], returns: Kind, eval: Eval) -> Self {
        Self {
            name,
            args,
            variadic: Variadic::No,
            returns,
            eval,
            experimental: false,
        }
    }

    const fn variadic(self, variadic: Variadic) -> Self {
        Self { variadic, ..self }
    }

    const fn experimental(self) -> Self {
        Self {
            experimental: true,
            ..self
        }
    }

    /// Whether `parsed`, the parser's signature of this function, which it
    /// checked the call against, is the one the evaluator reads the
    /// arguments by.
    pub fn signature_is(&self, parsed: &promql_parser::parser::Function) -> bool {
        let variadic = match self.variadic {
            Variadic::No => 0,
            Variadic::UpTo(n) => i32::from(n),
            Variadic::Unbounded => -1,
        };
        Kind::from(parsed.return_type) == self.returns
            && parsed.variadic == variadic
            && parsed.arg_types.len() == self.args.len()
            && parsed
                .arg_types
                .iter()
                .zip(self.args)
                .all(|(&t, &k)| Kind::from(t) == k)
    }

    /// The position of the range-vector argument, if the function has one.
    pub fn range_arg(&self) -> Option<usize> {
        self.args.iter().position(|k| *k == Kind::RangeVector)
    }
}

/// The function called `name`, if Strata evaluates it.
pub(crate) fn lookup(name: &str) -> Option<&'static Function> {
    let i = FUNCTIONS.binary_search_by(|f| f.name.cmp(name)).ok()?;
    FUNCTIONS.get(i)
}

// Short names keep the table's entries short.
const S: Kind = Kind::Scalar;
const V: Kind = Kind::InstantVector;
const M: Kind = Kind::RangeVector;
const STR: Kind = Kind::String;

/// `start()`, `end()`, `range()` or `step()`, which name the query's own
/// times and are folded into numbers before evaluation
/// ([`crate::eval::query_context`]).
const fn query_context(name: &'static str) -> Function {
    Function::new(name, &[], S, Eval::QueryContext).experimental()
}

/// An element-wise function of an instant vector.
const fn map(name: &'static str, f: fn(f64) -> f64) -> Function {
    Function::new(name, &[V], V, Eval::Map(f))
}

/// A calendar function of an instant vector, or of the step's time.
const fn date(name: &'static str, f: fn(&DateTime<Utc>) -> f64) -> Function {
    Function::new(name, &[V], V, Eval::Date(f)).variadic(Variadic::UpTo(1))
}

/// A range function computed from each window on its own.
const fn window(f: WindowFn) -> Eval {
    Eval::Range(RangeFn::Window(f), RangeOutput::Series)
}

/// A range function of each window's values only.
macro_rules! values {
    ($f:path) => {
        window(|w, _| Some($f(w.v)))
    };
}

/// Every function, sorted by name for [`lookup`].
static FUNCTIONS: &[Function] = &[
    map("abs", f64::abs),
    Function::new("absent", &[V], V, Eval::Absent),
    Function::new(
        "absent_over_time",
        &[M],
        V,
        Eval::Range(RangeFn::Window(|_, _| Some(1.0)), RangeOutput::Absent),
    ),
    map("acos", f64::acos),
    map("acosh", f64::acosh),
    map("asin", f64::asin),
    map("asinh", f64::asinh),
    map("atan", f64::atan),
    map("atanh", f64::atanh),
    Function::new("avg_over_time", &[M], V, values!(over_time::avg)),
    map("ceil", f64::ceil),
    Function::new("changes", &[M], V, window(|w, _| rate::changes(w))),
    Function::new("clamp", &[V, S, S], V, Eval::Clamp),
    Function::new("clamp_max", &[V, S], V, Eval::ClampMax),
    Function::new("clamp_min", &[V, S], V, Eval::ClampMin),
    map("cos", f64::cos),
    map("cosh", f64::cosh),
    Function::new("count_over_time", &[M], V, values!(over_time::count)),
    date("day_of_month", time::day_of_month),
    date("day_of_week", time::day_of_week),
    date("day_of_year", time::day_of_year),
    date("days_in_month", time::days_in_month),
    map("deg", math::deg),
    Function::new(
        "delta",
        &[M],
        V,
        window(|w, c| {
            rate::extrapolated_rate(w, c.range_start, c.range_end, c.range, false, false)
        }),
    ),
    Function::new("deriv", &[M], V, window(|w, _| rate::deriv(w))),
    Function::new(
        "double_exponential_smoothing",
        &[M, S, S],
        V,
        window(|w, c| over_time::double_exponential_smoothing(w.v, c.param, c.param2)),
    )
    .experimental(),
    query_context("end"),
    map("exp", f64::exp),
    Function::new(
        "first_over_time",
        &[M],
        V,
        Eval::Range(
            RangeFn::Window(|w, _| w.v.first().copied()),
            RangeOutput::SeriesWithName,
        ),
    ),
    map("floor", f64::floor),
    Function::new(
        "histogram_avg",
        &[V],
        V,
        Eval::HistogramStat(histogram::native_avg),
    ),
    Function::new(
        "histogram_count",
        &[V],
        V,
        Eval::HistogramStat(histogram::native_count),
    ),
    Function::new("histogram_fraction", &[S, S, V], V, Eval::HistogramFraction),
    Function::new("histogram_quantile", &[S, V], V, Eval::HistogramQuantile),
    Function::new(
        "histogram_quantiles",
        &[V, STR, S, S],
        V,
        Eval::HistogramQuantiles,
    )
    .variadic(Variadic::UpTo(9))
    .experimental(),
    Function::new(
        "histogram_stddev",
        &[V],
        V,
        Eval::HistogramStat(histogram::native_stddev),
    ),
    Function::new(
        "histogram_stdvar",
        &[V],
        V,
        Eval::HistogramStat(histogram::native_stdvar),
    ),
    Function::new(
        "histogram_sum",
        &[V],
        V,
        Eval::HistogramStat(histogram::native_sum),
    ),
    date("hour", time::hour),
    Function::new(
        "idelta",
        &[M],
        V,
        window(|w, _| rate::instant_value(w, false)),
    ),
    Function::new(
        "increase",
        &[M],
        V,
        Eval::Range(RangeFn::Increase { is_rate: false }, RangeOutput::Series),
    ),
    Function::new("info", &[V, V], V, Eval::Info)
        .variadic(Variadic::UpTo(1))
        .experimental(),
    Function::new(
        "integral",
        &[M, S],
        V,
        window(|w, c| Some(over_time::integral(w, c.param))),
    )
    .variadic(Variadic::UpTo(1))
    .experimental(),
    Function::new(
        "irate",
        &[M],
        V,
        window(|w, _| rate::instant_value(w, true)),
    ),
    Function::new("label_join", &[V, STR, STR, STR], V, Eval::LabelJoin)
        .variadic(Variadic::Unbounded),
    Function::new(
        "label_replace",
        &[V, STR, STR, STR, STR],
        V,
        Eval::LabelReplace,
    ),
    Function::new(
        "last_over_time",
        &[M],
        V,
        Eval::Range(
            RangeFn::Window(|w, _| Some(over_time::last(w.v))),
            RangeOutput::SeriesWithName,
        ),
    ),
    map("ln", f64::ln),
    map("log10", f64::log10),
    map("log2", f64::log2),
    Function::new("mad_over_time", &[M], V, values!(over_time::mad)).experimental(),
    Function::new("max_of", &[S, S], S, Eval::Extremum { max: true }).experimental(),
    Function::new("max_over_time", &[M], V, values!(over_time::max)),
    Function::new("min_of", &[S, S], S, Eval::Extremum { max: false }).experimental(),
    Function::new("min_over_time", &[M], V, values!(over_time::min)),
    date("minute", time::minute),
    date("month", time::month),
    Function::new("pi", &[], S, Eval::Pi),
    Function::new(
        "predict_linear",
        &[M, S],
        V,
        window(|w, c| rate::predict_linear(w, c.param, c.intercept)),
    ),
    Function::new("present_over_time", &[M], V, values!(over_time::present)),
    Function::new(
        "quantile_over_time",
        &[S, M],
        V,
        window(|w, c| Some(over_time::quantile_over(c.param, w.v))),
    ),
    map("rad", math::rad),
    query_context("range"),
    Function::new(
        "rate",
        &[M],
        V,
        Eval::Range(RangeFn::Increase { is_rate: true }, RangeOutput::Series),
    ),
    Function::new("resets", &[M], V, window(|w, _| rate::resets(w))),
    Function::new("round", &[V, S], V, Eval::Round).variadic(Variadic::UpTo(1)),
    Function::new("scalar", &[V], S, Eval::Scalar),
    map("sgn", math::sgn),
    map("sin", f64::sin),
    map("sinh", f64::sinh),
    Function::new("sort", &[V], V, Eval::Sort { descending: false }),
    Function::new(
        "sort_by_label",
        &[V, STR],
        V,
        Eval::SortByLabel { descending: false },
    )
    .variadic(Variadic::Unbounded)
    .experimental(),
    Function::new(
        "sort_by_label_desc",
        &[V, STR],
        V,
        Eval::SortByLabel { descending: true },
    )
    .variadic(Variadic::Unbounded)
    .experimental(),
    Function::new("sort_desc", &[V], V, Eval::Sort { descending: true }),
    map("sqrt", f64::sqrt),
    query_context("start"),
    Function::new("stddev_over_time", &[M], V, values!(over_time::stddev)),
    Function::new("stdvar_over_time", &[M], V, values!(over_time::stdvar)),
    query_context("step"),
    Function::new("sum_over_time", &[M], V, values!(over_time::sum)),
    map("tan", f64::tan),
    map("tanh", f64::tanh),
    Function::new("time", &[], S, Eval::Time),
    Function::new("timestamp", &[V], V, Eval::Timestamp),
    Function::new(
        "ts_of_first_over_time",
        &[M],
        V,
        window(|w, _| w.first().map(|p| p.t as f64 / 1000.0)),
    )
    .experimental(),
    Function::new(
        "ts_of_last_over_time",
        &[M],
        V,
        window(|w, _| w.last().map(|p| p.t as f64 / 1000.0)),
    )
    .experimental(),
    Function::new(
        "ts_of_max_over_time",
        &[M],
        V,
        window(|w, _| over_time::ts_of_best(w, |v, best| v >= best)),
    )
    .experimental(),
    Function::new(
        "ts_of_min_over_time",
        &[M],
        V,
        window(|w, _| over_time::ts_of_best(w, |v, best| v <= best)),
    )
    .experimental(),
    Function::new("vector", &[S], V, Eval::Vector),
    date("year", time::year),
];

#[cfg(test)]
mod tests;
