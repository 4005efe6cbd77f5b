//! Which sealed buckets compacted blocks hold: the `Mcompacted` key's
//! value (`docs/format.md`), read by every handle and moved by the
//! writer's compaction.

use crate::error::StorageError;

/// No bucket compacted yet.
pub(crate) const NONE_COMPACTED: i64 = i64::MIN;

/// Which buckets blocks hold, as the `Mcompacted` key says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// Every bucket before this one is read from its block.
    pub(crate) through: i64,
    /// The buckets before this one have had their own keys deleted.
    pub(crate) deleted_through: i64,
    /// When `through` last moved (writer's wall clock, ms).
    pub(crate) switched_ms: i64,
}

impl Default for Compacted {
    fn default() -> Self {
        Self {
            through: NONE_COMPACTED,
            deleted_through: NONE_COMPACTED,
            switched_ms: 0,
        }
    }
}

const VERSION: u8 = 1;

impl Compacted {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(25);
        out.push(VERSION);
        out.extend_from_slice(&self.through.to_be_bytes());
        out.extend_from_slice(&self.deleted_through.to_be_bytes());
        out.extend_from_slice(&self.switched_ms.to_be_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let field = |at: usize| {
            bytes
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(i64::from_be_bytes)
        };
        match (bytes.first(), bytes.len(), field(1), field(9), field(17)) {
            (Some(&VERSION), 25, Some(through), Some(deleted_through), Some(switched_ms)) => {
                Ok(Self {
                    through,
                    deleted_through,
                    switched_ms,
                })
            }
            _ => Err(StorageError::Corrupt(
                "the compaction state (Mcompacted) is malformed or of an unknown version".into(),
            )),
        }
    }
}
