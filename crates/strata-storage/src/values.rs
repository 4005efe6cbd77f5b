//! Encodings of the values stored under `S`, `I` and `M` keys, and the
//! segment list a chunk key holds for a series the head spilled. Chunks and
//! log records are encoded by `strata-codec`.

use strata_codec::varint::{put_uvarint, unzigzag, zigzag, Decbuf};
use strata_codec::{Label, LabelPairs};

use crate::error::StorageError;

const SERIES_VERSION: u8 = 1;
const CHECKPOINT_VERSION: u8 = 1;

/// `d`'s value once every byte was read without error; `what` names it in
/// the error.
fn finish<T>(d: Decbuf<'_>, what: &'static str, value: T) -> Result<T, StorageError> {
    if d.err().is_some() || d.remaining() > 0 {
        return Err(StorageError::Corrupt(format!("malformed {what} value")));
    }
    Ok(value)
}

/// `S` value: version, the wall-clock time it was written (ms), then labels.
pub fn encode_series(written_ms: i64, labels: &(impl LabelPairs + ?Sized)) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + labels.len() * 24);
    out.push(SERIES_VERSION);
    out.extend_from_slice(&written_ms.to_be_bytes());
    put_uvarint(&mut out, labels.len() as u64);
    for (name, value) in labels.pairs() {
        put_uvarint(&mut out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        put_uvarint(&mut out, value.len() as u64);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

pub fn decode_series(bytes: &[u8]) -> Result<(i64, Vec<Label>), StorageError> {
    let mut d = Decbuf::new(bytes);
    if d.byte() != SERIES_VERSION {
        return Err(StorageError::Corrupt("unknown series value version".into()));
    }
    let written = d.be_u64() as i64;
    let n = d.uvarint();
    let mut labels = Vec::with_capacity(usize::try_from(n.min(256)).unwrap_or(0));
    for _ in 0..n {
        if d.err().is_some() {
            break;
        }
        let name = d.string();
        let value = d.string();
        labels.push(Label { name, value });
    }
    finish(d, "series", (written, labels))
}

/// First byte of a `C` value listing a series' spilled segments. A sealed
/// chunk starts with `0xFF`, a Gorilla chunk with its count's high byte,
/// always below `0xFE` for the samples one bucket can hold.
pub const SEGMENTED: u8 = 0xFE;
const SEGMENTED_VERSION: u8 = 1;

/// `C` value of a series whose head spilled segments before the seal: the
/// segments' time ranges (each a key `C | bucket | series | first | last`,
/// oldest first), then the sealed chunk of the samples after them (empty
/// when there are none).
pub fn encode_segmented(segments: &[(i64, i64)], last_chunk: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + segments.len() * 8 + last_chunk.len());
    out.push(SEGMENTED);
    out.push(SEGMENTED_VERSION);
    put_uvarint(&mut out, segments.len() as u64);
    let mut prev = 0i64;
    for &(first, last) in segments {
        // Segments ascend, so after the first each delta is positive.
        put_uvarint(&mut out, zigzag(first.wrapping_sub(prev)));
        put_uvarint(&mut out, last.wrapping_sub(first) as u64);
        prev = last;
    }
    out.extend_from_slice(last_chunk);
    out
}

/// The segments' time ranges and the last chunk of a chunk key's value.
pub type Segmented<'a> = (Vec<(i64, i64)>, &'a [u8]);

/// The segments and the last chunk of a [`encode_segmented`] value; `None`
/// for a plain chunk.
pub fn decode_segmented(bytes: &[u8]) -> Result<Option<Segmented<'_>>, StorageError> {
    let Some((&SEGMENTED, rest)) = bytes.split_first() else {
        return Ok(None);
    };
    let mut d = Decbuf::new(rest);
    if d.byte() != SEGMENTED_VERSION {
        return Err(StorageError::Corrupt(
            "segment list of an unknown version".into(),
        ));
    }
    let n = d.uvarint();
    // Each segment takes at least two bytes.
    let mut segments = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(rest.len() / 2));
    let mut prev = 0i64;
    for _ in 0..n {
        if d.err().is_some() {
            break;
        }
        let first = prev.wrapping_add(unzigzag(d.uvarint()));
        let last = first.wrapping_add(d.uvarint() as i64);
        segments.push((first, last));
        prev = last;
    }
    if d.err().is_some() {
        return Err(StorageError::Corrupt("malformed segment list".into()));
    }
    Ok(Some((segments, d.rest())))
}

