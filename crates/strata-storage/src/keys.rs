//! The SlateDB keyspace: one prefix byte per kind of key, integers
//! big-endian (signed ones with the sign bit flipped) so keys sort by them.
//! `docs/format.md` draws every key byte by byte.

/// Log record of one applied batch: `L | seq u64`.
pub const LOG: u8 = b'L';
/// Forward index, a series' labels: `S | series id u64`.
pub const SERIES: u8 = b'S';
/// The persistent labels → id index: `H | label-set hash u64`, valued
/// with the ids of the series whose labels hash so (postings-encoded;
/// almost always one). A series dropped from the head that comes back is
/// found here and keeps its id.
pub const SERIES_HASH: u8 = b'H';
/// Postings of a sealed bucket: `I | bucket i64 | name | 0xFF | value`.
pub const POSTINGS: u8 = b'I';
/// Sealed chunk: `C | bucket i64 | series id u64`; a segment the head
/// spilled before its bucket was sealed adds `| first t i64 | last t i64`.
pub const CHUNK: u8 = b'C';
/// Metadata: `M | name`.
pub const META: u8 = b'M';
/// A series with late segments in a sealed bucket, not yet folded into
/// its chunk: `J | bucket i64 | series id u64`, empty value.
pub const LATE: u8 = b'J';
/// A compacted block's chunks, laid out as a bucket's `C` keys:
/// `B | first bucket i64 | series id u64` (and its late segments).
pub const BLOCK_CHUNK: u8 = b'B';
/// A compacted block's postings, laid out as a bucket's `I` keys.
pub const BLOCK_POSTINGS: u8 = b'P';
/// A compacted block's late-series markers, laid out as a bucket's `J` keys.
pub const BLOCK_LATE: u8 = b'K';
/// A series' exemplars in a sealed bucket: `E | bucket i64 | series id
/// u64`, valued with the list (`strata_codec::encode_exemplars`), written
/// by the seal; exemplars that arrive once the bucket is sealed add
/// `| log seq u64`. Apart from the chunks: compaction leaves them as they
/// are.
pub const EXEMPLARS: u8 = b'E';
/// A series' native histograms in a sealed bucket: `N | bucket i64 |
/// series id u64`, valued with their chunk list
/// (`strata_codec::histogram::encode_chunk_list`), written by the seal;
/// histograms that arrive once the bucket is sealed add `| log seq u64`.
/// Apart from the float chunks: compaction leaves them as they are.
pub const HISTOGRAMS: u8 = b'N';
/// A deletion (`delete_series`): `D | seq u64`, valued with its matchers
/// and time range; every read leaves out what it names.
pub const TOMBSTONE: u8 = b'D';

/// Separates a label name from its value in a postings key; never part of
/// valid UTF-8.
pub const SEP: u8 = 0xFF;

/// The metadata key of the seal checkpoint.
pub const CHECKPOINT: &[u8] = b"Mcheckpoint";

/// The metadata key of the compaction state (which buckets blocks hold).
pub const COMPACTED: &[u8] = b"Mcompacted";

/// Where the sealed samples of a stretch of time live: one bucket, or a
/// block of consecutive buckets that compaction wrote in their place
/// (named by its first bucket). Both have the same keys (chunks, segments,
/// late segments, postings, late markers) under prefixes of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Span {
    Bucket(i64),
    Block(i64),
}

impl From<i64> for Span {
    fn from(bucket: i64) -> Self {
        Span::Bucket(bucket)
    }
}

impl Span {
    /// The first bucket it holds.
    pub fn start(self) -> i64 {
        match self {
            Span::Bucket(b) | Span::Block(b) => b,
        }
    }

    fn chunk_tag(self) -> u8 {
        match self {
            Span::Bucket(_) => CHUNK,
            Span::Block(_) => BLOCK_CHUNK,
        }
    }

    fn postings_tag(self) -> u8 {
        match self {
            Span::Bucket(_) => POSTINGS,
            Span::Block(_) => BLOCK_POSTINGS,
        }
    }

    fn late_tag(self) -> u8 {
        match self {
            Span::Bucket(_) => LATE,
            Span::Block(_) => BLOCK_LATE,
        }
    }
}

fn span_key(tag: u8, span: Span, capacity: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(capacity);
    k.push(tag);
    push_i64(&mut k, span.start());
    k
}

