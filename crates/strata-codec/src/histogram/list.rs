//! A series' native histogram samples of one bucket as a list of chunks:
//! what the head appends to, what a seal writes under an `N` key, and what
//! a read decodes.
//!
//! Layout of an encoded list: a version byte (1), the number of chunks
//! (uvarint), then per chunk a kind byte (0: integer, 1: float), its length
//! (uvarint) and its bytes as [`HistogramChunk::bytes`] or
//! [`FloatHistogramChunk::bytes`] give them.

use super::types::{FloatHistogram, Histogram, HistogramSample};
use super::{
    AppendError, CounterResetHeader, FloatHistogramChunk, FloatHistogramIter, HistogramChunk,
    HistogramIter,
};
use crate::varint::{put_uvarint, Decbuf};
use crate::CodecError;

const LIST_VERSION: u8 = 1;
const KIND_INT: u8 = 0;
const KIND_FLOAT: u8 = 1;

/// A histogram chunk of either form.
#[derive(Clone, Debug)]
pub enum AnyHistogramChunk {
    Int(HistogramChunk),
    Float(FloatHistogramChunk),
}

impl AnyHistogramChunk {
    /// An empty chunk of the form of `s`.
    fn for_sample(s: &HistogramSample, header: CounterResetHeader) -> Self {
        match s {
            HistogramSample::Int(_) => Self::Int(HistogramChunk::with_header(header)),
            HistogramSample::Float(_) => Self::Float(FloatHistogramChunk::with_header(header)),
        }
    }

    /// Appends `s` at `t` (after the last sample); a sample of the other
    /// form needs a new chunk.
    fn append(&mut self, t: i64, s: &HistogramSample) -> Result<(), AppendError> {
        match (self, s) {
            (Self::Int(c), HistogramSample::Int(h)) => c.append(t, h),
            (Self::Float(c), HistogramSample::Float(h)) => c.append(t, h),
            _ => Err(AppendError::NeedsNewChunk(super::CutReason::KindChanged)),
        }
    }

