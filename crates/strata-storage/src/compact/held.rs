//! What a block holds of its series before an extension: their `B` values
//! and the part keys found beside them.

use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::keys::{self, Span};
use crate::packed_batch::Batch;
use crate::read::FoundKeys;
use crate::shared::Shared;
use crate::values;

/// What a block holds of one series before an extension: its `B` value and
/// the part keys found beside it.
pub(super) struct Held {
    pub(super) id: u64,
    pub(super) value: bytes::Bytes,
    segments: Vec<((i64, i64), bytes::Bytes)>,
}

/// One part a block holds of a series.
pub(super) struct HeldPart {
    pub(super) range: (i64, i64),
    pub(super) bytes: bytes::Bytes,
    /// Stored under a part key of its own, as earlier builds kept a block's
    /// parts while it filled (else inside the `B` value).
    pub(super) in_key: bool,
}

impl Held {
    /// A series' keys in the block, if it has a `B` value.
    fn of((id, found): (u64, FoundKeys)) -> Option<Self> {
        Some(Held {
            id,
            value: found.chunk?,
            segments: found.segments,
        })
    }

    /// Whether some of its parts are under keys of their own.
    pub(super) fn in_keys(&self) -> bool {
        !self.segments.is_empty()
    }

    /// Its parts before `from_ms`, where the new ones start, oldest first.
    /// Part keys from `from_ms` on (written by a pass that stopped before
    /// its switch) and part keys no list names are deleted in `batch`.
    pub(super) fn parts_before(
        &self,
        block: Span,
        from_ms: i64,
        batch: &mut Batch,
    ) -> Result<Vec<HeldPart>, StorageError> {
        let mut parts = Vec::new();
        if let Some(inline) = values::decode_parts(&self.value)? {
            for (range, at) in inline {
                parts.push(HeldPart {
                    range,
                    bytes: self.value.slice(at),
                    in_key: false,
                });
            }
        } else {
            let (listed, inline) = match values::decode_segmented(&self.value)? {
                Some((listed, inline)) => (listed, inline),
                None => (Vec::new(), &self.value[..]),
            };
            for range in listed {
                let Some((_, bytes)) = self.segments.iter().find(|(r, _)| *r == range) else {
                    return Err(StorageError::Corrupt(format!(
                        "block {block:?} lists a part {range:?} of series {} that is not stored",
                        self.id
                    )));
                };
                parts.push(HeldPart {
                    range,
                    bytes: bytes.clone(),
                    in_key: true,
                });
            }
            if !inline.is_empty() {
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                strata_codec::decode_chunk_range_into(
                    inline,
                    i64::MIN,
                    i64::MAX,
                    &mut ts,
                    &mut vs,
                )?;
                if let (Some(&first), Some(&last)) = (ts.first(), ts.last()) {
                    parts.push(HeldPart {
                        range: (first, last),
                        bytes: self.value.slice_ref(inline),
                        in_key: false,
                    });
                }
            }
        }
        parts.retain(|p| p.range.0 < from_ms);
        for (range, _) in &self.segments {
            if !parts.iter().any(|p| p.in_key && p.range == *range) {
                batch.delete(keys::segment_key(block, self.id, range.0, range.1));
            }
        }
        Ok(parts)
    }
}

/// What the block holds of series `ids` (ascending), by id: the series
/// with a `B` value (part keys without one were left by a pass that
/// stopped before writing the list; nothing reads them).
pub(super) async fn block_chunks(
    inner: &Shared,
    block: Span,
    ids: &[u64],
) -> Result<Vec<Held>, StorageError> {
    let (Some(&lo), Some(&hi)) = (ids.first(), ids.last()) else {
        return Ok(Vec::new());
    };
    let end = keys::prefix_end(&keys::chunk_key(block, hi));
    let mut it = inner
        .backend
        .scan_as(keys::chunk_key(block, lo)..end, ScanKind::Bulk)
        .await?;
    let mut out = Vec::new();
    let mut series: Option<(u64, FoundKeys)> = None;
    while let Some(kv) = it.next().await? {
        let Some(id) = keys::chunk_series(&kv.key) else {
            continue;
        };
        if series.as_ref().is_none_or(|(at, _)| *at != id) {
            out.extend(series.take().and_then(Held::of));
        }
        series
            .get_or_insert_with(|| (id, FoundKeys::default()))
            .1
            .add(kv);
    }
    out.extend(series.and_then(Held::of));
    Ok(out)
}
