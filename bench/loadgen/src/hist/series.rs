//! One histogram series' generator: a log-normal latency distribution
//! whose centre drifts, observed into exponential or custom buckets.

use std::collections::BTreeMap;

use strata_codec::histogram::{CounterResetHint, Histogram, HistogramSample, Span};
use strata_codec::rand::SplitMix64;
use strata_codec::Label;

use super::HistConfig;

/// A standard normal draw (Box-Muller) from two uniform ones.
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = rng.unit().max(1e-300);
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// Upper bounds of the custom buckets (seconds), as a classic latency
/// histogram has them; the last bucket (+Inf) is implicit.
const NHCB_BOUNDS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const SCHEMA: i32 = 3;
/// client_golang's default zero threshold (2^-128).
const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// One series: a log-normal latency distribution (log2 seconds ~ N(mu,
/// sigma)) whose mu drifts, and the cumulative counts observed from it.
pub(super) struct SeriesState {
    pub(super) labels: Vec<Label>,
    pub(super) nhcb: bool,
    rng: SplitMix64,
    mu: f64,
    sigma: f64,
    /// Mean observations per interval of this series.
    load: f64,
    /// Bucket index to cumulative count.
    pub(super) buckets: BTreeMap<i32, u64>,
    pub(super) count: u64,
    sum: f64,
    pub(super) resets: u64,
}

impl SeriesState {
    pub(super) fn new(index: usize, config: &HistConfig) -> Self {
        let mut rng = SplitMix64::new(
            config
                .seed
                .wrapping_mul(0x2545_f491_4f6c_dd1d)
                .wrapping_add(index as u64),
        );
        let nhcb = rng.unit() < config.nhcb_share;
        let name = if nhcb {
            format!("{}_nhcb", config.metric)
        } else {
            config.metric.clone()
        };
        let labels = vec![
            Label::new("__name__", name),
            Label::new("instance", format!("host-{:04}", index / 20)),
            Label::new("job", "histbench"),
            Label::new("route", format!("/api/r{:02}", index % 20)),
        ];
        let mu = -7.0 + 4.0 * rng.unit(); // 8 ms to 125 ms median
        let sigma = 0.45 + 0.3 * rng.unit(); // ±3σ ≈ 22 to 36 schema-3 buckets
        let load = config.observations * (0.5 + rng.unit());
        Self {
            labels,
            nhcb,
            rng,
            mu,
            sigma,
            load,
            buckets: BTreeMap::new(),
            count: 0,
            sum: 0.0,
            resets: 0,
        }
    }

    /// Observations of one interval; returns the new sample.
    pub(super) fn step(&mut self, reset_probability: f64) -> HistogramSample {
        if self.rng.unit() < reset_probability {
            self.buckets.clear();
            self.count = 0;
            self.sum = 0.0;
            self.resets += 1;
        }
        self.mu = (self.mu + 0.04 * normal(&mut self.rng)).clamp(-9.0, -1.0);
        let n = self.load * (0.7 + 0.6 * self.rng.unit());
        let (mu, sigma) = (self.mu, self.sigma);
        let cdf = |log2_x: f64| phi((log2_x - mu) / sigma);
        if self.nhcb {
            let mut lower = f64::NEG_INFINITY;
            for i in 0..=NHCB_BOUNDS.len() {
                let upper = NHCB_BOUNDS.get(i).map_or(f64::INFINITY, |b| b.log2());
                let p = cdf(upper) - if lower.is_finite() { cdf(lower) } else { 0.0 };
                let add = (n * p + self.rng.unit()).floor() as u64;
                if add > 0 {
                    *self.buckets.entry(i as i32).or_default() += add;
                    self.count += add;
                    let mid = if upper.is_finite() {
                        upper - 0.5
                    } else {
                        lower + 0.5
                    };
                    self.sum += add as f64 * mid.exp2();
                }
                lower = upper;
            }
        } else {
            let scale = f64::from(1 << SCHEMA);
            let lo = ((mu - 4.0 * sigma) * scale).floor() as i32;
            let hi = ((mu + 4.0 * sigma) * scale).ceil() as i32;
            for i in lo..=hi {
                // Bucket i holds (2^((i-1)/8), 2^(i/8)].
                let upper = f64::from(i) / scale;
                let lower = f64::from(i - 1) / scale;
                let p = cdf(upper) - cdf(lower);
                let add = (n * p + self.rng.unit()).floor() as u64;
                if add > 0 {
                    *self.buckets.entry(i).or_default() += add;
                    self.count += add;
                    self.sum += add as f64 * ((upper + lower) / 2.0).exp2();
                }
            }
        }
        self.sample()
    }

    pub(super) fn sample(&self) -> HistogramSample {
        let mut spans: Vec<Span> = Vec::new();
        let mut deltas = Vec::with_capacity(self.buckets.len());
        let mut prev_index: Option<i32> = None;
        let mut prev_count = 0i64;
        for (&i, &c) in &self.buckets {
            match (prev_index, spans.last_mut()) {
                (Some(p), Some(last)) if i == p + 1 => last.length += 1,
                (Some(p), _) => spans.push(Span {
                    offset: i - p - 1,
                    length: 1,
                }),
                (None, _) => spans.push(Span {
                    offset: i,
                    length: 1,
                }),
            }
            let c = c as i64;
            deltas.push(c - prev_count);
            prev_count = c;
            prev_index = Some(i);
        }
        HistogramSample::Int(Histogram {
            schema: if self.nhcb { -53 } else { SCHEMA },
            zero_threshold: if self.nhcb { 0.0 } else { ZERO_THRESHOLD },
            zero_count: 0,
            count: self.count,
            sum: self.sum,
            positive_spans: spans,
            positive_buckets: deltas,
            negative_spans: Vec::new(),
            negative_buckets: Vec::new(),
            custom_values: if self.nhcb {
                NHCB_BOUNDS.to_vec()
            } else {
                Vec::new()
            },
            counter_reset_hint: CounterResetHint::Unknown,
        })
    }
}
