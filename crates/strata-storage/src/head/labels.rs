//! A head series' label set, packed: in the series itself when short, else
//! in one allocation.
//!
//! Every write request looks up each of its series by label hash and then
//! compares the labels it finds. Held as `Label`s, that comparison chased a
//! pointer per name and per value into memory no other series touched, and
//! the lookup was the largest single cost of ingest. Packed, it reads one or
//! two cache lines, and a series takes one allocation instead of 2n + 1.
//!
//! Label names are few (`__name__`, `instance`, `job` and a few dozen
//! more) and repeat in every series: the first [`MAX_NAME_CODES`] names
//! seen are kept once, process-wide, and a series holds a one- or two-byte
//! code for each instead of its bytes (about a quarter of a node_exporter
//! series' labels).
//!
//! Values repeat too, if less: a metric name in every series of every
//! target, a target's `instance` in each of its series, `job`, a CPU's
//! mode. The first [`MAX_VALUE_CODES`] values of [`MIN_CODED_VALUE`] bytes
//! or more (up to [`MAX_CODED_VALUE`]) get a code the same way, and a
//! series holds two or three bytes for each. The table is never emptied:
//! values that churn with pods may fill it, and later values then stay
//! inline, so it stays bounded (at most 8 MiB of values and about 3 MiB of
//! map) whatever senders do.
//! On node_exporter's series (vmagent scraping captured pages, 1 M series)
//! the packed labels went from 57 bytes a series to 11, short enough to be
//! held in the series.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use strata_codec::LabelPairs;

/// Label names given a code, at most: the table is never emptied, so a
/// sender inventing names cannot grow it past this; later names stay
/// inline.
const MAX_NAME_CODES: usize = 1024;

