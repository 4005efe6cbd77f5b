//! The decoder: a stream's header, then its blocks unpacked and rebuilt
//! into integers, handed over a run at a time.

use super::{bytes_for, BLOCK, BUF_LEN, LINEAR, SPARSE, ZIGZAG};
use crate::varint::{unzigzag, Decbuf};
use crate::CodecError;

/// Decodes a stream of `n` integers from the front of `d`, handing them to
/// `sink` in order as `(index of the first, values)` runs of at most
/// [`BLOCK`] + 2.
#[inline(always)]
pub fn decode<F>(d: &mut Decbuf<'_>, n: usize, mut sink: F) -> Result<(), CodecError>
where
    F: FnMut(usize, &[i64]) -> Result<(), CodecError>,
{
    let head = d.bytes(2);
    let (&[kind, shift], Some(base)) = (head, Some(unzigzag(d.uvarint()))) else {
        return Err(CodecError::Truncated);
    };
    let order = kind & 0x03;
    if kind & !(0x03 | ZIGZAG) != 0 || shift > 63 {
        return Err(CodecError::Corrupt("packed stream header"));
    }
    // For a linear stream, `delta` is the slope and `prev` the line's
    // height at the next index.
    let slope = if order == LINEAR {
        unzigzag(d.uvarint())
    } else {
        0
    };
    let stored = if order == LINEAR {
        0
    } else {
        usize::from(order).min(n)
    };
    let mut head_vals = [0i64; 2];
    let mut prev = 0i64;
    let mut delta = slope;
    for (i, slot) in head_vals.iter_mut().take(stored).enumerate() {
        let v = unzigzag(d.uvarint());
        if i == 0 {
            prev = v;
        } else {
            delta = v;
            prev = prev.wrapping_add(v);
        }
        *slot = prev;
    }
    if let Some(e) = d.err() {
        return Err(e.clone());
    }
    sink(0, head_vals.get(..stored).unwrap_or(&[]))?;
    let mut buf = [0u8; BUF_LEN];
    let mut res = [0u64; BLOCK];
    let mut packed = [0u64; BLOCK];
    let mut vals = [0i64; BLOCK];
    let mut at = stored;
    while at < n {
        let len = (n - at).min(BLOCK);
        let (Some(res), Some(vals)) = (res.get_mut(..len), vals.get_mut(..len)) else {
            return Err(CodecError::Corrupt("block"));
        };
        let zz = kind & ZIGZAG != 0;
        // Dense blocks are unpacked straight into the rebuilding loop, so
        // residuals never go through memory.
        macro_rules! rebuild_from {
            ($residuals:expr) => {
                match (order, zz) {
                    (0, false) => {
                        rebuild::<0, false>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (0, true) => {
                        rebuild::<0, true>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (1, false) => {
                        rebuild::<1, false>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (1, true) => {
                        rebuild::<1, true>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (2, false) => {
                        rebuild::<2, false>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (2, true) => {
                        rebuild::<2, true>($residuals, vals, base, shift, &mut prev, &mut delta)
                    }
                    (_, false) => rebuild::<LINEAR, false>(
                        $residuals, vals, base, shift, &mut prev, &mut delta,
                    ),
                    (_, true) => rebuild::<LINEAR, true>(
                        $residuals, vals, base, shift, &mut prev, &mut delta,
                    ),
                }
            };
        }
        match read_block(d, &mut buf, res, &mut packed)? {
            Residuals::Zero => rebuild_from!(std::iter::repeat_n(0u64, len)),
            Residuals::Dense(w) if w <= 56 => {
                let mask = (1u64 << w) - 1;
                let w = w as usize;
                rebuild_from!((0..len).map(|j| {
                    let bit = j * w;
                    (load_u64(&buf, bit >> 3) >> (bit & 7)) & mask
                }))
            }
            Residuals::Dense(w) => {
                let mask = u64::MAX >> (64 - w);
                let w = w as usize;
                rebuild_from!((0..len).map(|j| {
                    let bit = j * w;
                    (load_u128(&buf, bit >> 3) >> (bit & 7)) as u64 & mask
                }))
            }
            Residuals::Sparse => rebuild_from!(res.iter().copied()),
        }
        sink(at, vals)?;
        at += len;
    }
    Ok(())
}

/// Turns residuals back into integers, carrying the running value and delta
/// across blocks.
#[inline(always)]
fn rebuild<const ORDER: u8, const ZZ: bool>(
    res: impl Iterator<Item = u64>,
    vals: &mut [i64],
    base: i64,
    shift: u8,
    prev: &mut i64,
    delta: &mut i64,
) {
    let (mut p, mut dl) = (*prev, *delta);
    for (v, r) in vals.iter_mut().zip(res) {
        let off = if ZZ {
            (unzigzag(r) << shift) as u64
        } else {
            r << shift
        };
        let y = (base as u64).wrapping_add(off) as i64;
        *v = match ORDER {
            0 => y,
            1 => {
                p = p.wrapping_add(y);
                p
            }
            2 => {
                dl = dl.wrapping_add(y);
                p = p.wrapping_add(dl);
                p
            }
            _ => {
                let v = y.wrapping_add(p);
                p = p.wrapping_add(dl);
                v
            }
        };
    }
    (*prev, *delta) = (p, dl);
}

/// Where [`read_block`] left a block's residuals.
enum Residuals {
    /// All zero.
    Zero,
    /// Packed at this width (1..=64) at the start of the buffer.
    Dense(u32),
    /// Unpacked into the residual slice.
    Sparse,
}

/// Reads one block of `res.len()` residuals.
#[inline(always)]
fn read_block(
    d: &mut Decbuf<'_>,
    buf: &mut [u8; BUF_LEN],
    res: &mut [u64],
    packed: &mut [u64; BLOCK],
) -> Result<Residuals, CodecError> {
    let &[h] = d.bytes(1) else {
        return Err(CodecError::Truncated);
    };
    let w = u32::from(h & !SPARSE);
    if w > 64 || (h & SPARSE != 0 && w == 0) {
        return Err(CodecError::Corrupt("block width"));
    }
    if w == 0 {
        return Ok(Residuals::Zero);
    }
    if h & SPARSE == 0 {
        load(d, buf, bytes_for(res.len(), w))?;
        return Ok(Residuals::Dense(w));
    }
    let bm = d.bytes(res.len().div_ceil(8));
    let mut bitmap = bm.iter().rev().fold(0u64, |m, &b| (m << 8) | u64::from(b));
    if bm.len() != res.len().div_ceil(8) {
        return Err(CodecError::Truncated);
    }
    if bitmap >> (res.len() - 1) >> 1 != 0 {
        return Err(CodecError::Corrupt("sparse bitmap"));
    }
    let pop = bitmap.count_ones() as usize;
    load(d, buf, bytes_for(pop, w))?;
    let packed = packed.get_mut(..pop).unwrap_or(&mut []);
    unpack(buf, w, packed);
    res.fill(0);
    for &v in packed.iter() {
        let i = bitmap.trailing_zeros() as usize;
        bitmap &= bitmap.wrapping_sub(1);
        if let Some(slot) = res.get_mut(i) {
            *slot = v;
        }
    }
    Ok(Residuals::Sparse)
}

/// Copies the next `len` bytes into `buf`, whose tail past them is slack
/// for unaligned loads.
#[inline(always)]
fn load(d: &mut Decbuf<'_>, buf: &mut [u8; BUF_LEN], len: usize) -> Result<(), CodecError> {
    let src = d.bytes(len);
    match buf.get_mut(..len) {
        Some(dst) if src.len() == len => {
            dst.copy_from_slice(src);
            Ok(())
        }
        _ => Err(CodecError::Truncated),
    }
}

/// Unpacks `out.len()` values of `w` (1..=64) bits from `buf`.
#[inline(always)]
fn unpack(buf: &[u8; BUF_LEN], w: u32, out: &mut [u64]) {
    let w = w as usize;
    if w <= 56 {
        let mask = (1u64 << w) - 1;
        for (j, o) in out.iter_mut().enumerate() {
            let bit = j * w;
            *o = (load_u64(buf, bit >> 3) >> (bit & 7)) & mask;
        }
    } else {
        let mask = u64::MAX >> (64 - w);
        for (j, o) in out.iter_mut().enumerate() {
            let bit = j * w;
            *o = (load_u128(buf, bit >> 3) >> (bit & 7)) as u64 & mask;
        }
    }
}

/// Eight bytes at `at` (< `BLOCK * 8`), little-endian. Masking the index
/// lets the compiler drop the bounds check.
#[inline(always)]
fn load_u64(buf: &[u8; BUF_LEN], at: usize) -> u64 {
    let at = at & (BLOCK * 8 - 1);
    buf.get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Sixteen bytes at `at` (< `BLOCK * 8`), little-endian.
#[inline(always)]
fn load_u128(buf: &[u8; BUF_LEN], at: usize) -> u128 {
    let at = at & (BLOCK * 8 - 1);
    buf.get(at..at + 16)
        .and_then(|b| <[u8; 16]>::try_from(b).ok())
        .map_or(0, u128::from_le_bytes)
}
