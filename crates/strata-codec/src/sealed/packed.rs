//! Packed integer streams: the one integer encoding of sealed chunks, used
//! for timestamps, decimal mantissas and raw value bits alike.
//!
//! A stream of `n` integers is differenced 0, 1 or 2 times (or has a line
//! subtracted), centred (on its minimum, or zig-zagged around its most
//! frequent value), stripped of the trailing zero bits all residuals share,
//! and bit-packed in blocks of 64 with a width byte per block. The encoder
//! sizes all eight combinations and packs the smallest; `docs/format.md`
//! draws the layout.

use crate::varint::{put_uvarint, unzigzag, zigzag, Decbuf};
use crate::CodecError;

/// Residuals per block.
pub const BLOCK: usize = 64;

/// Flag in a block's header byte: a bitmap of non-zero residuals follows,
/// then only those residuals.
const SPARSE: u8 = 0x80;

/// Flag in a stream's header byte: residuals are zig-zagged around a base
/// rather than offsets from the minimum.
const ZIGZAG: u8 = 0x04;

/// A stream [`Shape`] order: residuals are the integers minus a line through
/// them, `x_i - i * slope` (timestamps jittered around a fixed schedule).
const LINEAR: u8 = 3;

/// Packed bytes of one block, plus room for the widest unaligned load.
const BUF_LEN: usize = BLOCK * 8 + 16;

/// How a stream turns its integers into non-negative residuals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    /// Times the integers are differenced (0..=2), or [`LINEAR`].
    order: u8,
    /// Zig-zag around `base` (else: unsigned offsets from the minimum).
    zigzag: bool,
}

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

/// Where a residual source's integers lie.
#[derive(Clone, Copy, Debug)]
struct Spread {
    min: i64,
    max: i64,
    /// The trailing zero bits all offsets from the base share (63 if all
    /// are zero).
    ///
    /// Any base that is one of the integers gives the same shift: every
    /// offset is a difference of two integers, and every such difference is
    /// a difference of two offsets. So it is taken from the first integer,
    /// once per order, for both the minimum and the most frequent value.
    shift: u32,
}

impl Spread {
    /// The spread of `ys`, in one pass that also leaves each block's
    /// smallest and largest integer in `ranges`.
    fn of(ys: &[i64], ranges: &mut Vec<(i64, i64)>) -> Self {
        ranges.clear();
        let first = ys.first().copied().unwrap_or(0) as u64;
        let mut or = 0u64;
        for block in ys.chunks(BLOCK) {
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for &y in block {
                lo = lo.min(y);
                hi = hi.max(y);
                or |= (y as u64).wrapping_sub(first);
            }
            ranges.push((lo, hi));
        }
        let min = ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let max = ranges.iter().map(|r| r.1).max().unwrap_or(0);
        let shift = or.trailing_zeros().min(63);
        Self { min, max, shift }
    }

    /// Whether zig-zagging around `mode` is sure to be no smaller than
    /// offsets from the minimum: when it is the minimum and no offset
    /// overflows an `i64`, every residual merely doubles.
    fn zigzag_is_wider(&self, mode: i64) -> bool {
        mode == self.min && self.max.checked_sub(self.min).is_some()
    }

    /// How many distinct residuals the integers could have.
    fn span(&self) -> u64 {
        ((self.max as u64).wrapping_sub(self.min as u64) >> self.shift).saturating_add(1)
    }

    /// The value of `ys` (of this spread) that occurs most often, the
    /// smallest among ties, 0 if none.
    ///
    /// Narrow streams (intervals, deltas of most gauges and counters) are
    /// counted in a table indexed by residual, wide ones by coarser bucket.
    fn most_frequent(&self, ys: &[i64], tally: &mut Tally) -> i64 {
        match self.span() {
            _ if ys.is_empty() => 0,
            1 => self.min,
            span if span <= COUNTED_SPAN => tally.most_frequent_narrow(ys, self.min, self.shift),
            span => tally.most_frequent_wide(ys, self.min, self.shift, span),
        }
    }
}

/// Tables for counting how often each integer of a stream occurs.
#[derive(Debug, Default)]
pub struct Tally {
    /// Occurrences per residual of a narrow stream; all zero between uses.
    narrow: Vec<u32>,
    /// The values of a wide stream that share a bucket, sorted.
    sorted: Vec<i64>,
}

