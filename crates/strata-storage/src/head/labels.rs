//! A head series' label set in one allocation.
//!
//! Every write request looks up each of its series by label hash and then
//! compares the labels it finds. Held as `Label`s, that comparison chased a
//! pointer per name and per value into memory no other series touched, and
//! the lookup was the largest single cost of ingest. Packed, it reads one or
//! two cache lines, and a series takes one allocation instead of 2n + 1.

use strata_codec::LabelPairs;

/// The count, then each name and value as a varint length and its bytes
/// (the labels' part of the `S` value), sorted by name.
#[derive(Clone)]
pub struct SeriesLabels(Box<[u8]>);

impl SeriesLabels {
    pub fn new(labels: &(impl LabelPairs + ?Sized)) -> Self {
        let mut buf = Vec::with_capacity(
            1 + labels
                .pairs()
                .map(|(n, v)| n.len() + v.len() + 2)
                .sum::<usize>(),
        );
        put_len(&mut buf, labels.len());
        for (n, v) in labels.pairs() {
            put_len(&mut buf, n.len());
            buf.extend_from_slice(n.as_bytes());
            put_len(&mut buf, v.len());
            buf.extend_from_slice(v.as_bytes());
        }
        Self(buf.into_boxed_slice())
    }

    /// Whether `other` holds exactly these labels, in the same order.
    pub fn eq_pairs(&self, other: &(impl LabelPairs + ?Sized)) -> bool {
        let mut r = Reader { buf: &self.0 };
        if r.len() != other.len() {
            return false;
        }
        other
            .pairs()
            .all(|(n, v)| r.bytes() == n.as_bytes() && r.bytes() == v.as_bytes())
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
        (0..n).map(move |_| (as_str(r.bytes()), as_str(r.bytes())))
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
    // `&str`s, each behind its own length; the buffer is never mutated.
    unsafe { std::str::from_utf8_unchecked(b) }
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
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        head
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
    fn a_moved_byte_is_a_different_set() {
        let a = [Label::new("ab", "c")];
        let b = [Label::new("a", "bc")];
        assert!(!SeriesLabels::new(&a[..]).eq_pairs(&b[..]));
    }
}
