//! Property tests: random histogram series through both chunk kinds and
//! the log form, and random bytes through every decoder.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::fixtures::{deltas, spans_of};
use super::*;
use crate::varint::Decbuf;

/// A small deterministic generator, so one proptest seed stands for a whole
/// series of histograms.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The evolving truth of one series: absolute counts per bucket index.
struct Series {
    schema: i32,
    zero_threshold: f64,
    custom: Vec<f64>,
    pos: BTreeMap<i64, u64>,
    neg: BTreeMap<i64, u64>,
    zero: u64,
    nan_observations: u64,
    sum: f64,
    gauge: bool,
}

impl Series {
    fn new(rng: &mut Rng) -> Self {
        let mut s = Self {
            schema: 0,
            zero_threshold: 0.0,
            custom: Vec::new(),
            pos: BTreeMap::new(),
            neg: BTreeMap::new(),
            zero: 0,
            nan_observations: 0,
            sum: 0.0,
            gauge: rng.chance(20),
        };
        s.new_schema(rng);
        s
    }

    fn new_schema(&mut self, rng: &mut Rng) {
        self.pos.clear();
        self.neg.clear();
        self.zero = 0;
        if rng.chance(30) {
            self.schema = CUSTOM_BUCKETS_SCHEMA;
            self.zero_threshold = 0.0;
            let n = rng.below(12) as usize;
            let mut v = -1.0 + rng.below(3) as f64;
            self.custom = (0..n)
                .map(|_| {
                    v += if rng.chance(50) {
                        rng.below(1000) as f64 / 1000.0 + 0.001
                    } else {
                        f64::from_bits(rng.next() >> 12 | 0x3FF0_0000_0000_0000) - 0.9
                    };
                    v
                })
                .collect();
            for i in 0..=n as i64 {
                if rng.chance(60) {
                    self.pos.insert(i, rng.below(50));
                }
            }
        } else {
            self.schema = rng.below(13) as i32 - 4;
            self.custom.clear();
            self.zero_threshold = [0.0, 2f64.powi(-128), 0.001, 1e-300][rng.below(4) as usize];
            let base = rng.below(40) as i64 - 20;
            for _ in 0..rng.below(25) {
                let side = if rng.chance(70) {
                    &mut self.pos
                } else {
                    &mut self.neg
                };
                side.insert(base + rng.below(30) as i64, rng.below(100));
            }
        }
    }

    fn step(&mut self, rng: &mut Rng) {
        let roll = rng.below(100);
        let custom = self.schema == CUSTOM_BUCKETS_SCHEMA;
        match roll {
            0..=59 => {
                for c in self.pos.values_mut().chain(self.neg.values_mut()) {
                    if rng.chance(70) {
                        *c += rng.below(6);
                    }
                }
                if !custom && rng.chance(30) {
                    self.zero += rng.below(3);
                }
            }
            60..=69 => {
                let limit = if custom {
                    self.custom.len() as u64 + 1
                } else {
                    40
                };
                let i = rng.below(limit) as i64 - if custom { 0 } else { 20 };
                self.pos.entry(i).or_insert(rng.below(3));
            }
            70..=74 => {
                if let Some(&i) = self
                    .pos
                    .keys()
                    .nth(rng.below(self.pos.len() as u64) as usize)
                {
                    self.pos.remove(&i);
                }
            }
            75..=79 => {
                for c in self.pos.values_mut().chain(self.neg.values_mut()) {
                    *c = rng.below(*c + 1);
                }
                self.zero = rng.below(self.zero + 1);
                self.nan_observations = 0;
            }
            80..=82 => self.new_schema(rng),
            83..=84 if !custom => self.zero_threshold *= 2.0,
            85..=87 => self.nan_observations += 1,
            _ => {}
        }
        self.sum += rng.below(1000) as f64 / 7.0;
    }

    fn histogram(&self, rng: &mut Rng) -> Histogram {
        if rng.chance(4) {
            return Histogram::stale_marker();
        }
        let (pi, pc): (Vec<i64>, Vec<u64>) = self.pos.iter().map(|(&i, &c)| (i, c)).unzip();
        let (ni, nc): (Vec<i64>, Vec<u64>) = self.neg.iter().map(|(&i, &c)| (i, c)).unzip();
        let in_buckets = pc.iter().sum::<u64>() + nc.iter().sum::<u64>() + self.zero;
        let nan = self.nan_observations > 0;
        Histogram {
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero,
            count: in_buckets + self.nan_observations,
            sum: if nan { f64::NAN } else { self.sum },
            positive_spans: spans_of(&pi),
            positive_buckets: deltas(&pc),
            negative_spans: spans_of(&ni),
            negative_buckets: deltas(&nc),
            custom_values: self.custom.clone(),
            counter_reset_hint: if self.gauge {
                CounterResetHint::Gauge
            } else if rng.chance(3) {
                CounterResetHint::Reset
            } else {
                CounterResetHint::Unknown
            },
        }
    }
}

