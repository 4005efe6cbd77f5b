//! Unit tests of the histogram chunks.

use super::fixtures::*;
use super::*;
use crate::CodecError;

/// Appends every sample, panicking on a refusal.
fn chunk_of(samples: &[(i64, Histogram)]) -> HistogramChunk {
    let mut c = HistogramChunk::new();
    for (t, h) in samples {
        c.append(*t, h).unwrap();
    }
    c
}

/// What a decoder yields for input sample `i` of a chunk with `header`.
fn expected(h: &Histogram, i: u16, header: CounterResetHeader) -> Histogram {
    if h.is_stale() {
        return Histogram::stale_marker();
    }
    let mut want = h.clone();
    want.counter_reset_hint = header.hint_for(i);
    want
}

fn assert_round_trip(samples: &[(i64, Histogram)]) -> HistogramChunk {
    let c = chunk_of(samples);
    let got: Vec<(i64, Histogram)> = HistogramIter::new(c.bytes()).unwrap().collect();
    assert_eq!(got.len(), samples.len());
    for (i, ((t, h), (gt, gh))) in samples.iter().zip(&got).enumerate() {
        assert_eq!(t, gt);
        let want = expected(h, i as u16, c.header());
        assert!(want.bit_eq(gh), "sample {i}: want {want:?}, got {gh:?}");
    }
    c
}

#[test]
fn empty_chunk_is_a_header() {
    let c = HistogramChunk::new();
    assert_eq!(c.bytes(), &[0, 0, 1]);
    assert_eq!(c.iter().count(), 0);
    assert_eq!(FloatHistogramChunk::new().bytes(), &[0, 0, 2]);
    assert_eq!(
        HistogramIter::new(&[0, 0]).err(),
        Some(CodecError::Truncated)
    );
}

#[test]
fn realistic_exponential_sequence_round_trips_compactly() {
    let samples = request_durations();
    for (_, h) in &samples {
        h.validate().unwrap();
    }
    let c = assert_round_trip(&samples);
    let per_sample = c.bytes().len() as f64 / samples.len() as f64;
    // 22 buckets whose increments vary by up to 40 a scrape: a few bits each.
    assert!(
        (4.0..48.0).contains(&per_sample),
        "{per_sample} bytes/sample"
    );

    let floats: Vec<(i64, FloatHistogram)> =
        samples.iter().map(|(t, h)| (*t, h.to_float())).collect();
    let mut fc = FloatHistogramChunk::new();
    for (t, h) in &floats {
        fc.append(*t, h).unwrap();
    }
    let got: Vec<(i64, FloatHistogram)> = fc.iter().collect();
    for (i, ((t, h), (gt, gh))) in floats.iter().zip(&got).enumerate() {
        let mut want = h.clone();
        want.counter_reset_hint = CounterResetHeader::Unknown.hint_for(i as u16);
        assert_eq!(t, gt);
        assert!(want.bit_eq(gh), "sample {i}");
    }
    let per_sample = fc.bytes().len() as f64 / floats.len() as f64;
    assert!(
        (8.0..120.0).contains(&per_sample),
        "{per_sample} bytes/sample"
    );
}

#[test]
fn realistic_nhcb_sequence_round_trips_compactly() {
    let samples = nhcb_durations();
    for (_, h) in &samples {
        h.validate().unwrap();
    }
    let c = assert_round_trip(&samples);
    let per_sample = c.bytes().len() as f64 / samples.len() as f64;
    // About 8 bytes of sum and a byte or two per bucket.
    assert!(
        (4.0..32.0).contains(&per_sample),
        "{per_sample} bytes/sample"
    );
}

#[test]
fn stale_markers_round_trip_bit_exact() {
    let mut samples = request_durations();
    samples.truncate(5);
    let mut stale = samples[1].1.clone();
    stale.sum = f64::from_bits(STALE_NAN_BITS);
    samples.push((samples[4].0 + 15_000, stale.clone()));
    samples.push((samples[4].0 + 30_000, Histogram::stale_marker()));
    let c = assert_round_trip(&samples);
    let last = c.iter().last().unwrap().1;
    assert_eq!(last.sum.to_bits(), STALE_NAN_BITS);
    // Only stale markers may follow a stale marker.
    assert_eq!(
        chunk_of(&samples).append(i64::MAX, &samples[0].1),
        Err(AppendError::NeedsNewChunk(CutReason::AfterStale))
    );
    // A chunk may start with one.
    assert_round_trip(&[(1, stale), (2, Histogram::stale_marker())]);

    let mut fc = FloatHistogramChunk::new();
    fc.append(1, &samples[0].1.to_float()).unwrap();
    fc.append(2, &FloatHistogram::stale_marker()).unwrap();
    let got: Vec<_> = fc.iter().collect();
    assert_eq!(got[1].1.sum.to_bits(), STALE_NAN_BITS);
    assert!(got[1].1.bit_eq(&FloatHistogram::stale_marker()));
}

