//! Sealed chunks: the compact, write-once encoding of a whole series bucket.
//!
//! A head chunk ([`XorChunk`](crate::XorChunk)) must stay appendable; a
//! sealed chunk is written once, when its bucket is sealed, so it can look at
//! all its samples first. Timestamps are a packed integer stream (regular
//! scrapes cost about 1 byte per 64 samples). Values that are all decimals
//! `m / 10^e` with a shared `e` are stored as packed integer mantissas (a few
//! that are not, such as stale markers, are kept aside whole); any other
//! values as their raw bits, packed the same way. Every `f64` round-trips bit
//! for bit.
//!
//! [`decode_chunk_range_into`] reads both encodings: a sealed chunk starts
//! with [`MAGIC`], which no `XorChunk` can start with, as its 4-byte
//! big-endian count stays below `0xFF00_0000`
//! ([`XorChunk::MAX_SAMPLES`](crate::XorChunk::MAX_SAMPLES)).
//! `docs/format.md` draws the layout.

pub(crate) mod decimal;
mod packed;

use std::cell::RefCell;

use crate::chunk::keep_appended;
use crate::varint::{put_uvarint, Decbuf};
use crate::CodecError;
use decimal::{mantissa, sampled_exponent, shared_exponent, MAX_EXP, POW10};

/// First byte of every sealed chunk.
pub const MAGIC: u8 = 0xFF;

/// The format version after [`MAGIC`].
pub const VERSION: u8 = 1;

/// Value section kinds.
const VALUES_RAW: u8 = 0;
const VALUES_DECIMAL: u8 = 1;

/// Bytes of a stored exception: its index and the value's bits.
const EXCEPTION_MIN_LEN: usize = 1 + 8;

/// Encodes a whole series bucket (strictly ascending timestamps, one value
/// per timestamp) as a sealed chunk, appended to `out`. Bit-exact for every
/// `f64`. Extra values or timestamps beyond the shorter slice are ignored.
/// Timestamps that do not increase make a chunk the decoder rejects.
///
/// ```
/// use strata_codec::{decode_chunk_range_into, encode_sealed};
///
/// let ts: Vec<i64> = (0..240).map(|i| 1_700_000_000_000 + i * 15_000).collect();
/// let mut vs: Vec<f64> = (0..240).map(|i| 1234.5 + f64::from(i) * 0.25).collect();
/// vs[7] = f64::from_bits(0x7ff0_0000_0000_0002); // a stale marker
/// let mut chunk = Vec::new();
/// encode_sealed(&ts, &vs, &mut chunk);
/// assert!(chunk.len() < 80);
///
/// let (mut got_ts, mut got_vs) = (Vec::new(), Vec::new());
/// decode_chunk_range_into(&chunk, i64::MIN, i64::MAX, &mut got_ts, &mut got_vs)?;
/// assert_eq!(got_ts, ts);
/// assert!(got_vs.iter().zip(&vs).all(|(a, b)| a.to_bits() == b.to_bits()));
/// # Ok::<(), strata_codec::CodecError>(())
/// ```
pub fn encode_sealed(ts: &[i64], vs: &[f64], out: &mut Vec<u8>) {
    thread_local! {
        /// Sealing runs over many series in a row: buffers are kept per
        /// thread, sized by the largest chunk sealed on it.
        static SCRATCH: RefCell<SealScratch> = RefCell::default();
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => encode_sealed_with(&mut scratch, ts, vs, out),
        Err(_) => encode_sealed_with(&mut SealScratch::default(), ts, vs, out),
    });
}

/// Buffers [`encode_sealed_with`] reuses from chunk to chunk; one per
/// thread that seals many chunks.
#[derive(Debug, Default)]
pub struct SealScratch {
    /// Mantissas or raw value bits, the value stream's integers.
    ints: Vec<i64>,
    /// Values without a mantissa: their index and bits.
    exceptions: Vec<(usize, u64)>,
    /// The raw encoding, when it competes with a decimal one.
    raw: Vec<u8>,
    packed: packed::Scratch,
}