/// Names by code; a slot is set before any series holds its code.
static NAMES: [OnceLock<&'static str>; MAX_NAME_CODES] =
    [const { OnceLock::new() }; MAX_NAME_CODES];

/// Values given a code, at most (see the module's note).
const MAX_VALUE_CODES: usize = 1 << 16;

/// Values shorter than this stay inline: their length and bytes take no
/// more than a code.
const MIN_CODED_VALUE: usize = 3;

/// Values longer than this stay inline: long ones are seldom shared.
const MAX_CODED_VALUE: usize = 128;

/// Values by code; a slot is set before any series holds its code.
static VALUES: [OnceLock<&'static str>; MAX_VALUE_CODES] =
    [const { OnceLock::new() }; MAX_VALUE_CODES];

/// Bytes the value table holds: its strings and its map's entries.
static VALUE_TABLE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Whether every value code is taken.
static VALUE_TABLE_FULL: AtomicBool = AtomicBool::new(false);

/// Heap bytes of the process-wide value table (see the module's note).
pub(crate) fn value_table_bytes() -> usize {
    VALUE_TABLE_BYTES.load(Ordering::Relaxed)
}

/// Values with a code, and the block their bytes go to: values are kept
/// side by side, a few cache lines for the values a scrape's series share,
/// rather than one allocation each.
struct ValueCodes {
    by_value: FxHashMap<&'static str, u32>,
    block: &'static mut [u8],
}

/// Bytes of a block of values.
const VALUE_BLOCK: usize = 64 << 10;

fn value_codes() -> &'static RwLock<ValueCodes> {
    static CODES: OnceLock<RwLock<ValueCodes>> = OnceLock::new();
    CODES.get_or_init(|| {
        RwLock::new(ValueCodes {
            by_value: FxHashMap::default(),
            block: &mut [],
        })
    })
}

/// The code of `value`, given one if it may have one and codes are left.
fn value_code(value: &str) -> Option<u32> {
    if !(MIN_CODED_VALUE..=MAX_CODED_VALUE).contains(&value.len()) {
        return None;
    }
    if let Some(&c) = value_codes().read().by_value.get(value) {
        return Some(c);
    }
    // Once the table is full, a value it lacks takes no write lock.
    if VALUE_TABLE_FULL.load(Ordering::Relaxed) {
        return None;
    }
    let mut codes = value_codes().write();
    if let Some(&c) = codes.by_value.get(value) {
        return Some(c);
    }
    let n = codes.by_value.len();
    let Some(slot) = VALUES.get(n) else {
        VALUE_TABLE_FULL.store(true, Ordering::Relaxed);
        return None;
    };
    let code = u32::try_from(n).ok()?;
    if codes.block.len() < value.len() {
        // Kept for the life of the process: at most MAX_VALUE_CODES
        // values of at most MAX_CODED_VALUE bytes.
        codes.block = Box::leak(vec![0; VALUE_BLOCK].into_boxed_slice());
        VALUE_TABLE_BYTES.fetch_add(VALUE_BLOCK, Ordering::Relaxed);
    }
    let block = std::mem::take(&mut codes.block);
    let (kept, rest) = block.split_at_mut(value.len());
    codes.block = rest;
    kept.copy_from_slice(value.as_bytes());
    let kept: &'static [u8] = kept;
    let kept = as_str(kept);
    let _ = slot.set(kept);
    let before = codes.by_value.capacity();
    codes.by_value.insert(kept, code);
    if codes.by_value.capacity() != before {
        // A key, a code and a control byte a slot.
        let slot_bytes = std::mem::size_of::<(&str, u32)>() + 1;
        let grown = (codes.by_value.capacity() - before) * slot_bytes;
        VALUE_TABLE_BYTES.fetch_add(grown, Ordering::Relaxed);
    }
    Some(code)
}

/// Codes by name, for new label sets.
fn codes() -> &'static RwLock<FxHashMap<&'static str, u32>> {
    static CODES: OnceLock<RwLock<FxHashMap<&'static str, u32>>> = OnceLock::new();
    CODES.get_or_init(|| RwLock::new(FxHashMap::default()))
}

/// The code of `name`, given one if there are codes left.
fn name_code(name: &str) -> Option<u32> {
    if let Some(&c) = codes().read().get(name) {
        return Some(c);
    }
    let mut map = codes().write();
    if let Some(&c) = map.get(name) {
        return Some(c);
    }
    let code = u32::try_from(map.len()).ok()?;
    let slot = NAMES.get(map.len())?;
    // Kept for the life of the process: at most MAX_NAME_CODES names.
    let name: &'static str = Box::leak(name.into());
    let _ = slot.set(name);
    map.insert(name, code);
    Some(code)
}

/// The count, then each name and value, sorted by name, each as a varint
/// of its code times two plus one, or of its length times two followed by
/// its bytes.
///
/// Packed into [`INLINE`] bytes or fewer (a node_exporter series' labels
/// take about 11 once its values have codes), they are held in the
/// series itself, in the 16 bytes a boxed slice's pointer and length
/// take; longer, in an allocation of their own.
pub struct SeriesLabels(Packed);

/// Packed bytes held inline at most: all but the last of the 16 bytes,
/// which says how many (none but on a little-endian 64-bit target: the
/// length's top byte, which tells the two forms apart, is the last one
/// there only).
const INLINE: usize = if cfg!(all(target_endian = "little", target_pointer_width = "64")) {
    15
} else {
    0
};

/// Set in the last byte of an inline [`Packed`]; clear there for a boxed
/// one, whose length's top byte it is (lengths are far below 2^56).
const INLINE_TAG: u8 = 0x80;

/// Packed labels: up to [`INLINE`] bytes inline, the last byte their
/// count with [`INLINE_TAG`]; else a boxed slice's raw parts.
#[repr(C)]
union Packed {
    inline: [u8; 16],
    boxed: Boxed,
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Boxed {
    ptr: *mut u8,
    len: usize,
}

const _: () = assert!(std::mem::size_of::<Packed>() == 16);

#[allow(unsafe_code)]
impl Packed {
    fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut inline = [0u8; 16];
            for (to, from) in inline.iter_mut().zip(bytes) {
                *to = *from;
            }
            inline[15] = INLINE_TAG | bytes.len() as u8;
            return Self { inline };
        }
        // Boxed in exactly its size (see `super::alloc::fit`).
        let raw = Box::into_raw(Box::<[u8]>::from(bytes));
        Self {
            boxed: Boxed {
                ptr: raw.cast::<u8>(),
                len: raw.len(),
            },
        }
    }

    fn is_inline(&self) -> bool {
        // SAFETY: every byte is initialized in both forms (`Boxed` has no
        // padding); only the last one is read as a plain byte.
        INLINE > 0 && unsafe { self.inline[15] } & INLINE_TAG != 0
    }

    fn bytes(&self) -> &[u8] {
        if self.is_inline() {
            // SAFETY: inline, as just checked; the count is at most 15.
            let inline = unsafe { &self.inline };
            let n = usize::from(inline[15] & !INLINE_TAG);
            inline.get(..n).unwrap_or_default()
        } else {
            // SAFETY: boxed: the raw parts of a live `Box<[u8]>` this
            // value owns.
            unsafe { std::slice::from_raw_parts(self.boxed.ptr, self.boxed.len) }
        }
    }
}

