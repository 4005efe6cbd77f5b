//! The write-ahead log record of one write batch: the series it creates and
//! the samples it carries.
//!
//! Layout (drawn byte by byte in `docs/format.md`): a version byte, the new
//! series (ids as zig-zag deltas, labels as length-prefixed strings), the
//! samples (series ids and timestamps as zig-zag deltas from the previous
//! sample, values as a zig-zag varint when they are small integers and as 8
//! raw bytes otherwise), then a CRC-32 of everything before it. Varints are
//! LEB128. A record with exemplars is version 2: after the samples, the
//! exemplars (series ids as zig-zag deltas, each exemplar as `exemplar.rs`
//! encodes it); one without is written as version 1, as before them. A
//! record with native histograms is version 3: the exemplars' section
//! (maybe empty), then the histogram samples (series ids and timestamps as
//! zig-zag deltas, each histogram in its log form, `histogram/log_sample.rs`).
//!
//! A writer stores a record compressed ([`LogRecordEncoder`]): a byte
//! [`COMPRESSED`], the record's length as a varint, then one zstd frame of
//! the record as above (its version byte and checksum included). A record
//! sits in SlateDB's memtable until the memtable is written out, and the
//! memtable is written out by its bytes: compressed, the same memtable
//! holds more samples. [`LogRecord::decode`] reads both forms.

use crate::exemplar::Exemplar;
use crate::histogram::{decode_sample, encode_sample, HistogramSample};
use crate::labels::Label;
use crate::varint::{put_uvarint, put_uvarint_flagged, unzigzag, zigzag, Decbuf};
use crate::CodecError;

/// The format version of a record without exemplars.
const VERSION: u8 = 1;
/// The format version of a record with exemplars.
const VERSION_EXEMPLARS: u8 = 2;
/// The format version of a record with native histograms.
const VERSION_HISTOGRAMS: u8 = 3;

/// Bytes of the checksum trailer.
const CRC_LEN: usize = 4;

/// The first byte of a compressed record.
pub const COMPRESSED: u8 = 0x10;

/// The longest record stored compressed; a longer one is stored as it is,
/// and a compressed one that says it is longer is corrupt (so damage in
/// the length cannot ask for a huge buffer).
const MAX_COMPRESSED_RECORD: usize = 64 << 20;

/// zstd's level for records: its fastest but one (`benches/log_record.rs`
/// prints what it takes off a record of node_exporter's values).
const LEVEL: i32 = 1;

/// Encodes records compressed, with a zstd context kept from one record to
/// the next (a context is some hundreds of KiB to set up).
pub struct LogRecordEncoder {
    raw: Vec<u8>,
    zstd: zstd::bulk::Compressor<'static>,
}

impl LogRecordEncoder {
    pub fn new() -> Result<Self, CodecError> {
        let zstd = zstd::bulk::Compressor::new(LEVEL)
            .map_err(|_| CodecError::Corrupt("cannot set up zstd for log records"))?;
        Ok(Self {
            raw: Vec::new(),
            zstd,
        })
    }

    /// Appends `record` to `out`, compressed ([`COMPRESSED`]), or as
    /// [`LogRecord::encode`] writes it if zstd fails or it is longer than
    /// compressed records may be.
    pub fn encode(&mut self, record: &LogRecord, out: &mut Vec<u8>) {
        self.raw.clear();
        record.encode(&mut self.raw);
        let start = out.len();
        if self.raw.len() <= MAX_COMPRESSED_RECORD {
            out.push(COMPRESSED);
            put_uvarint(out, self.raw.len() as u64);
            let header = out.len();
            out.resize(header + zstd::zstd_safe::compress_bound(self.raw.len()), 0);
            if let Some(room) = out.get_mut(header..) {
                if let Ok(n) = self.zstd.compress_to_buffer(&self.raw, room) {
                    out.truncate(header + n);
                    return;
                }
            }
            out.truncate(start);
        }
        out.extend_from_slice(&self.raw);
    }
}