#[test]
fn nan_sums_and_odd_values_round_trip() {
    let mut a = hist(0, &[(-3, 5), (0, 1)], &[(2, 7)], 4, f64::NAN);
    a.count += 3;
    let mut b = a.clone();
    b.sum = -0.0;
    b.count = u64::MAX;
    let mut c = b.clone();
    c.sum = f64::from_bits(0x7ff8_dead_beef_0001);
    assert_round_trip(&[(i64::MIN, a), (-1, b), (i64::MAX, c)]);
}

#[test]
fn cuts_say_why() {
    let base = hist(3, &[(0, 5), (1, 5)], &[], 1, 10.0);
    let mut c = chunk_of(&[(0, base.clone())]);
    let refuse = |c: &mut HistogramChunk, h: &Histogram| c.append(100, h).unwrap_err();

    let mut h = base.clone();
    h.count -= 1;
    h.positive_buckets[0] -= 1;
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::CounterReset)
    );
    let mut h = base.clone();
    h.counter_reset_hint = CounterResetHint::Reset;
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::CounterReset)
    );
    let mut h = base.clone();
    h.schema = 2;
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::SchemaChanged)
    );
    let mut h = base.clone();
    h.zero_threshold = 0.001;
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::ZeroThresholdChanged)
    );
    let mut h = base.clone();
    h.counter_reset_hint = CounterResetHint::Gauge;
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::KindChanged)
    );
    // A bucket that held observations disappears: a reset.
    let h = hist(3, &[(0, 6)], &[], 1, 10.0);
    assert_eq!(
        refuse(&mut c, &h),
        AppendError::NeedsNewChunk(CutReason::CounterReset)
    );
    let mut h = base.clone();
    h.positive_buckets.push(1);
    assert!(matches!(refuse(&mut c, &h), AppendError::Malformed(_)));
    assert_eq!(c.len(), 1);

    assert_eq!(
        CutReason::CounterReset.next_header(CounterResetHint::Unknown),
        CounterResetHeader::Reset
    );
    assert_eq!(
        CutReason::Full.next_header(CounterResetHint::Gauge),
        CounterResetHeader::Gauge
    );

    let mut nhcb = hist(CUSTOM_BUCKETS_SCHEMA, &[(0, 1)], &[], 0, 1.0);
    nhcb.custom_values = vec![1.0, 2.0];
    let mut c = chunk_of(&[(0, nhcb.clone())]);
    nhcb.custom_values = vec![1.0, 3.0];
    assert_eq!(
        refuse(&mut c, &nhcb),
        AppendError::NeedsNewChunk(CutReason::CustomBoundsChanged)
    );
}

#[test]
fn a_full_chunk_asks_for_a_new_one() {
    let h = hist(0, &[(0, 1)], &[], 0, 1.0);
    let mut c = HistogramChunk::new();
    for t in 0..i64::from(HistogramChunk::MAX_SAMPLES) {
        c.append(t, &h).unwrap();
    }
    assert_eq!(
        c.append(1 << 40, &h),
        Err(AppendError::NeedsNewChunk(CutReason::Full))
    );
    assert_eq!(c.bytes()[0], 0xFE);
    assert_eq!(c.iter().count(), usize::from(HistogramChunk::MAX_SAMPLES));
}

#[test]
fn added_buckets_recode_the_chunk() {
    let a = hist(1, &[(0, 2), (3, 4)], &[(0, 1)], 0, 1.0);
    let b = hist(
        1,
        &[(0, 3), (1, 1), (3, 4), (7, 2)],
        &[(-2, 5), (0, 1)],
        0,
        2.0,
    );
    // A bucket of the chunk missing from the sample is fine when it is empty.
    let c = hist(
        1,
        &[(0, 4), (1, 1), (3, 4), (7, 2)],
        &[(-2, 5), (0, 1)],
        0,
        3.0,
    );
    let d = hist(1, &[(0, 4), (3, 4), (7, 2)], &[(-2, 5), (0, 1)], 0, 4.0);
    let mut ch = HistogramChunk::new();
    for (t, h) in [(1, &a), (2, &b), (3, &c)] {
        ch.append(t, h).unwrap();
    }
    assert_eq!(
        ch.append(4, &d),
        Err(AppendError::NeedsNewChunk(CutReason::CounterReset))
    );
    let got: Vec<_> = ch.iter().collect();
    assert_eq!(got.len(), 3);
    // Every sample now has the widened layout, a's new buckets empty.
    let want_a = hist(
        1,
        &[(0, 2), (1, 0), (3, 4), (7, 0)],
        &[(-2, 0), (0, 1)],
        0,
        1.0,
    );
    assert_eq!(got[0].1.positive_spans, want_a.positive_spans);
    assert_eq!(got[0].1.positive_buckets, want_a.positive_buckets);
    assert_eq!(got[0].1.negative_buckets, want_a.negative_buckets);
    assert_eq!(got[2].1.positive_buckets, c.positive_buckets);

    let mut fch = FloatHistogramChunk::new();
    for (t, h) in [(1, &a), (2, &b)] {
        fch.append(t, &h.to_float()).unwrap();
    }
    let got: Vec<_> = fch.iter().collect();
    assert_eq!(got[0].1.positive_buckets, [2.0, 0.0, 4.0, 0.0]);
    assert_eq!(got[1].1.negative_buckets, [5.0, 1.0]);
}