#[allow(unsafe_code)]
impl Drop for Packed {
    fn drop(&mut self) {
        if !self.is_inline() {
            // SAFETY: boxed: the raw parts `Packed::new` took from a box,
            // given back once.
            unsafe {
                let Boxed { ptr, len } = self.boxed;
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
            }
        }
    }
}

// SAFETY: `Packed` owns its bytes as a `Box<[u8]>` would and never
// changes them: sending or sharing it is as safe as a box's.
#[allow(unsafe_code)]
unsafe impl Send for Packed {}
#[allow(unsafe_code)]
unsafe impl Sync for Packed {}

impl Clone for SeriesLabels {
    fn clone(&self) -> Self {
        Self(Packed::new(self.0.bytes()))
    }
}

impl SeriesLabels {
    pub fn new(labels: &(impl LabelPairs + ?Sized)) -> Self {
        Self(super::alloc::with_scratch(|buf| {
            pack(labels, buf);
            Packed::new(buf)
        }))
    }

    /// Whether `other` holds exactly these labels, in the same order.
    pub fn eq_pairs(&self, other: &(impl LabelPairs + ?Sized)) -> bool {
        let mut r = Reader {
            buf: self.0.bytes(),
        };
        if r.len() != other.len() {
            return false;
        }
        other
            .pairs()
            .all(|(n, v)| r.name() == n.as_bytes() && r.value() == v.as_bytes())
    }

    /// Where the packed labels start, to prefetch them.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.0.bytes().as_ptr()
    }

    /// Heap bytes held: none when inline.
    pub fn heap_bytes(&self) -> usize {
        if self.0.is_inline() {
            0
        } else {
            self.0.bytes().len()
        }
    }
}

impl LabelPairs for SeriesLabels {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut r = Reader {
            buf: self.0.bytes(),
        };
        let n = r.len();
        (0..n).map(move |_| (as_str(r.name()), as_str(r.value())))
    }
    fn len(&self) -> usize {
        Reader {
            buf: self.0.bytes(),
        }
        .len()
    }
}

impl std::fmt::Debug for SeriesLabels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.pairs()).finish()
    }
}

#[allow(unsafe_code)]
fn as_str(b: &[u8]) -> &str {
    // SAFETY: `SeriesLabels::new` is the only constructor and copies whole
    // `&str`s, each behind its own length, or codes of names taken from
    // `&str`s; the buffer is never mutated.
    unsafe { std::str::from_utf8_unchecked(b) }
}