/// A series created by the batch, with the id later samples refer to it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSeries {
    pub id: u64,
    pub labels: Vec<Label>,
}

/// One sample of the batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogSample {
    pub series: u64,
    pub t: i64,
    pub v: f64,
}

/// One exemplar of the batch, with the series it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct LogExemplar {
    pub series: u64,
    pub exemplar: Exemplar,
}

/// One native histogram sample of the batch.
#[derive(Clone, Debug, PartialEq)]
pub struct LogHistogram {
    pub series: u64,
    pub t: i64,
    pub h: HistogramSample,
}

/// The log record of one write batch. Every `f64` round-trips bit for bit.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct LogRecord {
    pub new_series: Vec<NewSeries>,
    pub samples: Vec<LogSample>,
    pub exemplars: Vec<LogExemplar>,
    pub histograms: Vec<LogHistogram>,
}

impl LogRecord {
    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let labels_len: usize = self
            .new_series
            .iter()
            .flat_map(|s| &s.labels)
            .map(|l| l.name.len() + l.value.len() + 4)
            .sum();
        out.reserve(
            1 + 20 + 12 * self.new_series.len() + labels_len + 14 * self.samples.len() + CRC_LEN,
        );

        let version = if !self.histograms.is_empty() {
            VERSION_HISTOGRAMS
        } else if !self.exemplars.is_empty() {
            VERSION_EXEMPLARS
        } else {
            VERSION
        };
        out.push(version);
        put_uvarint(out, self.new_series.len() as u64);
        let mut prev_id = 0u64;
        for s in &self.new_series {
            put_uvarint(out, zigzag(s.id.wrapping_sub(prev_id) as i64));
            prev_id = s.id;
            put_uvarint(out, s.labels.len() as u64);
            for l in &s.labels {
                put_str(out, &l.name);
                put_str(out, &l.value);
            }
        }

        put_uvarint(out, self.samples.len() as u64);
        let (mut prev_series, mut prev_t) = (0u64, 0i64);
        for s in &self.samples {
            put_uvarint(out, zigzag(s.series.wrapping_sub(prev_series) as i64));
            prev_series = s.series;
            let dt = zigzag(s.t.wrapping_sub(prev_t));
            prev_t = s.t;
            match small_int(s.v) {
                Some(i) => {
                    put_uvarint_flagged(out, dt, true);
                    put_uvarint(out, zigzag(i));
                }
                None => {
                    put_uvarint_flagged(out, dt, false);
                    out.extend_from_slice(&s.v.to_bits().to_be_bytes());
                }
            }
        }

        if version != VERSION {
            put_uvarint(out, self.exemplars.len() as u64);
            let (mut prev_series, mut prev_t) = (0u64, 0i64);
            for e in &self.exemplars {
                put_uvarint(out, zigzag(e.series.wrapping_sub(prev_series) as i64));
                prev_series = e.series;
                e.exemplar.encode(prev_t, out);
                prev_t = e.exemplar.t;
            }
        }
        if version == VERSION_HISTOGRAMS {
            put_uvarint(out, self.histograms.len() as u64);
            let (mut prev_series, mut prev_t) = (0u64, 0i64);
            for h in &self.histograms {
                put_uvarint(out, zigzag(h.series.wrapping_sub(prev_series) as i64));
                prev_series = h.series;
                put_uvarint(out, zigzag(h.t.wrapping_sub(prev_t)));
                prev_t = h.t;
                encode_sample(&h.h, out);
            }
        }

