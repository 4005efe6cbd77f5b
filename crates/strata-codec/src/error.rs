//! The one error type of every decoder in this crate.

/// Why a chunk or a log record could not be decoded.
///
/// Decoders return these instead of panicking, whatever bytes they are given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The input ends before the data it announces.
    #[error("input is truncated")]
    Truncated,
    /// The stored checksum does not match the bytes it covers.
    #[error("checksum mismatch")]
    BadChecksum,
    /// The input starts with a format version this build does not know.
    #[error("unknown format version {0}")]
    BadVersion(u8),
    /// The input is self-inconsistent; the text names the field at fault.
    #[error("corrupt input: {0}")]
    Corrupt(&'static str),
}
