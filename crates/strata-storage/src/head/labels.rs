//! A head series' label set in one allocation.
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
//! series' labels). Values stay inline: they churn with pods and would need
//! counting to be let go.

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

/// The count, then each name and value, sorted by name: a name as a varint
/// of its code times two plus one, or of its length times two followed by
/// its bytes; a value as a varint length and its bytes.
#[derive(Clone)]
pub struct SeriesLabels(Box<[u8]>);

impl SeriesLabels {
    pub fn new(labels: &(impl LabelPairs + ?Sized)) -> Self {
        // A buffer reserved for the longest packing and boxed would stay
        // in its larger block (see `super::fit`).
        Self(super::exact_bytes(|buf| pack(labels, buf)))
    }

    /// Whether `other` holds exactly these labels, in the same order.
    pub fn eq_pairs(&self, other: &(impl LabelPairs + ?Sized)) -> bool {
        let mut r = Reader { buf: &self.0 };
        if r.len() != other.len() {
            return false;
        }
        other
            .pairs()
            .all(|(n, v)| r.name() == n.as_bytes() && r.bytes() == v.as_bytes())
    }

    /// Where the packed labels start, to prefetch them.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.len()
    }
}

impl LabelPairs for SeriesLabels {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut r = Reader { buf: &self.0 };
        let n = r.len();
        (0..n).map(move |_| (as_str(r.name()), as_str(r.bytes())))
    }
    fn len(&self) -> usize {
        Reader { buf: &self.0 }.len()
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
        put_len(buf, v.len());
        buf.extend_from_slice(v.as_bytes());
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

    fn bytes(&mut self) -> &'a [u8] {
        let n = self.len().min(self.buf.len());
        self.take(n)
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        head
    }

    /// A name: from the table by its code, or inline.
    fn name(&mut self) -> &'a [u8] {
        let x = self.len();
        if x & 1 == 1 {
            return NAMES
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
        let varint = |x: usize| if x < 128 { 1 } else { 2 };
        let names: usize = labels
            .iter()
            .map(|l| match name_code(&l.name) {
                Some(c) => varint(c as usize * 2 + 1),
                None => varint(l.name.len() * 2) + l.name.len(),
            })
            .sum();
        let values: usize = labels.iter().map(|l| l.value.len() + 1).sum();
        assert_eq!(s.heap_bytes(), 1 + names + values);
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
    fn a_moved_byte_is_a_different_set() {
        let a = [Label::new("ab", "c")];
        let b = [Label::new("a", "bc")];
        assert!(!SeriesLabels::new(&a[..]).eq_pairs(&b[..]));
    }
}