        let crc = crc32fast::hash(out.get(start..).unwrap_or_default());
        out.extend_from_slice(&crc.to_be_bytes());
    }

    /// Decodes a record written by [`encode`](Self::encode). Any damage
    /// (truncation, flipped bits, trailing bytes) is an error.
    pub fn decode(bytes: &[u8]) -> Result<LogRecord, CodecError> {
        if bytes.first() == Some(&COMPRESSED) {
            return decompressed(bytes.get(1..).unwrap_or_default(), Self::decode_plain);
        }
        Self::decode_plain(bytes)
    }

    /// Decodes a record as [`encode`](Self::encode) writes it.
    fn decode_plain(bytes: &[u8]) -> Result<LogRecord, CodecError> {
        let (&version, _) = bytes.split_first().ok_or(CodecError::Truncated)?;
        if !matches!(version, VERSION | VERSION_EXEMPLARS | VERSION_HISTOGRAMS) {
            return Err(CodecError::BadVersion(version));
        }
        let (covered, crc) = bytes
            .split_last_chunk::<CRC_LEN>()
            .ok_or(CodecError::Truncated)?;
        let Some((_, body)) = covered.split_first() else {
            return Err(CodecError::Truncated);
        };
        if crc32fast::hash(covered) != u32::from_be_bytes(*crc) {
            return Err(CodecError::BadChecksum);
        }

        let mut d = Decbuf::new(body);
        // Each series takes at least 2 bytes (id, label count).
        let n_series = d.length_prefix(2);
        let mut new_series = Vec::with_capacity(n_series);
        let mut id = 0u64;
        for _ in 0..n_series {
            id = id.wrapping_add(unzigzag(d.uvarint()) as u64);
            // Each label takes at least 2 bytes (two lengths).
            let n_labels = d.length_prefix(2);
            let mut labels = Vec::with_capacity(n_labels);
            for _ in 0..n_labels {
                let name = d.string();
                let value = d.string();
                labels.push(Label { name, value });
            }
            if d.err().is_some() {
                break;
            }
            new_series.push(NewSeries { id, labels });
        }

        // Each sample takes at least 3 bytes (series, time, value).
        let n_samples = d.length_prefix(3);
        let mut samples = Vec::with_capacity(n_samples);
        let (mut series, mut t) = (0u64, 0i64);
        for _ in 0..n_samples {
            series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
            let (dt, is_int) = d.uvarint_flagged();
            t = t.wrapping_add(unzigzag(dt));
            let v = if is_int {
                unzigzag(d.uvarint()) as f64
            } else {
                f64::from_bits(d.be_u64())
            };
            if d.err().is_some() {
                break;
            }
            samples.push(LogSample { series, t, v });
        }

        let mut exemplars = Vec::new();
        if version != VERSION {
            // Each takes at least 11 bytes (series, time, value, labels).
            let n = d.length_prefix(11);
            exemplars.reserve(n);
            let (mut series, mut t) = (0u64, 0i64);
            for _ in 0..n {
                series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
                let exemplar = Exemplar::decode(&mut d, t);
                if d.err().is_some() {
                    break;
                }
                t = exemplar.t;
                exemplars.push(LogExemplar { series, exemplar });
            }
        }

        let mut histograms = Vec::new();
        if version == VERSION_HISTOGRAMS {
            // Each takes at least 3 bytes (series, time, a stale flags byte).
            let n = d.length_prefix(3);
            histograms.reserve(n);
            let (mut series, mut t) = (0u64, 0i64);
            for _ in 0..n {
                series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
                t = t.wrapping_add(unzigzag(d.uvarint()));
                if d.err().is_some() {
                    break;
                }
                match decode_sample(&mut d) {
                    Ok(h) => histograms.push(LogHistogram { series, t, h }),
                    Err(e) => {
                        d.fail(e);
                        break;
                    }
                }
            }
        }

        if d.remaining() != 0 {
            d.fail(CodecError::Corrupt("trailing bytes in log record"));
        }
        d.finish()?;
        Ok(LogRecord {
            new_series,
            samples,
            exemplars,
            histograms,
        })
    }
}