fn series(seed: u64, n: usize) -> Vec<(i64, Histogram)> {
    let mut rng = Rng(seed | 1);
    let mut s = Series::new(&mut rng);
    let mut t = rng.next() as i64 >> rng.below(64);
    (0..n)
        .map(|_| {
            s.step(&mut rng);
            let h = s.histogram(&mut rng);
            let step = match rng.below(10) {
                0 => 1 + rng.below(1 << 40) as i64,
                1 => 1,
                _ => 15_000 + rng.below(20) as i64 - 10,
            };
            t = t.saturating_add(step);
            (t, h)
        })
        .collect()
}

/// The observable content of a sample: absolute counts by bucket index,
/// empty buckets left out (recoding adds them), floats as bits.
type Canon = (
    i32,
    u64,
    u64,
    u64,
    u64,
    Vec<(i64, u64)>,
    Vec<(i64, u64)>,
    Vec<u64>,
    CounterResetHint,
);

fn canon_float(h: &FloatHistogram) -> Canon {
    let side = |spans: &[Span], buckets: &[f64]| {
        spans::bucket_indices(spans)
            .zip(buckets)
            .filter(|(_, &c)| c != 0.0)
            .map(|(i, c)| (i, c.to_bits()))
            .collect()
    };
    (
        h.schema,
        h.zero_threshold.to_bits(),
        h.zero_count.to_bits(),
        h.count.to_bits(),
        h.sum.to_bits(),
        side(&h.positive_spans, &h.positive_buckets),
        side(&h.negative_spans, &h.negative_buckets),
        h.custom_values.iter().map(|v| v.to_bits()).collect(),
        h.counter_reset_hint,
    )
}

fn canon(h: &Histogram) -> Canon {
    let mut c = canon_float(&h.to_float());
    // Integer counts are compared exactly, not through f64.
    c.2 = h.zero_count;
    c.3 = h.count;
    c
}

/// Cuts chunks as a head would: on a refusal, a new chunk with the header
/// the refusal names. Returns each chunk with the samples it was given.
fn chunks_of<H, C: Default>(
    samples: &[(i64, H)],
    new: impl Fn(CounterResetHeader) -> C,
    append: impl Fn(&mut C, i64, &H) -> Result<(), AppendError>,
    hint: impl Fn(&H) -> CounterResetHint,
) -> Vec<(C, Vec<usize>)> {
    let mut out = vec![(C::default(), Vec::new())];
    for (i, (t, h)) in samples.iter().enumerate() {
        let (c, idx) = out.last_mut().unwrap();
        match append(c, *t, h) {
            Ok(()) => idx.push(i),
            Err(AppendError::NeedsNewChunk(r)) => {
                let mut c = new(r.next_header(hint(h)));
                append(&mut c, *t, h).unwrap();
                out.push((c, vec![i]));
            }
            Err(e) => panic!("sample {i}: {e}"),
        }
    }
    out
}

