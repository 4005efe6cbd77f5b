//! The encoder: every shape of a stream sized exactly, the smallest
//! packed.

use super::spread::{Spread, Tally};
use super::{bytes_for, Shape, BLOCK, LINEAR, SPARSE, ZIGZAG};
use crate::varint::{put_uvarint, zigzag};

/// Reusable buffers for [`encode`], so that sealing a chunk does not
/// allocate per stream.
#[derive(Debug, Default)]
pub struct Scratch {
    /// First differences of the stream (order 1, and the input of order 2).
    deltas: Vec<i64>,
    /// The residual source of order 2 or [`LINEAR`].
    diffs: Vec<i64>,
    /// Counts for finding the most frequent value.
    tally: Tally,
    /// A candidate's header bytes, written to be measured.
    head: Vec<u8>,
    /// The smallest and largest integer of each block of a residual source.
    ranges: Vec<(i64, i64)>,
}

/// Appends `xs` as a packed stream. The decoder needs `xs.len()` from
/// elsewhere.
///
/// Every shape is sized exactly without being packed (see [`blocks_len`]);
/// only the smallest (the first among equals) is packed.
pub fn encode(xs: &[i64], scratch: &mut Scratch, out: &mut Vec<u8>) {
    let Scratch {
        deltas,
        diffs,
        tally,
        head,
        ranges,
    } = scratch;
    difference_into(xs, deltas);
    // The slope is the most frequent delta: found with order 1, before the
    // linear shape needs it (there are no deltas if `xs` is empty).
    let mut slope = 0;
    let mut best: Option<(usize, Shape, i64)> = None;
    for order in 0..=LINEAR {
        if order != LINEAR && usize::from(order) > xs.len() {
            continue;
        }
        let ys = source(xs, order, slope, deltas, diffs);
        let spread = Spread::of(ys, ranges);
        let mode = spread.most_frequent(ys, tally);
        if order == 1 {
            slope = mode;
        }
        for (zigzag, base) in [(false, spread.min), (true, mode)] {
            if zigzag && spread.zigzag_is_wider(mode) {
                continue;
            }
            let shape = Shape { order, zigzag };
            head.clear();
            write_head(xs, shape, base, slope, spread.shift, head);
            let size = head.len() + blocks_len(ys, ranges, zigzag, base, spread.shift);
            if best.is_none_or(|(s, _, _)| size < s) {
                best = Some((size, shape, base));
            }
        }
    }
    if let Some((_, shape, base)) = best {
        let ys = source(xs, shape.order, slope, deltas, diffs);
        let shift = Spread::of(ys, ranges).shift;
        write_head(xs, shape, base, slope, shift, out);
        pack_blocks(ys, shape, base, shift, out);
    }
}

/// The integers a shape of `order` turns into residuals: `xs` itself, its
/// differences (without the first `order` elements, which the stream
/// stores whole), or `x_i - i * slope`. Orders 1 and 2 expect `deltas` to
/// hold the first differences.
fn source<'a>(
    xs: &'a [i64],
    order: u8,
    slope: i64,
    deltas: &'a [i64],
    buf: &'a mut Vec<i64>,
) -> &'a [i64] {
    match order {
        0 => xs,
        1 => deltas,
        2 => {
            difference_into(deltas, buf);
            buf
        }
        _ => {
            buf.clear();
            buf.extend(
                (0i64..)
                    .zip(xs)
                    .map(|(i, &x)| x.wrapping_sub(i.wrapping_mul(slope))),
            );
            buf
        }
    }
}

/// Replaces `out` with the wrapping first differences of `xs`.
fn difference_into(xs: &[i64], out: &mut Vec<i64>) {
    out.clear();
    out.extend(
        xs.iter()
            .zip(xs.iter().skip(1))
            .map(|(a, b)| b.wrapping_sub(*a)),
    );
}
/// The residual of `y` around `base`: offsets from the minimum are taken as
/// unsigned, so they are exact over the whole i64 range.
#[inline(always)]
fn residual<const ZIGZAG: bool>(y: i64, base: i64, shift: u32) -> u64 {
    let o = (y as u64).wrapping_sub(base as u64);
    if ZIGZAG {
        zigzag((o as i64) >> shift)
    } else {
        o >> shift
    }
}

