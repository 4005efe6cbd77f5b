//! Query errors, one variant per Prometheus API `errorType`.

use crate::source::SourceError;

/// Why a query (or an API call) failed. Each variant maps to one Prometheus
/// `errorType` and HTTP status in [`crate::http`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The request or the query text is invalid (400 `bad_data`).
    #[error("{0}")]
    BadData(String),
    /// The query is valid but cannot be evaluated (422 `execution`).
    #[error("{0}")]
    Execution(String),
    /// The query ran past its deadline (503 `timeout`).
    #[error("{0}")]
    Timeout(String),
    /// The caller went away (499 `canceled`).
    #[error("{0}")]
    Canceled(String),
    /// Storage could not be read for now (503 `unavailable`).
    #[error("{0}")]
    Unavailable(String),
    /// Anything else (500 `internal`).
    #[error("{0}")]
    Internal(String),
}

impl QueryError {
    pub(crate) fn exec(msg: impl Into<String>) -> Self {
        Self::Execution(msg.into())
    }

    /// The error Prometheus reports when its `query.max-samples` is exceeded.
    pub(crate) fn too_many_samples() -> Self {
        Self::Execution(
            "query processing would load too many samples into memory in query execution".into(),
        )
    }

    pub(crate) fn timeout() -> Self {
        Self::Timeout("query timed out in expression evaluation".into())
    }

    pub(crate) fn unsupported(what: impl std::fmt::Display) -> Self {
        Self::BadData(format!("not supported by Strata: {what}"))
    }
}

impl From<SourceError> for QueryError {
    fn from(e: SourceError) -> Self {
        match e {
            SourceError::Unavailable(_) => Self::Unavailable(e.to_string()),
            SourceError::Internal(_) => Self::Internal(e.to_string()),
        }
    }
}