fn want_hint(stale: bool, header: CounterResetHeader, pos: usize) -> CounterResetHint {
    if stale {
        CounterResetHint::Unknown
    } else {
        header.hint_for(pos as u16)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn integer_chunks_round_trip(seed in any::<u64>(), n in 1usize..200) {
        let samples = series(seed, n);
        for (_, h) in &samples {
            prop_assert!(h.validate().is_ok(), "{:?}: {:?}", h.validate(), h);
        }
        let chunks = chunks_of(&samples, HistogramChunk::with_header, HistogramChunk::append, |h| h.counter_reset_hint);
        for (c, idx) in &chunks {
            let reopened = HistogramChunk::from_bytes(c.bytes()).unwrap();
            prop_assert_eq!(reopened.bytes(), c.bytes());
            let got: Vec<(i64, Histogram)> = HistogramIter::new(c.bytes()).unwrap().collect();
            prop_assert_eq!(got.len(), idx.len());
            let mut prev: Option<&Histogram> = None;
            for (pos, (&i, (t, h))) in idx.iter().zip(&got).enumerate() {
                let (wt, w) = &samples[i];
                prop_assert_eq!(t, wt);
                let mut want = if w.is_stale() { Histogram::stale_marker() } else { w.clone() };
                want.counter_reset_hint = want_hint(w.is_stale(), c.header(), pos);
                prop_assert_eq!(canon(h), canon(&want));
                // Within a counter chunk no count goes down.
                if let (Some(p), false) = (prev, h.is_stale() || c.header() == CounterResetHeader::Gauge) {
                    prop_assert!(h.count >= p.count && h.zero_count >= p.zero_count);
                    let ch = spans::compare_buckets(
                        &p.positive_spans, spans::deltas_to_absolute(&p.positive_buckets),
                        &h.positive_spans, spans::deltas_to_absolute(&h.positive_buckets));
                    prop_assert!(!ch.decreased);
                }
                prev = Some(h);
            }
        }
    }

    #[test]
    fn float_chunks_round_trip(seed in any::<u64>(), n in 1usize..200, scale in prop::sample::select(vec![1.0, 0.5, 1.0 / 3.0])) {
        let samples: Vec<(i64, FloatHistogram)> = series(seed, n)
            .into_iter()
            .map(|(t, h)| {
                let mut f = h.to_float();
                if !h.is_stale() {
                    for v in f.positive_buckets.iter_mut().chain(&mut f.negative_buckets) {
                        *v *= scale;
                    }
                    f.count *= scale;
                    f.zero_count *= scale;
                }
                (t, f)
            })
            .collect();
        let chunks = chunks_of(&samples, FloatHistogramChunk::with_header, FloatHistogramChunk::append, |h| h.counter_reset_hint);
        for (c, idx) in &chunks {
            let reopened = FloatHistogramChunk::from_bytes(c.bytes()).unwrap();
            prop_assert_eq!(reopened.bytes(), c.bytes());
            let got: Vec<(i64, FloatHistogram)> = FloatHistogramIter::new(c.bytes()).unwrap().collect();
            prop_assert_eq!(got.len(), idx.len());
            for (pos, (&i, (t, h))) in idx.iter().zip(&got).enumerate() {
                let (wt, w) = &samples[i];
                prop_assert_eq!(t, wt);
                let mut want = if w.is_stale() { FloatHistogram::stale_marker() } else { w.clone() };
                want.counter_reset_hint = want_hint(w.is_stale(), c.header(), pos);
                prop_assert_eq!(canon_float(h), canon_float(&want));
            }
        }
    }

    #[test]
    fn log_samples_round_trip(seed in any::<u64>(), n in 1usize..30) {
        for (_, h) in series(seed, n) {
            let mut out = Vec::new();
            encode_histogram_sample(&h, &mut out);
            let mut d = Decbuf::new(&out);
            let got = decode_histogram_sample(&mut d).unwrap();
            let want = if h.is_stale() { Histogram::stale_marker() } else { h.clone() };
            prop_assert!(got.bit_eq(&want));
            prop_assert_eq!(d.remaining(), 0);
            for cut in 0..out.len() {
                prop_assert!(decode_histogram_sample(&mut Decbuf::new(&out[..cut])).is_err());
            }
            let f = h.to_float();
            out.clear();
            encode_float_histogram_sample(&f, &mut out);
            let got = decode_float_histogram_sample(&mut Decbuf::new(&out)).unwrap();
            let want = if h.is_stale() { FloatHistogram::stale_marker() } else { f };
            prop_assert!(got.bit_eq(&want));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        for kind in [1u8, 2] {
            let mut b = bytes.clone();
            if let Some(flags) = b.get_mut(2) {
                *flags = (*flags & 0xC0) | kind;
            }
            if let Some(first) = b.first_mut() {
                *first &= 0x7F;
            }
            if let Ok(it) = HistogramIter::new(&b) {
                for _ in it {}
            }
            if let Ok(it) = FloatHistogramIter::new(&b) {
                for _ in it {}
            }
        }
        let _ = decode_histogram_sample(&mut Decbuf::new(&bytes));
        let _ = decode_float_histogram_sample(&mut Decbuf::new(&bytes));
    }

    #[test]
    fn damaged_chunks_never_panic(seed in any::<u64>(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>()) {
        let samples = series(seed, 40);
        let c = chunks_of(&samples, HistogramChunk::with_header, HistogramChunk::append, |h| h.counter_reset_hint);
        let mut bytes = c[0].0.bytes().to_vec();
        for (at, x) in &flips {
            let len = bytes.len();
            bytes[at % len] ^= x;
        }
        let keep = cut % (bytes.len() + 1);
        let mut it = match HistogramIter::new(&bytes[..keep]) {
            Ok(it) => it,
            Err(_) => return Ok(()),
        };
        let mut h = Histogram::default();
        let mut n = 0;
        while it.next_into(&mut h).is_some() {
            n += 1;
            // Nothing decoded can be bigger than the input could describe.
            prop_assert!(h.positive_buckets.len() + h.negative_buckets.len() <= 8 * bytes.len());
        }
        prop_assert!(n <= it.len_hint() as usize);
    }
}
