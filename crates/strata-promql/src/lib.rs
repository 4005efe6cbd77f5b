//! PromQL for Strata: an engine that evaluates queries as Prometheus does,
//! over the [`Queryable`] read trait, and the Prometheus HTTP query API.
//!
//! See the crate README for the data flow.
//!
//! ```
//! use std::sync::Arc;
//! use strata_codec::Label;
//! use strata_promql::{Engine, MemSource, QueryLimits, QueryValue};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let source = MemSource::new();
//! let labels = [Label::new("__name__", "requests_total"), Label::new("job", "api")];
//! for minute in 0..=10 {
//!     source.append(&labels, minute * 60_000, (minute * 60) as f64);
//! }
//! let engine = Engine::new(Arc::new(source), QueryLimits::default());
//! let result = engine
//!     .instant_query("rate(requests_total[5m])", 600_000, None)
//!     .await
//!     .unwrap();
//! let QueryValue::Vector(samples) = result else { panic!() };
//! assert_eq!(samples[0].v, 1.0);
//! # });
//! ```

pub mod annotations;
pub mod cardinality;
pub(crate) mod duration_expr;
pub mod engine;
pub mod error;
pub(crate) mod eval;
pub mod float_histogram;
pub(crate) mod functions;
pub mod gate;
pub(crate) mod go_string;
pub mod http;
pub(crate) mod info_selector;
pub(crate) mod parse;
pub(crate) mod plan;
pub(crate) mod query_text;
pub(crate) mod range_modifier;
pub mod source;
pub(crate) mod trim_operator;
pub(crate) mod utf8_names;
pub mod value;

pub use annotations::Annotations;
pub use cardinality::{CardinalityCounter, TsdbStatus};
pub use engine::{Engine, QueryLimits, QueryStats};
pub use error::QueryError;
pub use functions::format_go_float;
pub use gate::QueryGate;
pub use http::{router, router_with, SourceResolver};
pub use source::{MemSource, MetricMetadata, Queryable, Series, SourceError};
pub use value::{QueryValue, STALE_NAN_BITS};