/// Runs `f` on the record a compressed one holds (`bytes` after its
/// [`COMPRESSED`] byte), decompressed into a buffer kept per thread.
fn decompressed<R>(
    bytes: &[u8],
    f: impl FnOnce(&[u8]) -> Result<R, CodecError>,
) -> Result<R, CodecError> {
    thread_local! {
        static DECODER: std::cell::RefCell<Option<(zstd::bulk::Decompressor<'static>, Vec<u8>)>> =
            const { std::cell::RefCell::new(None) };
    }
    let mut d = Decbuf::new(bytes);
    let len = d.uvarint();
    d.check()?;
    let frame = d.rest();
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if len > MAX_COMPRESSED_RECORD {
        return Err(CodecError::Corrupt(
            "compressed log record longer than allowed",
        ));
    }
    DECODER.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| CodecError::Corrupt("log record decoder in use"))?;
        if slot.is_none() {
            let z = zstd::bulk::Decompressor::new()
                .map_err(|_| CodecError::Corrupt("cannot set up zstd for log records"))?;
            *slot = Some((z, Vec::new()));
        }
        let Some((z, buf)) = slot.as_mut() else {
            return Err(CodecError::Corrupt("cannot set up zstd for log records"));
        };
        buf.clear();
        buf.reserve_exact(len);
        let n = z
            .decompress_to_buffer(frame, buf)
            .map_err(|_| CodecError::Corrupt("compressed log record does not decompress"))?;
        if n != len {
            return Err(CodecError::Corrupt(
                "compressed log record's length does not match its contents",
            ));
        }
        let out = f(buf);
        // A record far larger than usual does not keep its buffer.
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        out
    })
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uvarint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// `v` as an integer when that integer converts back to exactly `v` and its
/// varint is shorter than 8 raw bytes; never for -0.0 or NaN.
#[inline(always)]
pub(crate) fn small_int(v: f64) -> Option<i64> {
    let i = v as i64;
    // `as` saturates and maps NaN to 0, so the comparison rejects those;
    // -0.0 compares equal to 0 and needs its own check.
    let exact = i as f64 == v && (i != 0 || v.to_bits() == 0);
    (exact && zigzag(i) < 1 << 49).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_record() -> LogRecord {
        LogRecord {
            new_series: vec![
                NewSeries {
                    id: 7,
                    labels: vec![Label::new("__name__", "up"), Label::new("job", "node")],
                },
                NewSeries {
                    id: 3,
                    labels: vec![],
                },
            ],
            samples: vec![
                LogSample {
                    series: 7,
                    t: 1_700_000_000_000,
                    v: 1.0,
                },
                LogSample {
                    series: 3,
                    t: 1_700_000_000_000,
                    v: -0.0,
                },
                LogSample {
                    series: 9,
                    t: i64::MIN,
                    v: f64::from_bits(0x7ff0_0000_0000_0002),
                },
                LogSample {
                    series: u64::MAX,
                    t: i64::MAX,
                    v: 0.1,
                },
                LogSample {
                    series: 0,
                    t: 0,
                    v: 2f64.powi(63),
                },
                LogSample {
                    series: 1,
                    t: -5,
                    v: -123_456.0,
                },
            ],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        }
    }

    fn assert_bits_eq(a: &LogRecord, b: &LogRecord) {
        assert_eq!(a.new_series, b.new_series);
        assert_eq!(a.samples.len(), b.samples.len());
        for (x, y) in a.samples.iter().zip(&b.samples) {
            assert_eq!(
                (x.series, x.t, x.v.to_bits()),
                (y.series, y.t, y.v.to_bits())
            );
        }
    }

    #[test]
    fn round_trips_edge_values() {
        let rec = sample_record();
        let mut out = vec![0xAA];
        rec.encode(&mut out);
        let got = LogRecord::decode(out.get(1..).unwrap()).unwrap();
        assert_bits_eq(&rec, &got);
    }

    #[test]
    fn exemplars_make_a_version_2_record() {
        let mut rec = sample_record();
        let mut v1 = Vec::new();
        rec.encode(&mut v1);
        assert_eq!(v1.first(), Some(&VERSION));
        rec.exemplars = vec![
            LogExemplar {
                series: 7,
                exemplar: Exemplar {
                    labels: vec![Label::new("trace_id", "abc123")],
                    t: 1_700_000_000_000,
                    v: 1.0,
                },
            },
            LogExemplar {
                series: 3,
                exemplar: Exemplar {
                    labels: vec![],
                    t: 1_699_999_999_000,
                    v: f64::NAN,
                },
            },
        ];
        let mut v2 = Vec::new();
        rec.encode(&mut v2);
        assert_eq!(v2.first(), Some(&VERSION_EXEMPLARS));
        let got = LogRecord::decode(&v2).unwrap();
        assert_bits_eq(&rec, &got);
        assert_eq!(got.exemplars.len(), 2);
        for (a, b) in rec.exemplars.iter().zip(&got.exemplars) {
            assert_eq!(a.series, b.series);
            assert!(a.exemplar.same_as(&b.exemplar));
        }
        for cut in 0..v2.len() {
            assert!(LogRecord::decode(v2.get(..cut).unwrap()).is_err());
        }
    }

    #[test]
    fn histograms_make_a_version_3_record() {
        use crate::histogram::{FloatHistogram, Histogram, Span, CUSTOM_BUCKETS_SCHEMA};
        let mut rec = sample_record();
        rec.histograms = vec![
            LogHistogram {
                series: 7,
                t: 1_700_000_000_000,
                h: HistogramSample::Int(Histogram {
                    schema: 3,
                    count: 5,
                    sum: 2.5,
                    zero_count: 1,
                    zero_threshold: 1e-128,
                    positive_spans: vec![Span::new(-2, 2)],
                    positive_buckets: vec![3, -2],
                    ..Histogram::default()
                }),
            },
            LogHistogram {
                series: 3,
                t: 1_699_999_999_000,
                h: HistogramSample::Float(FloatHistogram {
                    schema: CUSTOM_BUCKETS_SCHEMA,
                    count: 2.5,
                    sum: 0.1,
                    positive_spans: vec![Span::new(0, 2)],
                    positive_buckets: vec![0.5, 2.0],
                    custom_values: vec![0.25],
                    ..FloatHistogram::default()
                }),
            },
            LogHistogram {
                series: 3,
                t: 1_700_000_001_000,
                h: HistogramSample::Int(Histogram::stale_marker()),
            },
        ];
        let mut v3 = Vec::new();
        rec.encode(&mut v3);
        assert_eq!(v3.first(), Some(&VERSION_HISTOGRAMS));
        let got = LogRecord::decode(&v3).unwrap();
        assert_bits_eq(&rec, &got);
        assert_eq!(got.histograms.len(), 3);
        for (a, b) in rec.histograms.iter().zip(&got.histograms) {
            assert_eq!((a.series, a.t), (b.series, b.t));
            assert!(a.h.bit_eq(&b.h), "{a:?} != {b:?}");
        }
        for cut in 0..v3.len() {
            assert!(LogRecord::decode(v3.get(..cut).unwrap()).is_err());
        }
    }

    #[test]
    fn empty_record_is_six_bytes() {
        let mut out = Vec::new();
        LogRecord::default().encode(&mut out);
        assert_eq!(out.len(), 1 + 1 + 1 + 4);
        assert_eq!(LogRecord::decode(&out).unwrap(), LogRecord::default());
    }

    #[test]
    fn shared_timestamps_cost_one_byte() {
        let mut rec = LogRecord::default();
        for i in 0..100u64 {
            rec.samples.push(LogSample {
                series: i,
                t: 1_700_000_000_000,
                v: i as f64,
            });
        }
        let mut out = Vec::new();
        rec.encode(&mut out);
        // Per sample: id delta 1 byte, time delta + flag 1 byte, value 1-2 bytes.
        assert!(out.len() < 100 * 4 + 20, "{}", out.len());
    }

    #[test]
    fn damage_is_detected() {
        let mut out = Vec::new();
        sample_record().encode(&mut out);
        assert_eq!(LogRecord::decode(&[]), Err(CodecError::Truncated));
        assert_eq!(
            LogRecord::decode(&[4, 0, 0, 0, 0]),
            Err(CodecError::BadVersion(4))
        );
        let mut flipped = out.clone();
        if let Some(b) = flipped.get_mut(5) {
            *b ^= 0x10;
        }
        assert_eq!(LogRecord::decode(&flipped), Err(CodecError::BadChecksum));
        for cut in 0..out.len() {
            assert!(LogRecord::decode(out.get(..cut).unwrap()).is_err());
        }
    }

    #[test]
    fn small_int_is_exact() {
        assert_eq!(small_int(0.0), Some(0));
        assert_eq!(small_int(-0.0), None);
        assert_eq!(small_int(f64::NAN), None);
        assert_eq!(small_int(1.5), None);
        assert_eq!(small_int(-3.0), Some(-3));
        assert_eq!(small_int(2f64.powi(63)), None);
        assert_eq!(small_int(f64::INFINITY), None);
    }

    /// A scrape's samples: one timestamp, consecutive series, counters and
    /// gauges with a few significant digits, as node_exporter's pages.
    fn scrape(n: u64) -> LogRecord {
        LogRecord {
            samples: (0..n)
                .map(|i| LogSample {
                    series: 1_000 + i,
                    t: 1_700_000_005_000,
                    v: if i % 3 == 0 {
                        (i * 37) as f64
                    } else {
                        (i as f64) * 1234.5678 + 0.25
                    },
                })
                .collect(),
            ..LogRecord::default()
        }
    }

    #[test]
    fn a_compressed_record_reads_back_and_is_smaller() {
        // How much smaller depends on the values: `benches/log_record.rs`
        // prints it for node_exporter's.
        let rec = scrape(2_000);
        let (mut plain, mut packed) = (Vec::new(), Vec::new());
        rec.encode(&mut plain);
        let mut encoder = LogRecordEncoder::new().unwrap();
        encoder.encode(&rec, &mut packed);
        assert_eq!(packed.first(), Some(&COMPRESSED));
        assert!(
            packed.len() < plain.len(),
            "{} of {}",
            packed.len(),
            plain.len()
        );
        assert_eq!(LogRecord::decode(&packed).unwrap(), rec);
        assert_eq!(LogRecord::decode(&plain).unwrap(), rec);
        // The encoder's context is kept: a second record is as the first.
        let mut again = Vec::new();
        encoder.encode(&rec, &mut again);
        assert_eq!(again, packed);
    }

    #[test]
    fn a_compressed_records_length_must_match() {
        let rec = scrape(50);
        let mut packed = Vec::new();
        LogRecordEncoder::new().unwrap().encode(&rec, &mut packed);
        let mut plain = Vec::new();
        rec.encode(&mut plain);
        // The length varint says one byte more than the record has.
        let mut d = Decbuf::new(packed.get(1..).unwrap());
        assert_eq!(d.uvarint(), plain.len() as u64);
        let frame = d.rest().to_vec();
        let mut wrong = vec![COMPRESSED];
        put_uvarint(&mut wrong, plain.len() as u64 + 1);
        wrong.extend_from_slice(&frame);
        assert!(LogRecord::decode(&wrong).is_err());
        let mut huge = vec![COMPRESSED];
        put_uvarint(&mut huge, MAX_COMPRESSED_RECORD as u64 + 1);
        huge.extend_from_slice(&frame);
        assert_eq!(
            LogRecord::decode(&huge),
            Err(CodecError::Corrupt(
                "compressed log record longer than allowed"
            ))
        );
    }
}