/// [`encode_sealed`] with buffers kept in `scratch`: the same bytes,
/// without allocating once the buffers have grown to the chunk size.
pub fn encode_sealed_with(scratch: &mut SealScratch, ts: &[i64], vs: &[f64], out: &mut Vec<u8>) {
    let n = ts.len().min(vs.len());
    let (ts, vs) = (ts.get(..n).unwrap_or(&[]), vs.get(..n).unwrap_or(&[]));
    debug_assert!(increasing(None, ts), "timestamps must increase");
    out.push(MAGIC);
    out.push(VERSION);
    put_uvarint(out, n as u64);
    if n == 0 {
        return;
    }
    packed::encode(ts, &mut scratch.packed, out);
    // Exact decimals are kept without trying raw bits: a mantissa never
    // needs more bits than the value's raw pattern does in practice, and
    // sealing is faster for it.
    let start = out.len();
    match encode_decimal(scratch, vs, out) {
        Some(0) => {}
        Some(_) => {
            let mut raw = std::mem::take(&mut scratch.raw);
            raw.clear();
            encode_raw(scratch, vs, &mut raw);
            if raw.len() < out.len() - start {
                out.truncate(start);
                out.extend_from_slice(&raw);
            }
            scratch.raw = raw;
        }
        None => encode_raw(scratch, vs, out),
    }
}

fn encode_raw(scratch: &mut SealScratch, vs: &[f64], out: &mut Vec<u8>) {
    let bits = &mut scratch.ints;
    bits.clear();
    bits.extend(vs.iter().map(|v| v.to_bits() as i64));
    out.push(VALUES_RAW);
    packed::encode(bits, &mut scratch.packed, out);
}

/// Appends the decimal encoding of `vs` and returns its number of
/// exceptions, unless too few values are decimals (then nothing is
/// appended).
///
/// The exponent is the largest of the values' smallest exponents. Rather
/// than searching all exponents for every value, mantissas are taken at a
/// guess from a few samples, and only the values without one there are
/// searched; a second pass is needed only if one of them needs a larger
/// exponent.
fn encode_decimal(scratch: &mut SealScratch, vs: &[f64], out: &mut Vec<u8>) -> Option<usize> {
    let SealScratch {
        ints,
        exceptions,
        packed: streams,
        ..
    } = scratch;
    let guess = sampled_exponent(vs);
    mantissas_into(vs, guess, ints, exceptions);
    let misses = exceptions.iter().map(|&(_, bits)| f64::from_bits(bits));
    let e = shared_exponent(vs.len(), guess, misses)?;
    if e != guess {
        mantissas_into(vs, e, ints, exceptions);
    }
    out.push(VALUES_DECIMAL);
    out.push(e);
    put_uvarint(out, exceptions.len() as u64);
    let mut next = 0;
    for &(i, bits) in exceptions.iter() {
        put_uvarint(out, (i - next) as u64);
        out.extend_from_slice(&bits.to_le_bytes());
        next = i + 1;
    }
    packed::encode(ints, streams, out);
    Some(exceptions.len())
}

/// Replaces `ints` with the mantissas of `vs` at exponent `e` and
/// `exceptions` with the values that have none. Exceptions keep the
/// previous mantissa (leading ones the first), so they cost nothing in the
/// stream when it is differenced.
fn mantissas_into(vs: &[f64], e: u8, ints: &mut Vec<i64>, exceptions: &mut Vec<(usize, u64)>) {
    ints.clear();
    exceptions.clear();
    let mut prev = None;
    for (i, &v) in vs.iter().enumerate() {
        match mantissa(v, e) {
            Some(m) => {
                if prev.is_none() {
                    ints.fill(m);
                }
                prev = Some(m);
            }
            None => exceptions.push((i, v.to_bits())),
        }
        ints.push(prev.unwrap_or(0));
    }
}

