//! PromQL for Strata: an engine that evaluates queries as Prometheus does,
//! over the [`Queryable`] read trait, and the Prometheus HTTP query API.
//!
//! See the crate README for the data flow.

pub mod engine;
pub mod error;
pub(crate) mod eval;
pub(crate) mod functions;
pub mod http;
pub(crate) mod plan;
pub mod source;
pub mod value;

pub use engine::{Engine, QueryLimits};
pub use error::QueryError;
pub use functions::format_go_float;
pub use http::router;
pub use source::{MemSource, Queryable, Series, SourceError};
pub use value::{QueryValue, STALE_NAN_BITS};