/// First byte of a whole block's `B` value: the block's parts, each a
/// sealed chunk of a stretch of it, one after the other in one value. Below
/// [`SEGMENTED`]; a Gorilla chunk's count never reaches it.
pub const PARTS: u8 = 0xFD;
const PARTS_VERSION: u8 = 1;

/// A whole block's `B` value for a series: its parts' time ranges and
/// lengths, oldest first, then their bytes, in the same order. A read
/// decodes only the parts its range meets.
pub fn encode_parts(parts: &[((i64, i64), &[u8])]) -> Vec<u8> {
    let bytes: usize = parts.iter().map(|(_, b)| b.len()).sum();
    let mut out = Vec::with_capacity(3 + parts.len() * 8 + bytes);
    out.push(PARTS);
    out.push(PARTS_VERSION);
    put_uvarint(&mut out, parts.len() as u64);
    let mut prev = 0i64;
    for &((first, last), b) in parts {
        put_uvarint(&mut out, zigzag(first.wrapping_sub(prev)));
        put_uvarint(&mut out, last.wrapping_sub(first) as u64);
        put_uvarint(&mut out, b.len() as u64);
        prev = last;
    }
    for (_, b) in parts {
        out.extend_from_slice(b);
    }
    out
}

/// The parts of an [`encode_parts`] value: each one's time range and its
/// byte range in `bytes`; `None` for any other value.
pub type Parts = Vec<((i64, i64), std::ops::Range<usize>)>;

pub fn decode_parts(bytes: &[u8]) -> Result<Option<Parts>, StorageError> {
    let Some((&PARTS, rest)) = bytes.split_first() else {
        return Ok(None);
    };
    let mut d = Decbuf::new(rest);
    if d.byte() != PARTS_VERSION {
        return Err(StorageError::Corrupt(
            "block parts of an unknown version".into(),
        ));
    }
    let n = d.uvarint();
    // Each part's entry takes at least three bytes.
    let mut parts = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(rest.len() / 3));
    let mut prev = 0i64;
    let mut lens = Vec::with_capacity(parts.capacity());
    for _ in 0..n {
        if d.err().is_some() {
            break;
        }
        let first = prev.wrapping_add(unzigzag(d.uvarint()));
        let last = first.wrapping_add(d.uvarint() as i64);
        lens.push(usize::try_from(d.uvarint()).unwrap_or(usize::MAX));
        parts.push((first, last));
        prev = last;
    }
    if d.err().is_some() {
        return Err(StorageError::Corrupt("malformed block parts".into()));
    }
    let mut at = bytes.len() - d.remaining();
    let mut out = Vec::with_capacity(parts.len());
    for (range, len) in parts.into_iter().zip(lens) {
        let end = at
            .checked_add(len)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| StorageError::Corrupt("block parts longer than their value".into()))?;
        out.push((range, at..end));
        at = end;
    }
    if at != bytes.len() {
        return Err(StorageError::Corrupt("bytes after block parts".into()));
    }
    Ok(Some(out))
}

/// `I` value: a sorted list of series ids, as a count then varint deltas.
pub fn encode_postings(ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ids.len() * 2 + 4);
    put_uvarint(&mut out, ids.len() as u64);
    let mut prev = 0u64;
    for &id in ids {
        put_uvarint(&mut out, id.wrapping_sub(prev));
        prev = id;
    }
    out
}

/// A postings value built one id at a time, as [`encode_postings`] writes
/// it: a seal lists a million series under tens of thousands of label
/// pairs, and held as deltas (a byte or two an id) rather than as `u64`s
/// the lists take a fraction of the memory until they are written.
#[derive(Default)]
pub struct PostingsBuilder {
    len: u64,
    prev: u64,
    deltas: Vec<u8>,
}