/// Appends the samples with timestamps in `[mint, maxt]` of the chunk in
/// `bytes`, sealed or a plain [`XorChunk`](crate::XorChunk)'s bytes, to `ts`
/// and `vs`. On error nothing is appended.
pub fn decode_chunk_range_into(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<(), CodecError> {
    match bytes.first() {
        Some(&MAGIC) => decode_sealed_range_into(bytes, mint, maxt, ts, vs),
        _ => crate::decode_range_into(bytes, mint, maxt, ts, vs),
    }
}

/// How many samples the chunk in `bytes` (sealed or an `XorChunk`'s) holds
/// by its header, capped by what its length can encode; 0 if the header is
/// unreadable. A size for the buffers a series' chunks are decoded into.
///
/// ```
/// use strata_codec::{chunk_len_hint, encode_sealed, XorChunk};
///
/// let ts: Vec<i64> = (0..240).map(|i| i * 15_000).collect();
/// let vs: Vec<f64> = (0..240).map(f64::from).collect();
/// let mut sealed = Vec::new();
/// encode_sealed(&ts, &vs, &mut sealed);
/// assert_eq!(chunk_len_hint(&sealed), 240);
///
/// let mut head = XorChunk::new();
/// for (&t, &v) in ts.iter().zip(&vs) {
///     head.append(t, v);
/// }
/// assert_eq!(chunk_len_hint(head.bytes()), 240);
/// assert_eq!(chunk_len_hint(&[]), 0);
/// assert!(chunk_len_hint(&sealed[..4]) < 240);
/// ```
pub fn chunk_len_hint(bytes: &[u8]) -> usize {
    if !is_sealed(bytes) {
        return crate::chunk::read::len_hint(bytes);
    }
    let mut d = Decbuf::new(bytes.get(2..).unwrap_or(&[]));
    let n = d.uvarint();
    if d.check().is_err() {
        return 0;
    }
    let cap = (d.remaining() as u64).saturating_mul(packed::BLOCK as u64) + 2;
    usize::try_from(n.min(cap)).unwrap_or(0)
}

/// Whether `bytes` hold a sealed chunk rather than an `XorChunk`.
pub fn is_sealed(bytes: &[u8]) -> bool {
    bytes.first() == Some(&MAGIC)
}

/// [`decode_chunk_range_into`] for sealed chunks only.
pub fn decode_sealed_range_into(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<(), CodecError> {
    keep_appended(ts, vs, |ts, vs| decode_sealed(bytes, mint, maxt, ts, vs))
}

/// Decodes after the ends of `ts`/`vs`; returns how many samples are kept
/// there.
fn decode_sealed(
    bytes: &[u8],
    mint: i64,
    maxt: i64,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<usize, CodecError> {
    let (ts_len, vs_len) = (ts.len(), vs.len());
    let mut d = Decbuf::new(bytes);
    let &[magic, version] = d.bytes(2) else {
        return Err(CodecError::Truncated);
    };
    if magic != MAGIC {
        return Err(CodecError::Corrupt("not a sealed chunk"));
    }
    if version != VERSION {
        return Err(CodecError::BadVersion(version));
    }
    let n = d.uvarint();
    d.check()?;
    if n == 0 {
        return if d.remaining() == 0 {
            Ok(0)
        } else {
            Err(CodecError::Corrupt("trailing bytes"))
        };
    }
    // Each stream spends at least a byte per block of residuals, so a count
    // the input cannot hold is refused before anything is allocated.
    let cap = (d.remaining() as u64).saturating_mul(packed::BLOCK as u64) + 2;
    if n > cap {
        return Err(CodecError::Corrupt("more samples than bytes"));
    }
    let n = n as usize;
    // Streams hand over their integers in order, a run at a time; extending
    // by whole runs writes each sample once, with no zero-fill first.
    ts.reserve(n);
    vs.reserve(n);
    let mut last = None;
    packed::decode(&mut d, n, |_, run| {
        if !increasing(last, run) {
            return Err(CodecError::Corrupt("timestamps do not increase"));
        }
        last = run.last().copied().or(last);
        ts.extend_from_slice(run);
        Ok(())
    })?;

    let kind = d.bytes(1).first().copied();
    match kind {
        Some(VALUES_RAW) => {
            packed::decode(&mut d, n, |_, run| {
                vs.extend(run.iter().map(|&b| f64::from_bits(b as u64)));
                Ok(())
            })?;
        }
        Some(VALUES_DECIMAL) => decode_decimal(&mut d, n, vs)?,
        Some(_) => return Err(CodecError::Corrupt("value encoding")),
        None => return Err(CodecError::Truncated),
    }
    if d.remaining() != 0 {
        return Err(CodecError::Corrupt("trailing bytes"));
    }

    let (Some(t_out), Some(v_out)) = (ts.get_mut(ts_len..), vs.get_mut(vs_len..)) else {
        return Err(CodecError::Corrupt("buffer"));
    };
    if t_out.len() != n || v_out.len() != n {
        return Err(CodecError::Corrupt("stream length"));
    }
    let lo = t_out.partition_point(|&t| t < mint);
    let hi = t_out.partition_point(|&t| t <= maxt).max(lo);
    if lo > 0 {
        t_out.copy_within(lo..hi, 0);
        v_out.copy_within(lo..hi, 0);
    }
    Ok(hi - lo)
}

/// Appends `n` decimal values to `vs`.
fn decode_decimal(d: &mut Decbuf<'_>, n: usize, vs: &mut Vec<f64>) -> Result<(), CodecError> {
    let vs_len = vs.len();
    let e = d.bytes(1).first().copied().unwrap_or(0);
    let count = d.length_prefix(EXCEPTION_MIN_LEN);
    let rest = d.rest();
    // Skip over the exceptions now; they are applied after the stream.
    for _ in 0..count {
        d.uvarint();
        d.bytes(8);
    }
    d.check()?;
    if e > MAX_EXP {
        return Err(CodecError::Corrupt("decimal exponent"));
    }
    let scale = POW10.get(usize::from(e)).copied().unwrap_or(1.0);
    let exceptions = rest.get(..rest.len() - d.remaining()).unwrap_or(&[]);
    if e == 0 {
        packed::decode(d, n, |_, run| {
            vs.extend(run.iter().map(|&m| m as f64));
            Ok(())
        })?;
    } else {
        packed::decode(d, n, |_, run| {
            vs.extend(run.iter().map(|&m| decimal::value(m, scale)));
            Ok(())
        })?;
    }
    let v_out = vs.get_mut(vs_len..).unwrap_or(&mut []);
    let mut x = Decbuf::new(exceptions);
    let mut at = 0u64;
    for _ in 0..count {
        let i = at.saturating_add(x.uvarint());
        let bits = u64::from_le_bytes(x.bytes(8).try_into().unwrap_or([0; 8]));
        match usize::try_from(i).ok().and_then(|i| v_out.get_mut(i)) {
            Some(slot) => *slot = f64::from_bits(bits),
            None => return Err(CodecError::Corrupt("exception index")),
        }
        at = i + 1;
    }
    Ok(())
}

/// Whether `run` increases strictly, and starts above `last` if given.
#[inline(always)]
fn increasing(last: Option<i64>, run: &[i64]) -> bool {
    // A fold over pairs rather than `windows`, so that it vectorises.
    let inner = run
        .iter()
        .zip(run.iter().skip(1))
        .fold(true, |ok, (a, b)| ok & (a < b));
    let joined = match (last, run.first()) {
        (Some(l), Some(&f)) => l < f,
        _ => true,
    };
    inner & joined
}
