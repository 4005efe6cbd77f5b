//! Storage errors, in a few coarse kinds the HTTP layer maps to statuses.

/// Why a storage operation failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StorageError {
    /// The object store or SlateDB cannot take the operation now; retrying
    /// later may succeed (HTTP 503).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Another writer opened the same path and fenced this one out; this
    /// process can no longer write (HTTP 503).
    #[error("this writer was fenced by a newer writer on the same path: {0}")]
    Fenced(String),
    /// The storage has been closed (shutting down).
    #[error("storage is closed")]
    Closed,
    /// Stored data does not decode.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// A write sent to a read-only reader node.
    #[error("this is a read-only reader node; send writes to the writer")]
    ReadOnly,
    /// Invalid settings or arguments.
    #[error("invalid: {0}")]
    Invalid(String),
}

impl From<slatedb::Error> for StorageError {
    fn from(e: slatedb::Error) -> Self {
        use slatedb::{CloseReason, ErrorKind};
        match e.kind() {
            ErrorKind::Closed(CloseReason::Fenced) => Self::Fenced(e.to_string()),
            ErrorKind::Closed(_) => Self::Closed,
            ErrorKind::Invalid => Self::Invalid(e.to_string()),
            ErrorKind::Data => Self::Corrupt(e.to_string()),
            _ => Self::Unavailable(e.to_string()),
        }
    }
}

impl From<strata_codec::CodecError> for StorageError {
    fn from(e: strata_codec::CodecError) -> Self {
        Self::Corrupt(e.to_string())
    }
}