/// Appends `labels` packed (see [`SeriesLabels`]) to `buf`.
fn pack(labels: &(impl LabelPairs + ?Sized), buf: &mut Vec<u8>) {
    put_len(buf, labels.len());
    for (n, v) in labels.pairs() {
        match name_code(n) {
            Some(code) => put_len(buf, code as usize * 2 + 1),
            None => {
                put_len(buf, n.len() * 2);
                buf.extend_from_slice(n.as_bytes());
            }
        }
        match value_code(v) {
            Some(code) => put_len(buf, code as usize * 2 + 1),
            None => {
                put_len(buf, v.len() * 2);
                buf.extend_from_slice(v.as_bytes());
            }
        }
    }
}

fn put_len(buf: &mut Vec<u8>, n: usize) {
    strata_codec::varint::put_uvarint(buf, n as u64);
}

/// Reads a buffer `SeriesLabels::new` wrote; cannot run past it.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn len(&mut self) -> usize {
        let mut n = 0usize;
        let mut shift = 0;
        while let Some((&b, rest)) = self.buf.split_first() {
            self.buf = rest;
            n |= usize::from(b & 0x7f) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        n
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        head
    }

    /// A name: from the table by its code, or inline.
    fn name(&mut self) -> &'a [u8] {
        self.coded(&NAMES)
    }

    /// A value: from the table by its code, or inline.
    fn value(&mut self) -> &'a [u8] {
        self.coded(&VALUES)
    }

    fn coded(&mut self, table: &'static [OnceLock<&'static str>]) -> &'a [u8] {
        let x = self.len();
        if x & 1 == 1 {
            return table
                .get(x / 2)
                .and_then(OnceLock::get)
                .map_or(&[][..], |n| n.as_bytes());
        }
        let n = (x / 2).min(self.buf.len());
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use strata_codec::Label;

    proptest! {
        #[test]
        fn round_trips_and_compares(
            pairs in proptest::collection::vec(("\\PC{0,200}", "\\PC{0,300}"), 0..20),
            other in proptest::collection::vec(("\\PC{0,3}", "\\PC{0,3}"), 0..4),
        ) {
            let labels: Vec<Label> = pairs.iter().map(|(n, v)| Label::new(n, v)).collect();
            let s = SeriesLabels::new(&labels[..]);
            prop_assert_eq!(s.to_labels(), labels.clone());
            prop_assert_eq!(LabelPairs::len(&s), labels.len());
            prop_assert!(s.eq_pairs(&labels[..]));
            let other: Vec<Label> = other.iter().map(|(n, v)| Label::new(n, v)).collect();
            prop_assert_eq!(s.eq_pairs(&other[..]), other == labels);
        }
    }

    #[test]
    fn names_are_held_as_codes_and_read_back() {
        let labels = [
            Label::new("__name__", "node_cpu_seconds_total"),
            Label::new("cpu", "0"),
            Label::new("instance", "host-00001:9100"),
            Label::new("job", "node"),
        ];
        let s = SeriesLabels::new(&labels[..]);
        // The count, a code for each name (unless another test has taken
        // every code first), and each value with its length.
        let varint = |x: usize| (usize::BITS - (x | 1).leading_zeros()).div_ceil(7) as usize;
        // A code's varint, or the length's and the bytes.
        let size = |code: Option<u32>, text: &str| match code {
            Some(c) => varint(c as usize * 2 + 1),
            None => varint(text.len() * 2) + text.len(),
        };
        let names: usize = labels
            .iter()
            .map(|l| size(name_code(&l.name), &l.name))
            .sum();
        let values: usize = labels
            .iter()
            .map(|l| size(value_code(&l.value), &l.value))
            .sum();
        assert_eq!(s.0.bytes().len(), 1 + names + values);
        // "0" is too short for a code; the others have one (unless the
        // table is full) and take at most three bytes.
        assert_eq!(value_code("0"), None);
        assert!(
            values <= 2 + 3 * 3 || value_code("node").is_none(),
            "{values}"
        );
        let inline: usize = labels.iter().map(|l| l.name.len() + 1).sum();
        assert!(names < inline || name_code("job").is_none());
        assert_eq!(s.to_labels(), labels);
        assert!(s.eq_pairs(&labels[..]));
        let mut other = labels.clone();
        other[1] = Label::new("cpu", "1");
        assert!(!s.eq_pairs(&other[..]));
        other[1] = Label::new("cpv", "0");
        assert!(!s.eq_pairs(&other[..]));
    }

    #[test]
    fn a_name_past_the_codes_stays_inline() {
        // Fill the table (other tests share it: whatever they took counts).
        for i in 0..MAX_NAME_CODES {
            name_code(&format!("filler_{i}"));
        }
        assert_eq!(name_code("never_seen_before_name"), None);
        let labels = [
            Label::new("never_seen_before_name", "v"),
            Label::new("zz", "w"),
        ];
        let s = SeriesLabels::new(&labels[..]);
        assert_eq!(s.to_labels(), labels);
        assert!(s.eq_pairs(&labels[..]));
        assert!(!s.eq_pairs(
            &[
                Label::new("never_seen_before_namf", "v"),
                Label::new("zz", "w")
            ][..]
        ));
    }

    #[test]
    fn a_value_past_the_codes_or_too_long_stays_inline() {
        let long = "x".repeat(MAX_CODED_VALUE + 1);
        assert_eq!(value_code(&long), None);
        for i in 0..MAX_VALUE_CODES {
            value_code(&format!("filler_value_{i}"));
        }
        assert_eq!(value_code("a value never seen before"), None);
        assert!(
            VALUE_TABLE_FULL.load(Ordering::Relaxed),
            "a full table is said so once, and no write lock is taken after"
        );
        let labels = [
            Label::new("a", "a value never seen before"),
            Label::new("b", long.as_str()),
            Label::new("c", "filler_value_7"),
        ];
        let s = SeriesLabels::new(&labels[..]);
        assert_eq!(s.to_labels(), labels);
        assert!(s.eq_pairs(&labels[..]));
        let mut other = labels.clone();
        other[2] = Label::new("c", "filler_value_8");
        assert!(!s.eq_pairs(&other[..]));
        assert!(value_table_bytes() >= MAX_VALUE_CODES * "filler_value_".len());
    }

    #[test]
    fn short_packings_are_held_inline_and_long_ones_boxed() {
        // "b" gets no code (too short), so each value takes its length
        // and bytes: one byte for the count, then per label a name code
        // or inline name, and the value.
        for n in 0..40 {
            let value = "v".repeat(n % 3);
            let labels: Vec<Label> = (0..n)
                .map(|i| Label::new(format!("n{i:02}"), value.as_str()))
                .collect();
            let s = SeriesLabels::new(&labels[..]);
            let packed = s.0.bytes().len();
            assert_eq!(s.0.is_inline(), packed <= INLINE, "{packed} bytes");
            assert_eq!(s.heap_bytes(), if packed <= INLINE { 0 } else { packed });
            assert_eq!(s.to_labels(), labels);
            assert!(s.eq_pairs(&labels[..]));
            let copy = s.clone();
            assert_eq!(copy.to_labels(), labels);
            drop(s);
            assert!(copy.eq_pairs(&labels[..]), "the copy owns its bytes");
        }
        assert!(SeriesLabels::new(&[Label::new("a", "b")][..]).0.is_inline());
        assert!(!SeriesLabels::new(&[Label::new("a", "x".repeat(200))][..])
            .0
            .is_inline());
    }

    #[test]
    fn a_moved_byte_is_a_different_set() {
        let a = [Label::new("ab", "c")];
        let b = [Label::new("a", "bc")];
        assert!(!SeriesLabels::new(&a[..]).eq_pairs(&b[..]));
    }
}