impl Tally {
    /// Counts residuals `(y - min) >> shift` below [`COUNTED_SPAN`].
    fn most_frequent_narrow(&mut self, ys: &[i64], min: i64, shift: u32) -> i64 {
        let counts = &mut self.narrow;
        counts.resize(COUNTED_SPAN as usize, 0);
        let slot = |y: i64| ((y as u64).wrapping_sub(min as u64) >> shift) as usize;
        for &y in ys {
            if let Some(c) = counts.get_mut(slot(y)) {
                *c += 1;
            }
        }
        // Reading each count back also resets it (later copies of a value
        // read 0), leaving the table clean for the next stream. Counts are
        // ranked, then lower slots, in one integer, so no branch is taken.
        let mut best = 0u64;
        for &y in ys {
            let at = slot(y);
            if let Some(c) = counts.get_mut(at) {
                best = best.max((u64::from(*c) << 32) | (COUNTED_SPAN - at as u64));
                *c = 0;
            }
        }
        let at = COUNTED_SPAN - (best & 0xFFFF_FFFF);
        (min as u64).wrapping_add(at << shift) as i64
    }

    /// Counts residuals by bucket, `span` of them spread over
    /// [`COUNTED_SPAN`] buckets. A value that occurs twice lies in a bucket
    /// counted twice, so only those buckets' values (few, in a wide stream)
    /// are sorted to find the most frequent; if no value repeats, it is the
    /// smallest.
    fn most_frequent_wide(&mut self, ys: &[i64], min: i64, shift: u32, span: u64) -> i64 {
        let counts = &mut self.narrow;
        counts.resize(COUNTED_SPAN as usize, 0);
        let coarse = shift + (64 - ((span - 1) / COUNTED_SPAN).leading_zeros());
        let bucket = |y: i64| {
            let off = (y as u64).wrapping_sub(min as u64);
            off.checked_shr(coarse).unwrap_or(0) as usize
        };
        for &y in ys {
            if let Some(c) = counts.get_mut(bucket(y)) {
                *c += 1;
            }
        }
        let shared = &mut self.sorted;
        shared.clear();
        shared.extend(
            ys.iter()
                .copied()
                .filter(|&y| counts.get(bucket(y)).is_some_and(|&c| c > 1)),
        );
        for &y in ys {
            if let Some(c) = counts.get_mut(bucket(y)) {
                *c = 0;
            }
        }
        shared.sort_unstable();
        let mut best = (1usize, min);
        for run in shared.chunk_by(|a, b| a == b) {
            if let Some(&v) = run.first() {
                if run.len() > best.0 {
                    best = (run.len(), v);
                }
            }
        }
        best.1
    }
}

/// Entries of the counting table: the widest residual range counted
/// exactly, and the number of buckets of a wider one.
const COUNTED_SPAN: u64 = 4096;

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

fn bytes_for(count: usize, w: u32) -> usize {
    (count * w as usize).div_ceil(8)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(xs: &[i64]) -> usize {
        let mut out = Vec::new();
        encode(xs, &mut Scratch::default(), &mut out);
        let mut got = vec![0i64; xs.len()];
        let mut d = Decbuf::new(&out);
        decode(&mut d, xs.len(), |at, vals| {
            got.get_mut(at..at + vals.len())
                .unwrap()
                .copy_from_slice(vals);
            Ok(())
        })
        .unwrap();
        assert_eq!(d.remaining(), 0);
        assert_eq!(got, xs);
        out.len()
    }

    #[test]
    fn shapes_round_trip() {
        round_trip(&[]);
        round_trip(&[5]);
        round_trip(&[i64::MIN, i64::MAX]);
        round_trip(&[i64::MAX, i64::MIN, 0, -1, 1, i64::MAX]);
        let regular: Vec<i64> = (0..1000).map(|i| 1_700_000_000_000 + i * 15_000).collect();
        assert!(round_trip(&regular) < 40);
        let pages: Vec<i64> = (0..300).map(|i| (1000 + (i * 7919) % 97) * 4096).collect();
        round_trip(&pages);
        let wide: Vec<i64> = (0..200)
            .map(|i: i64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
            .collect();
        round_trip(&wide);
        let sparse: Vec<i64> = (0..500).map(|i| if i % 17 == 0 { 3 } else { 0 }).collect();
        assert!(round_trip(&sparse) < 100);
    }

    proptest::proptest! {
        /// Long streams whose blocks change width, so that dense blocks of
        /// every width, sparse and zero blocks follow one another, far from
        /// the stream's end and near it.
        #[test]
        fn mixed_blocks_round_trip(
            runs in proptest::collection::vec((0u32..64, 1usize..200, 0u8..4), 1..30),
        ) {
            let mut xs = Vec::new();
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            for (bits, len, shape) in runs {
                for i in 0..len {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let noise = if bits == 0 { 0 } else { (seed >> (64 - bits)) as i64 };
                    xs.push(match shape {
                        0 => noise,
                        1 => i as i64 * 1000 + noise % 3,
                        2 => if i % 9 == 0 { noise } else { 0 },
                        _ => -noise,
                    });
                }
            }
            round_trip(&xs);
        }
    }
}