fn is_chunk_tag(tag: Option<&u8>) -> bool {
    matches!(tag, Some(&CHUNK) | Some(&BLOCK_CHUNK))
}

/// Metric metadata of a tenant (`""` without tenants):
/// `M | "metric/" | tenant | 0xFF | metric name`.
pub fn metadata_key(tenant: &str, metric: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + tenant.len() + metric.len());
    k.extend_from_slice(b"Mmetric/");
    k.extend_from_slice(tenant.as_bytes());
    k.push(SEP);
    k.extend_from_slice(metric.as_bytes());
    k
}

fn push_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn read_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}

pub fn log_key(seq: u64) -> [u8; 9] {
    let mut k = [LOG; 9];
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

pub fn log_seq(key: &[u8]) -> Option<u64> {
    match key.split_first() {
        Some((&LOG, rest)) if rest.len() == 8 => read_u64(rest),
        _ => None,
    }
}

pub fn series_key(id: u64) -> [u8; 9] {
    let mut k = [SERIES; 9];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

pub fn series_hash_key(hash: u64) -> [u8; 9] {
    let mut k = [SERIES_HASH; 9];
    k[1..].copy_from_slice(&hash.to_be_bytes());
    k
}

/// The label hash of an `H` key.
pub fn series_hash(key: &[u8]) -> Option<u64> {
    match key.split_first() {
        Some((&SERIES_HASH, rest)) if rest.len() == 8 => read_u64(rest),
        _ => None,
    }
}

pub fn series_id(key: &[u8]) -> Option<u64> {
    match key.split_first() {
        Some((&SERIES, rest)) if rest.len() == 8 => read_u64(rest),
        _ => None,
    }
}

/// `C | bucket` (`B | block`): the prefix of every sealed chunk of one span.
pub fn chunk_prefix(span: impl Into<Span>) -> Vec<u8> {
    let span = span.into();
    span_key(span.chunk_tag(), span, 17)
}

pub fn chunk_key(span: impl Into<Span>, series: u64) -> Vec<u8> {
    let mut k = chunk_prefix(span);
    k.extend_from_slice(&series.to_be_bytes());
    k
}

/// The first bucket of the span a chunk, postings or late key belongs to.
pub fn span_start(key: &[u8]) -> Option<i64> {
    read_i64(key.get(1..9)?)
}

/// The series id of a chunk or segment key.
pub fn chunk_series(key: &[u8]) -> Option<u64> {
    read_u64(key.get(9..17)?)
}

/// Length of a chunk key; a segment key is [`SEGMENT_KEY_LEN`] long.
pub const CHUNK_KEY_LEN: usize = 17;
pub const SEGMENT_KEY_LEN: usize = 33;

/// The key of a segment of series `series` in `bucket` holding the samples
/// from `first_t` to `last_t`: it sorts after the series' chunk key, and
/// the series' segments by time.
pub fn segment_key(span: impl Into<Span>, series: u64, first_t: i64, last_t: i64) -> Vec<u8> {
    let mut k = chunk_key(span, series);
    push_i64(&mut k, first_t);
    push_i64(&mut k, last_t);
    k
}

fn read_i64(bytes: &[u8]) -> Option<i64> {
    Some((read_u64(bytes)? ^ (1 << 63)) as i64)
}

/// `(first bucket, series, first_t, last_t)` of a segment key of a bucket
/// or a block.
pub fn segment_parts(key: &[u8]) -> Option<(i64, u64, i64, i64)> {
    if key.len() != SEGMENT_KEY_LEN || !is_chunk_tag(key.first()) {
        return None;
    }
    Some((
        read_i64(key.get(1..9)?)?,
        read_u64(key.get(9..17)?)?,
        read_i64(key.get(17..25)?)?,
        read_i64(key.get(25..33)?)?,
    ))
}

/// Length of a late segment's key.
pub const LATE_SEGMENT_KEY_LEN: usize = 41;

/// The key of a late segment: samples of series `series` in sealed bucket
/// `bucket` from `first_t` to `last_t`, written after the seal. `seq`
/// orders late segments by when they were written (a later one wins a
/// timestamp both hold), and keeps two with the same range apart.
pub fn late_segment_key(
    span: impl Into<Span>,
    series: u64,
    first_t: i64,
    last_t: i64,
    seq: u64,
) -> Vec<u8> {
    let mut k = segment_key(span, series, first_t, last_t);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `(bucket, series, first_t, last_t, seq)` of a late segment key.
pub fn late_segment_parts(key: &[u8]) -> Option<(i64, u64, i64, i64, u64)> {
    if key.len() != LATE_SEGMENT_KEY_LEN || !is_chunk_tag(key.first()) {
        return None;
    }
    let (b, s, f, l) = segment_parts(key.get(..SEGMENT_KEY_LEN)?)?;
    Some((b, s, f, l, read_u64(key.get(SEGMENT_KEY_LEN..)?)?))
}

/// `J | bucket` (`K | block`): the prefix of the late-series keys of one
/// span.
pub fn late_prefix(span: impl Into<Span>) -> Vec<u8> {
    let span = span.into();
    span_key(span.late_tag(), span, 17)
}

/// `J | bucket | series`: series `series` has late segments in `bucket`
/// (`K | block | series`: in a block).
pub fn late_key(span: impl Into<Span>, series: u64) -> Vec<u8> {
    let mut k = late_prefix(span);
    k.extend_from_slice(&series.to_be_bytes());
    k
}

/// `(span, series)` of a late-series key.
pub fn late_key_parts(key: &[u8]) -> Option<(Span, u64)> {
    if key.len() != 17 {
        return None;
    }
    let start = read_i64(key.get(1..9)?)?;
    let span = match *key.first()? {
        LATE => Span::Bucket(start),
        BLOCK_LATE => Span::Block(start),
        _ => return None,
    };
    Some((span, read_u64(key.get(9..17)?)?))
}

/// `E | bucket`: the prefix of the exemplar keys of one sealed bucket.
pub fn exemplar_prefix(bucket: i64) -> Vec<u8> {
    span_key(EXEMPLARS, Span::Bucket(bucket), 17)
}

/// `E | bucket | series`.
pub fn exemplar_key(bucket: i64, series: u64) -> Vec<u8> {
    let mut k = exemplar_prefix(bucket);
    k.extend_from_slice(&series.to_be_bytes());
    k
}

/// `E | bucket | series | seq`: exemplars of a sealed bucket that came
/// with log record `seq`.
pub fn late_exemplar_key(bucket: i64, series: u64, seq: u64) -> Vec<u8> {
    let mut k = exemplar_key(bucket, series);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `(bucket, series)` of an exemplar key, the seal's or a late one.
pub fn exemplar_key_parts(key: &[u8]) -> Option<(i64, u64)> {
    if !(key.len() == 17 || key.len() == 25) || key.first() != Some(&EXEMPLARS) {
        return None;
    }
    Some((read_i64(key.get(1..9)?)?, read_u64(key.get(9..17)?)?))
}

/// `N | bucket`: the prefix of the histogram keys of one sealed bucket.
pub fn histogram_prefix(bucket: i64) -> Vec<u8> {
    span_key(HISTOGRAMS, Span::Bucket(bucket), 17)
}

/// `N | bucket | series`.
pub fn histogram_key(bucket: i64, series: u64) -> Vec<u8> {
    let mut k = histogram_prefix(bucket);
    k.extend_from_slice(&series.to_be_bytes());
    k
}

/// `N | bucket | series | seq`: histograms of a sealed bucket that came
/// with log record `seq`.
pub fn late_histogram_key(bucket: i64, series: u64, seq: u64) -> Vec<u8> {
    let mut k = histogram_key(bucket, series);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `(bucket, series)` of a histogram key, the seal's or a late one.
pub fn histogram_key_parts(key: &[u8]) -> Option<(i64, u64)> {
    if !(key.len() == 17 || key.len() == 25) || key.first() != Some(&HISTOGRAMS) {
        return None;
    }
    Some((read_i64(key.get(1..9)?)?, read_u64(key.get(9..17)?)?))
}

/// `I | bucket` (`P | block`): the prefix of every postings key of one span.
pub fn postings_bucket_prefix(span: impl Into<Span>) -> Vec<u8> {
    let span = span.into();
    span_key(span.postings_tag(), span, 32)
}

/// `I | bucket | name | 0xFF`: the prefix of every value of one label name.
pub fn postings_name_prefix(span: impl Into<Span>, name: &str) -> Vec<u8> {
    let mut k = postings_bucket_prefix(span);
    k.extend_from_slice(name.as_bytes());
    k.push(SEP);
    k
}

pub fn postings_key(span: impl Into<Span>, name: &str, value: &str) -> Vec<u8> {
    let mut k = postings_bucket_prefix(span);
    k.extend_from_slice(&postings_suffix(name, value));
    k
}

/// `name | 0xFF | value`: a postings key after its span's prefix, the same
/// in every span.
pub fn postings_suffix(name: &str, value: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len() + value.len() + 1);
    k.extend_from_slice(name.as_bytes());
    k.push(SEP);
    k.extend_from_slice(value.as_bytes());
    k
}

/// The postings key listing every series of a bucket (the empty label name,
/// which no real label has).
pub fn all_postings_key(span: impl Into<Span>) -> Vec<u8> {
    postings_key(span, "", "")
}

/// Splits a postings key of `bucket` into its label name and value.
pub fn postings_name_value(key: &[u8]) -> Option<(&str, &str)> {
    let rest = key.get(9..)?;
    let sep = rest.iter().position(|&b| b == SEP)?;
    let name = std::str::from_utf8(rest.get(..sep)?).ok()?;
    let value = std::str::from_utf8(rest.get(sep + 1..)?).ok()?;
    Some((name, value))
}

/// The smallest key strictly greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xFF; prefix.len() + 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_sort_signed() {
        assert!(chunk_key(-1, 5) < chunk_key(0, 0));
        assert!(chunk_key(0, u64::MAX) < chunk_key(1, 0));
        assert_eq!(chunk_series(&chunk_key(-7, 42)), Some(42));
    }

    #[test]
    fn segments_sort_after_their_chunk_and_by_time() {
        let chunk = chunk_key(3, 42);
        let early = segment_key(3, 42, -5, 10);
        let late = segment_key(3, 42, 11, 20);
        assert!(chunk < early && early < late && late < chunk_key(3, 43));
        assert!(early.starts_with(&chunk));
        assert_eq!(early.len(), SEGMENT_KEY_LEN);
        assert_eq!(chunk.len(), CHUNK_KEY_LEN);
        assert_eq!(chunk_series(&late), Some(42));
        assert_eq!(segment_parts(&early), Some((3, 42, -5, 10)));
        assert_eq!(segment_parts(&chunk), None);
        let l = late_segment_key(3, 42, -5, 10, 7);
        assert!(l.starts_with(&chunk) && l < chunk_key(3, 43));
        assert_eq!(late_segment_parts(&l), Some((3, 42, -5, 10, 7)));
        assert_eq!(segment_parts(&l), None);
        assert_eq!(late_segment_parts(&early), None);
        assert_eq!(chunk_series(&l), Some(42));
        assert_eq!(
            late_key_parts(&late_key(-3, 9)),
            Some((Span::Bucket(-3), 9))
        );
        assert!(late_key(-3, 9).starts_with(&late_prefix(-3)));
    }

    #[test]
    fn blocks_have_keys_of_their_own() {
        let block = Span::Block(24);
        assert_ne!(chunk_key(block, 1), chunk_key(24, 1));
        assert_eq!(chunk_series(&chunk_key(block, 7)), Some(7));
        let seg = late_segment_key(block, 7, 1, 2, 3);
        assert_eq!(late_segment_parts(&seg), Some((24, 7, 1, 2, 3)));
        assert_eq!(late_key_parts(&late_key(block, 7)), Some((block, 7)));
        assert!(postings_key(block, "a", "b").starts_with(&postings_bucket_prefix(block)));
        assert!(!postings_key(block, "a", "b").starts_with(&postings_bucket_prefix(24)));
        assert_eq!(
            postings_name_value(&postings_key(block, "a", "b")),
            Some(("a", "b"))
        );
    }

    #[test]
    fn postings_round_trip() {
        let k = postings_key(3, "job", "node");
        assert_eq!(postings_name_value(&k), Some(("job", "node")));
        assert!(k.starts_with(&postings_name_prefix(3, "job")));
        assert!(!k.starts_with(&postings_name_prefix(3, "jo")));
        assert_eq!(postings_name_value(&all_postings_key(3)), Some(("", "")));
    }

    #[test]
    fn log_keys_sort_by_seq() {
        assert!(log_key(255) < log_key(256));
        assert_eq!(log_seq(&log_key(77)), Some(77));
    }
}