    pub fn len(&self) -> u32 {
        match self {
            Self::Int(c) => c.len(),
            Self::Float(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn first_t(&self) -> Option<i64> {
        match self {
            Self::Int(c) => c.first_t(),
            Self::Float(c) => c.first_t(),
        }
    }

    pub fn last_t(&self) -> Option<i64> {
        match self {
            Self::Int(c) => c.last_t(),
            Self::Float(c) => c.last_t(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Int(c) => c.bytes(),
            Self::Float(c) => c.bytes(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Int(c) => c.heap_bytes(),
            Self::Float(c) => c.heap_bytes(),
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Self::Int(_) => KIND_INT,
            Self::Float(_) => KIND_FLOAT,
        }
    }

    /// Every sample, in its stored form.
    pub fn samples(&self) -> Result<Vec<(i64, HistogramSample)>, CodecError> {
        let mut out = Vec::with_capacity(self.len() as usize);
        decode_chunk(self.kind(), self.bytes(), |t, s| {
            out.push((t, s));
        })?;
        Ok(out)
    }
}

/// Appends `s` at `t`, after every sample of `chunks`, to the last chunk,
/// or to a new one when the last cannot take it (full, a counter reset, a
/// new layout or form). Fails only for a malformed sample.
pub fn append_to_chunks(
    chunks: &mut Vec<AnyHistogramChunk>,
    t: i64,
    s: &HistogramSample,
) -> Result<(), AppendError> {
    let header = match chunks.last_mut() {
        None => CounterResetHeader::Unknown,
        Some(last) => match last.append(t, s) {
            Ok(()) => return Ok(()),
            Err(AppendError::NeedsNewChunk(why)) => why.next_header(hint_of(s)),
            Err(e) => return Err(e),
        },
    };
    let mut c = AnyHistogramChunk::for_sample(s, header);
    c.append(t, s)?;
    chunks.push(c);
    Ok(())
}

fn hint_of(s: &HistogramSample) -> super::CounterResetHint {
    match s {
        HistogramSample::Int(h) => h.counter_reset_hint,
        HistogramSample::Float(h) => h.counter_reset_hint,
    }
}

/// Chunks holding `samples` (ascending by timestamp, no repeats).
pub fn chunks_of(
    samples: &[(i64, HistogramSample)],
) -> Result<Vec<AnyHistogramChunk>, AppendError> {
    let mut chunks = Vec::new();
    for (t, s) in samples {
        append_to_chunks(&mut chunks, *t, s)?;
    }
    Ok(chunks)
}

/// Appends the encoded list of `chunks` to `out`.
pub fn encode_chunk_list(chunks: &[AnyHistogramChunk], out: &mut Vec<u8>) {
    out.push(LIST_VERSION);
    put_uvarint(out, chunks.len() as u64);
    for c in chunks {
        out.push(c.kind());
        put_uvarint(out, c.bytes().len() as u64);
        out.extend_from_slice(c.bytes());
    }
}

/// Calls `each(kind, chunk bytes)` for every chunk of an encoded list.
fn for_each_chunk(
    bytes: &[u8],
    mut each: impl FnMut(u8, &[u8]) -> Result<(), CodecError>,
) -> Result<(), CodecError> {
    let (&version, rest) = bytes.split_first().ok_or(CodecError::Truncated)?;
    if version != LIST_VERSION {
        return Err(CodecError::BadVersion(version));
    }
    let mut d = Decbuf::new(rest);
    // Each chunk takes at least its kind, length and a 3-byte header.
    let n = d.length_prefix(5);
    for _ in 0..n {
        let kind = d.byte();
        let len = d.length_prefix(1);
        let chunk = d.bytes(len);
        d.check()?;
        each(kind, chunk)?;
    }
    d.check()?;
    if d.remaining() != 0 {
        return Err(CodecError::Corrupt("bytes after the histogram chunk list"));
    }
    Ok(())
}

/// Decodes one chunk of `kind`, calling `each(t, sample)` in order.
fn decode_chunk(
    kind: u8,
    bytes: &[u8],
    mut each: impl FnMut(i64, HistogramSample),
) -> Result<(), CodecError> {
    match kind {
        KIND_INT => {
            let mut it = HistogramIter::new(bytes)?;
            let mut h = Histogram::default();
            while let Some(t) = it.next_into(&mut h) {
                each(t, HistogramSample::Int(h.clone()));
            }
            it.err().map_or(Ok(()), |e| Err(e.clone()))
        }
        KIND_FLOAT => {
            let mut it = FloatHistogramIter::new(bytes)?;
            let mut h = FloatHistogram::default();
            while let Some(t) = it.next_into(&mut h) {
                each(t, HistogramSample::Float(h.clone()));
            }
            it.err().map_or(Ok(()), |e| Err(e.clone()))
        }
        _ => Err(CodecError::Corrupt("histogram chunk kind")),
    }
}

/// The samples of an encoded list in `[mint, maxt]`, in float form,
/// appended to `out` in the list's order.
pub fn decode_chunk_list_into(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    out: &mut Vec<(i64, FloatHistogram)>,
) -> Result<(), CodecError> {
    for_each_chunk(bytes, |kind, chunk| {
        decode_chunk(kind, chunk, |t, s| {
            if t >= mint && t <= maxt {
                out.push((t, s.to_float()));
            }
        })
    })
}

/// Every sample of an encoded list, in its stored form.
pub fn decode_chunk_list(bytes: &[u8]) -> Result<Vec<(i64, HistogramSample)>, CodecError> {
    let mut out = Vec::new();
    for_each_chunk(bytes, |kind, chunk| {
        decode_chunk(kind, chunk, |t, s| out.push((t, s)))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{CounterResetHint, Span};

    /// Two buckets of `count` each (deltas `count`, 0).
    fn int(count: u64) -> HistogramSample {
        HistogramSample::Int(Histogram {
            schema: 1,
            count: 2 * count,
            sum: count as f64,
            positive_spans: vec![Span::new(0, 2)],
            positive_buckets: vec![count as i64, 0],
            ..Histogram::default()
        })
    }

    fn float(count: f64) -> HistogramSample {
        HistogramSample::Float(FloatHistogram {
            schema: -53,
            count,
            sum: 1.5 * count,
            positive_spans: vec![Span::new(0, 2)],
            positive_buckets: vec![count / 2.0, count / 2.0],
            custom_values: vec![1.0],
            ..FloatHistogram::default()
        })
    }

    #[test]
    fn a_list_round_trips_both_forms_and_cuts_on_a_reset() {
        let samples: Vec<(i64, HistogramSample)> = vec![
            (1_000, int(4)),
            (2_000, int(6)),
            // A counter reset: a new chunk that says so.
            (3_000, int(1)),
            // The other form: a new chunk.
            (4_000, float(2.0)),
            (5_000, float(3.0)),
        ];
        for (_, s) in &samples {
            s.validate().unwrap();
        }
        let chunks = chunks_of(&samples).unwrap();
        assert_eq!(chunks.len(), 3);
        let mut bytes = Vec::new();
        encode_chunk_list(&chunks, &mut bytes);
        let back = decode_chunk_list(&bytes).unwrap();
        assert_eq!(back.len(), samples.len());
        for ((t, s), (bt, b)) in samples.iter().zip(&back) {
            assert_eq!(t, bt);
            assert_eq!(s.to_float().count, b.to_float().count);
            assert_eq!(s.to_float().positive_buckets, b.to_float().positive_buckets);
        }
        // The reset is in the third sample's hint, read from its chunk.
        let HistogramSample::Int(third) = &back[2].1 else {
            panic!("form changed")
        };
        assert_eq!(third.counter_reset_hint, CounterResetHint::Reset);

        let mut ranged = Vec::new();
        decode_chunk_list_into(&bytes, 2_000, 4_000, &mut ranged).unwrap();
        let ts: Vec<i64> = ranged.iter().map(|(t, _)| *t).collect();
        assert_eq!(ts, vec![2_000, 3_000, 4_000]);
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let chunks = chunks_of(&[(1, int(2)), (2, int(3))]).unwrap();
        let mut bytes = Vec::new();
        encode_chunk_list(&chunks, &mut bytes);
        for cut in 0..bytes.len() {
            assert!(decode_chunk_list(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_chunk_list(&extra).is_err());
        let mut bad_kind = bytes;
        bad_kind[2] = 9;
        assert!(decode_chunk_list(&bad_kind).is_err());
    }
}
