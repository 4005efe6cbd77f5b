//! Packed integer streams: the one integer encoding of sealed chunks, used
//! for timestamps, decimal mantissas and raw value bits alike.
//!
//! A stream of `n` integers is differenced 0, 1 or 2 times (or has a line
//! subtracted), centred (on its minimum, or zig-zagged around its most
//! frequent value), stripped of the trailing zero bits all residuals share,
//! and bit-packed in blocks of 64 with a width byte per block. The encoder
//! sizes all eight combinations and packs the smallest; `docs/format.md`
//! draws the layout.
//!
//! By seam: the stream's shapes and constants (this file), the encoder
//! (`encode`), where a source's integers lie and which is most frequent
//! (`spread`), the decoder (`decode`).

mod decode;
mod encode;
mod spread;
#[cfg(test)]
mod tests;

pub use decode::decode;
pub use encode::{encode, Scratch};

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

/// Bytes that `count` values of `w` bits take packed.
fn bytes_for(count: usize, w: u32) -> usize {
    (count * w as usize).div_ceil(8)
}