#[test]
fn gauges_go_up_and_down() {
    let mut up = hist(0, &[(0, 5), (2, 5)], &[], 0, 3.0);
    up.counter_reset_hint = CounterResetHint::Gauge;
    let mut down = hist(0, &[(0, 1), (5, 1)], &[], 0, 1.0);
    down.counter_reset_hint = CounterResetHint::Gauge;
    let mut c = HistogramChunk::new();
    c.append(1, &up).unwrap();
    c.append(2, &down).unwrap();
    assert_eq!(c.header(), CounterResetHeader::Gauge);
    let got: Vec<_> = c.iter().collect();
    assert!(got
        .iter()
        .all(|(_, h)| h.counter_reset_hint == CounterResetHint::Gauge));
    assert_eq!(got[1].1.count, 2);
    // The chunk's layout widened to buckets 0, 2 and 5.
    assert_eq!(
        got[1].1.positive_spans,
        [Span::new(0, 1), Span::new(1, 1), Span::new(2, 1)]
    );
    assert_eq!(got[1].1.positive_buckets, [1, -1, 1]);
    assert_eq!(got[0].1.positive_buckets, [5, 0, -5]);
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let samples = request_durations();
    let c = chunk_of(&samples[..20]);
    let bytes = c.bytes();
    for cut in 0..bytes.len() {
        let part = &bytes[..cut];
        match HistogramIter::new(part) {
            Err(_) => assert!(cut < HEADER_LEN),
            Ok(mut it) => {
                let mut h = Histogram::default();
                while it.next_into(&mut h).is_some() {}
                assert!(it.err().is_some(), "cut at {cut}");
            }
        }
    }
}

#[test]
fn kinds_do_not_mix() {
    let c = chunk_of(&request_durations()[..2]);
    assert!(FloatHistogramIter::new(c.bytes()).is_err());
    let mut bytes = c.bytes().to_vec();
    bytes[0] = 0xFF;
    assert!(HistogramIter::new(&bytes).is_err());
}

#[test]
fn huge_claims_fail_before_allocating() {
    // A layout claiming 2^32 - 1 buckets in a few bytes.
    let mut w = crate::bits::BitWriter::from_bytes(vec![0, 1, 1]);
    w.write_byte(0);
    varbit::put_varbit_int(&mut w, 0);
    varbit::put_varbit_uint(&mut w, 1);
    varbit::put_varbit_uint(&mut w, u64::from(u32::MAX));
    varbit::put_varbit_int(&mut w, 0);
    varbit::put_varbit_uint(&mut w, 0);
    let mut it = HistogramIter::new(w.bytes()).unwrap();
    assert!(it.next().is_none());
    assert_eq!(it.err(), Some(&CodecError::Truncated));
    // A span count beyond the input.
    let mut w = crate::bits::BitWriter::from_bytes(vec![0, 1, 2]);
    w.write_byte(0);
    varbit::put_varbit_int(&mut w, 0);
    varbit::put_varbit_uint(&mut w, u64::MAX);
    let mut it = FloatHistogramIter::new(w.bytes()).unwrap();
    assert!(it.next().is_none());
    assert!(it.err().is_some());
}

#[test]
fn chunks_reopen_from_their_bytes() {
    let samples = request_durations();
    let c = chunk_of(&samples[..60]);
    let mut reopened = HistogramChunk::from_bytes(c.bytes()).unwrap();
    assert_eq!(reopened.first_t(), Some(samples[0].0));
    assert_eq!(reopened.last_t(), Some(samples[59].0));
    for (t, h) in &samples[60..] {
        reopened.append(*t, h).unwrap();
    }
    assert_eq!(reopened.bytes(), chunk_of(&samples).bytes());
    assert!(HistogramChunk::from_bytes(&c.bytes()[..c.bytes().len() - 1]).is_err());

    let mut fc = FloatHistogramChunk::new();
    for (t, h) in &samples[..10] {
        fc.append(*t, &h.to_float()).unwrap();
    }
    fc.append(samples[10].0, &FloatHistogram::stale_marker())
        .unwrap();
    let reopened = FloatHistogramChunk::from_bytes(fc.bytes()).unwrap();
    assert_eq!(reopened.bytes(), fc.bytes());
    assert_eq!(
        reopened
            .clone()
            .append(samples[11].0, &samples[11].1.to_float()),
        Err(AppendError::NeedsNewChunk(CutReason::AfterStale))
    );
    assert!(HistogramChunk::from_bytes(fc.bytes()).is_err());
}
