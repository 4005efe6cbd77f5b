//! What one node_exporter target exposes: about 1,000 series with the metric
//! names and labels of a real Linux host, and how each value moves between
//! scrapes (counters rise by realistic amounts, gauges random-walk), so that
//! storage engines compress what they would compress in production.

use strata_remote_write::proto::v1;

/// How a series' value moves from one scrape to the next.
#[derive(Clone, Copy, Debug)]
pub enum Motion {
    /// Never changes (sizes, info-style gauges, flags).
    Constant(f64),
    /// Rises by about `per_sec` per second (±50 %), rounded to `resolution`;
    /// `idle` is the share of scrapes in which it does not move at all.
    Counter {
        start: f64,
        per_sec: f64,
        resolution: f64,
        idle: f64,
    },
    /// Random walk of at most `step` per scrape, rounded to `resolution`,
    /// kept within `[min, max]`.
    Gauge {
        start: f64,
        step: f64,
        resolution: f64,
        min: f64,
        max: f64,
    },
}

/// One series of the target template: sorted labels with a placeholder
/// `instance` value, and its motion.
#[derive(Clone, Debug)]
pub struct SeriesTemplate {
    pub labels: Vec<v1::Label>,
    /// Index of the `instance` label in `labels`.
    pub instance_pos: usize,
    pub motion: Motion,
}

/// The series of one target, in scrape order.
#[derive(Clone, Debug)]
pub struct TargetTemplate {
    pub series: Vec<SeriesTemplate>,
}

const CPUS: usize = 8;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

mod catalog;

impl TargetTemplate {
    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

/// The shared seeded generator (SplitMix64): the benchmark needs
/// repeatable noise, not cryptographic quality.
pub use strata_codec::rand::SplitMix64 as Rng;

fn round_to(v: f64, resolution: f64) -> f64 {
    if resolution >= 1.0 {
        (v / resolution).round() * resolution
    } else {
        // Round through the decimal grid so values print as short decimals,
        // the way node_exporter's parsed /proc numbers do.
        let scale = (1.0 / resolution).round();
        (v * scale).round() / scale
    }
}

impl Motion {
    /// The first value a new target reports; `spread` in [0, 1) varies it
    /// between hosts.
    pub fn initial(&self, spread: f64) -> f64 {
        match *self {
            Motion::Constant(v) => v,
            Motion::Counter {
                start, resolution, ..
            } => round_to(start * (0.5 + spread), resolution),
            Motion::Gauge {
                start,
                resolution,
                min,
                max,
                ..
            } => round_to((start * (0.8 + 0.4 * spread)).clamp(min, max), resolution),
        }
    }

    /// The value one scrape of `interval_s` seconds after `prev`.
    pub fn next(&self, prev: f64, interval_s: f64, rng: &mut Rng) -> f64 {
        match *self {
            Motion::Constant(v) => v,
            Motion::Counter {
                per_sec,
                resolution,
                idle,
                ..
            } => {
                if idle > 0.0 && rng.unit() < idle {
                    return prev;
                }
                let inc = per_sec * interval_s * (0.5 + rng.unit());
                round_to(prev + inc.max(resolution), resolution)
            }
            Motion::Gauge {
                step,
                resolution,
                min,
                max,
                ..
            } => {
                let delta = step * (2.0 * rng.unit() - 1.0);
                round_to((prev + delta).clamp(min, max), resolution)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_has_a_thousand_valid_distinct_series() {
        let t = TargetTemplate::node_exporter();
        assert_eq!(t.len(), 1000);
        let names: std::collections::HashSet<_> = t
            .series
            .iter()
            .map(|s| s.labels[0].value.as_str())
            .collect();
        for n in ["up", "node_load1", "go_goroutines", "scrape_series_added"] {
            assert!(names.contains(n), "{n} missing");
        }
        let mut seen = std::collections::HashSet::new();
        for s in &t.series {
            assert!(s.labels.windows(2).all(|w| w[0].name < w[1].name), "{s:?}");
            assert_eq!(s.labels[s.instance_pos].name, "instance");
            assert_eq!(s.labels[0].name, "__name__");
            let key: Vec<_> = s.labels.iter().map(|l| (&l.name, &l.value)).collect();
            assert!(seen.insert(key), "duplicate series {s:?}");
        }
    }

    #[test]
    fn counters_never_fall() {
        let t = TargetTemplate::node_exporter();
        let mut rng = Rng::new(7);
        for s in &t.series {
            if let Motion::Counter { .. } = s.motion {
                let mut v = s.motion.initial(0.3);
                for _ in 0..50 {
                    let n = s.motion.next(v, 10.0, &mut rng);
                    assert!(n >= v);
                    v = n;
                }
            }
        }
    }
}