impl PostingsBuilder {
    /// Adds `id`, after every id added so far.
    pub fn push(&mut self, id: u64) {
        put_uvarint(&mut self.deltas, id.wrapping_sub(self.prev));
        self.prev = id;
        self.len += 1;
    }

    /// The value [`encode_postings`] writes for the ids pushed.
    pub fn finish(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.deltas.len() + 10);
        put_uvarint(&mut out, self.len);
        out.extend_from_slice(&self.deltas);
        out
    }
}

pub fn decode_postings(bytes: &[u8], out: &mut Vec<u64>) -> Result<(), StorageError> {
    let mut d = Decbuf::new(bytes);
    let n = d.uvarint();
    // Every id takes at least one byte, so a count past the bytes is corrupt
    // and must not drive the allocation.
    out.reserve(usize::try_from(n).unwrap_or(0).min(bytes.len()));
    let mut prev = 0u64;
    for _ in 0..n {
        if d.err().is_some() {
            break;
        }
        prev = prev.wrapping_add(d.uvarint());
        out.push(prev);
    }
    finish(d, "postings", ())
}

/// How many ids encoded postings hold, without decoding them.
pub fn postings_len(bytes: &[u8]) -> u64 {
    Decbuf::new(bytes).uvarint()
}

/// Keeps the ids of `ids` (ascending) that encoded postings hold: the
/// postings are decoded as they are compared, into no list of their own,
/// and no further than the last of `ids`.
pub fn retain_in_postings(bytes: &[u8], ids: &mut Vec<u64>) -> Result<(), StorageError> {
    let mut d = Decbuf::new(bytes);
    let n = d.uvarint();
    let (mut kept, mut next) = (0, 0);
    let mut id = 0u64;
    for _ in 0..n {
        if next == ids.len() || d.err().is_some() {
            break;
        }
        id = id.wrapping_add(d.uvarint());
        while ids.get(next).is_some_and(|&w| w < id) {
            next += 1;
        }
        if ids.get(next) == Some(&id) {
            ids.swap(kept, next);
            kept += 1;
            next += 1;
        }
    }
    ids.truncate(kept);
    if d.err().is_some() {
        return Err(StorageError::Corrupt("malformed postings value".into()));
    }
    Ok(())
}

/// The seal checkpoint kept under `Mcheckpoint`: everything recovery needs
/// to rebuild the head from the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Every bucket up to and including this one is sealed.
    pub sealed_through: Option<i64>,
    /// The first log record that may hold samples of an unsealed bucket.
    pub replay_from: u64,
    /// The next series id to hand out.
    pub next_series_id: u64,
    /// The next log sequence number at the time of the checkpoint.
    pub next_log_seq: u64,
}

