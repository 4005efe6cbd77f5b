use super::compressed::MAX_COMPRESSED_RECORD;
use super::*;
use crate::varint::{put_uvarint, Decbuf};
use crate::CodecError;

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