/// Appends a stream's header bytes for one shape: `base` is the minimum of
/// its residual source (no zig-zag) or their most frequent value.
fn write_head(xs: &[i64], shape: Shape, base: i64, slope: i64, shift: u32, out: &mut Vec<u8>) {
    out.push(shape.order | if shape.zigzag { ZIGZAG } else { 0 });
    out.push(shift as u8);
    put_uvarint(out, zigzag(base));
    if shape.order == LINEAR {
        put_uvarint(out, zigzag(slope));
        return;
    }
    let mut prev = 0i64;
    for (i, &x) in xs.iter().take(usize::from(shape.order)).enumerate() {
        // The second stored value of a twice-differenced stream is its
        // first delta.
        let stored = if i == 0 { x } else { x.wrapping_sub(prev) };
        put_uvarint(out, zigzag(stored));
        prev = x;
    }
}

/// Bytes [`pack_blocks`] would write for residuals around `base`, from each
/// block's range (see [`Spread::of`]) rather than from every residual.
///
/// Residuals grow with the distance from `base` (zig-zagged: on either
/// side), so a block's width is that of its smallest or largest integer's
/// residual; only the integers equal to `base` are zero, and only blocks
/// whose range holds `base` need counting. A block whose distances from
/// `base` overflow an `i64` is measured residual by residual.
fn blocks_len(ys: &[i64], ranges: &[(i64, i64)], zigzagged: bool, base: i64, shift: u32) -> usize {
    ys.chunks(BLOCK)
        .zip(ranges)
        .map(|(block, &(lo, hi))| {
            let or = match (zigzagged, lo.checked_sub(base), hi.checked_sub(base)) {
                (false, _, _) => residual::<false>(hi, base, shift),
                (true, Some(a), Some(b)) => zigzag(a >> shift).max(zigzag(b >> shift)),
                (true, _, _) => block
                    .iter()
                    .fold(0, |or, &y| or | residual::<true>(y, base, shift)),
            };
            let zeros = if (lo..=hi).contains(&base) {
                block.iter().filter(|&&y| y == base).count()
            } else {
                0
            };
            let (dense, sparse, _) = block_sizes(block.len(), or, block.len() - zeros);
            1 + dense.min(sparse)
        })
        .sum()
}

/// A block's body size (after its header byte) dense and sparse, and its
/// width, from its length, the OR of its residuals and how many are not
/// zero; sparse is `usize::MAX` when the block is all zero.
fn block_sizes(len: usize, or: u64, nonzero: usize) -> (usize, usize, u32) {
    let w = width(or);
    let dense = bytes_for(len, w);
    let sparse = if w == 0 {
        usize::MAX
    } else {
        len.div_ceil(8) + bytes_for(nonzero, w)
    };
    (dense, sparse, w)
}

fn pack_blocks(ys: &[i64], shape: Shape, base: i64, shift: u32, out: &mut Vec<u8>) {
    let mut res = [0u64; BLOCK];
    for block in ys.chunks(BLOCK) {
        for (r, &y) in res.iter_mut().zip(block) {
            *r = if shape.zigzag {
                residual::<true>(y, base, shift)
            } else {
                residual::<false>(y, base, shift)
            };
        }
        write_block(res.get(..block.len()).unwrap_or(&[]), out);
    }
}

/// Bits needed for `v`.
fn width(v: u64) -> u32 {
    64 - v.leading_zeros()
}

fn write_block(block: &[u64], out: &mut Vec<u8>) {
    let (or, nonzero) = block.iter().fold((0u64, 0usize), |(o, n), &r| {
        (o | r, n + usize::from(r != 0))
    });
    let (dense, sparse, w) = block_sizes(block.len(), or, nonzero);
    if sparse < dense {
        out.push(w as u8 | SPARSE);
        let bitmap = block
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &r)| m | (u64::from(r != 0) << i));
        out.extend_from_slice(
            bitmap
                .to_le_bytes()
                .get(..block.len().div_ceil(8))
                .unwrap_or(&[]),
        );
        pack(block.iter().copied().filter(|&r| r != 0), w, out);
    } else {
        out.push(w as u8);
        pack(block.iter().copied(), w, out);
    }
}
/// Appends `w`-bit values, least significant bit first, the last byte
/// zero-padded.
fn pack(values: impl Iterator<Item = u64>, w: u32, out: &mut Vec<u8>) {
    if w == 0 {
        return;
    }
    // Whole words are flushed at once; fewer than 64 bits stay pending.
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    for v in values {
        acc |= u128::from(v) << bits;
        bits += w;
        if bits >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            bits -= 64;
        }
    }
    let tail = acc.to_le_bytes();
    out.extend_from_slice(tail.get(..bits.div_ceil(8) as usize).unwrap_or(&[]));
}