pub fn encode_checkpoint(c: &Checkpoint) -> Vec<u8> {
    let mut out = Vec::with_capacity(34);
    out.push(CHECKPOINT_VERSION);
    match c.sealed_through {
        Some(b) => {
            out.push(1);
            out.extend_from_slice(&b.to_be_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(&c.replay_from.to_be_bytes());
    out.extend_from_slice(&c.next_series_id.to_be_bytes());
    out.extend_from_slice(&c.next_log_seq.to_be_bytes());
    out
}

pub fn decode_checkpoint(bytes: &[u8]) -> Result<Checkpoint, StorageError> {
    let mut d = Decbuf::new(bytes);
    if d.byte() != CHECKPOINT_VERSION {
        return Err(StorageError::Corrupt(
            "unknown checkpoint version (written by a newer Strata?)".into(),
        ));
    }
    let sealed_through = match d.byte() {
        0 => None,
        _ => Some(d.be_u64() as i64),
    };
    let c = Checkpoint {
        sealed_through,
        replay_from: d.be_u64(),
        next_series_id: d.be_u64(),
        next_log_seq: d.be_u64(),
    };
    finish(d, "checkpoint", c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_filter_ids_as_they_are_read() {
        let mut enc = PostingsBuilder::default();
        for id in [2u64, 5, 9, 10, 400, 70_000] {
            enc.push(id);
        }
        let bytes = enc.finish();
        assert_eq!(postings_len(&bytes), 6);
        let mut ids = vec![1, 5, 9, 11, 400, 69_999, 70_000, 80_000];
        retain_in_postings(&bytes, &mut ids).unwrap();
        assert_eq!(ids, vec![5, 9, 400, 70_000]);
        let mut none = vec![3, 4];
        retain_in_postings(&bytes, &mut none).unwrap();
        assert!(none.is_empty());
        let mut cut = vec![5];
        assert!(retain_in_postings(&bytes[..bytes.len() - 2], &mut vec![70_000]).is_err());
        retain_in_postings(&bytes[..bytes.len() - 2], &mut cut).unwrap();
        assert_eq!(cut, vec![5]);
    }

    #[test]
    fn series_round_trip() {
        let labels = vec![Label::new("__name__", "up"), Label::new("job", "ñ")];
        let (t, back) = decode_series(&encode_series(-5, &labels)).unwrap();
        assert_eq!((t, back), (-5, labels));
    }

    #[test]
    fn parts_round_trip_and_truncation() {
        let parts: Vec<((i64, i64), &[u8])> = vec![
            ((-5, 10), &[0xFF, 1, 2][..]),
            ((11, 11), &[][..]),
            ((3_600_000, 7_200_000), &[9; 300][..]),
        ];
        let enc = encode_parts(&parts);
        let back = decode_parts(&enc).unwrap().unwrap();
        let got: Vec<((i64, i64), &[u8])> =
            back.iter().map(|(r, at)| (*r, &enc[at.clone()])).collect();
        assert_eq!(got, parts);
        for cut in 1..enc.len() {
            assert!(decode_parts(&enc[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = enc.clone();
        longer.push(0);
        assert!(decode_parts(&longer).is_err());
        assert_eq!(decode_parts(&[0xFF, 1]).unwrap(), None);
    }

    #[test]
    fn postings_round_trip_and_truncation() {
        let ids = vec![1, 2, 300, 70_000, u64::MAX];
        let enc = encode_postings(&ids);
        let mut back = Vec::new();
        decode_postings(&enc, &mut back).unwrap();
        assert_eq!(back, ids);
        for cut in 0..enc.len() {
            assert!(decode_postings(&enc[..cut], &mut Vec::new()).is_err());
        }
    }

    #[test]
    fn a_postings_builder_writes_what_encode_postings_writes() {
        for ids in [vec![], vec![7], vec![1, 2, 300, 70_000, u64::MAX]] {
            let mut b = PostingsBuilder::default();
            ids.iter().for_each(|&id| b.push(id));
            assert_eq!(b.finish(), encode_postings(&ids), "{ids:?}");
        }
    }

    #[test]
    fn segment_list_round_trip() {
        let segments = vec![(-40, -1), (0, 7_200_000), (7_200_001, i64::MAX)];
        let v = encode_segmented(&segments, &[0xFF, 1, 2]);
        let (back, last) = decode_segmented(&v).unwrap().unwrap();
        assert_eq!(back, segments);
        assert_eq!(last, &[0xFF, 1, 2]);
        let v = encode_segmented(&segments[..1], &[]);
        assert_eq!(decode_segmented(&v).unwrap().unwrap().1, &[] as &[u8]);
        assert!(decode_segmented(&[0xFF, 1]).unwrap().is_none());
        assert!(decode_segmented(&v[..3]).is_err());
        assert!(decode_segmented(&[SEGMENTED, 9]).is_err());
    }

    #[test]
    fn checkpoint_round_trip() {
        for sealed_through in [None, Some(-3), Some(470_000)] {
            let c = Checkpoint {
                sealed_through,
                replay_from: 9,
                next_series_id: 100,
                next_log_seq: 12,
            };
            assert_eq!(decode_checkpoint(&encode_checkpoint(&c)).unwrap(), c);
        }
        assert!(decode_checkpoint(&[9]).is_err());
    }
}
