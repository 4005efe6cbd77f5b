//! Deterministic node-exporter-like series for the codec benches: no
//! external data, the same bytes on every run.

#![allow(dead_code)]

/// The shared seeded generator, under the name the benches use.
pub use strata_codec::rand::SplitMix64 as Rng;

/// The shape of a series' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 0, 1 or a fixed size (info metrics, `up`, filesystem sizes, idle error
    /// counters).
    Constant,
    /// An integer counter that rarely moves (errors, drops, OOM kills).
    RareCounter,
    /// CPU seconds: grows by roughly `interval * utilisation`, 0.01 resolution.
    CpuSeconds,
    /// Bytes / packets: large integers with bursty increments.
    ByteCounter,
    /// Memory bytes: a random walk in pages around a few GiB.
    MemoryGauge,
    /// Load average: a random walk with two decimals.
    LoadAvg,
    /// Full-precision floats (scrape durations, ratios).
    NoisyGauge,
}

/// The mix: how many series of each kind per 100, after a typical
/// node_exporter target (many constant or idle series, a core of busy
/// counters and gauges).
pub const MIX: [(Kind, usize); 7] = [
    (Kind::Constant, 30),
    (Kind::RareCounter, 15),
    (Kind::CpuSeconds, 20),
    (Kind::ByteCounter, 15),
    (Kind::MemoryGauge, 10),
    (Kind::LoadAvg, 5),
    (Kind::NoisyGauge, 5),
];

/// How scrape timestamps deviate from the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jitter {
    /// On schedule: what Prometheus stores when every scrape starts within
    /// its 2 ms timestamp tolerance.
    Aligned,
    /// Every timestamp is off the schedule by a uniform ±3 ms.
    Raw,
    /// The same, after Prometheus' default timestamp adjustment (a timestamp
    /// within 2 ms of the previous one plus the interval is snapped to it).
    Adjusted,
}

/// One synthetic series: its kind and its samples.
pub struct Series {
    pub kind: Kind,
    pub ts: Vec<i64>,
    pub vs: Vec<f64>,
}

/// `copies` series of each kind in [`MIX`] proportions, with 10 s or 15 s
/// scrapes and 120..=360 samples each.
pub fn node_exporter_like(seed: u64, copies: usize, jitter: Jitter) -> Vec<Series> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for _ in 0..copies {
        for (kind, n) in MIX {
            for _ in 0..n {
                out.push(series(&mut rng, kind, jitter));
            }
        }
    }
    out
}

fn series(rng: &mut Rng, kind: Kind, jitter: Jitter) -> Series {
    let interval: i64 = if rng.next_u64() % 2 == 0 {
        10_000
    } else {
        15_000
    };
    let len = rng.range(120, 360) as usize;
    let start = 1_700_000_000_000 + rng.range(0, interval - 1);
    let ts = timestamps(rng, start, interval, len, jitter);
    let secs = interval as f64 / 1000.0;
    let mut vs = Vec::with_capacity(len);
    match kind {
        Kind::Constant => {
            let v = match rng.next_u64() % 3 {
                0 => 0.0,
                1 => 1.0,
                _ => (rng.range(1, 2000) * (1 << 30)) as f64,
            };
            vs.resize(len, v);
        }
        Kind::RareCounter => {
            let mut v = rng.range(0, 50) as f64;
            for _ in 0..len {
                if rng.unit() < 0.02 {
                    v += rng.range(1, 3) as f64;
                }
                vs.push(v);
            }
        }
        Kind::CpuSeconds => {
            let util = rng.unit();
            let mut hundredths = rng.range(1_000_000, 500_000_000);
            for _ in 0..len {
                let busy = (util + (rng.unit() - 0.5) * 0.2).clamp(0.0, 1.0);
                hundredths += (busy * secs * 100.0) as i64;
                vs.push(hundredths as f64 / 100.0);
            }
        }
        Kind::ByteCounter => {
            let rate = rng.range(1_000, 5_000_000) as f64;
            let mut v = rng.range(1 << 30, 1 << 44) as f64;
            for _ in 0..len {
                v += (rate * secs * rng.unit() * 2.0).floor();
                vs.push(v);
            }
        }
        Kind::MemoryGauge => {
            let mut pages = rng.range(500_000, 4_000_000);
            for _ in 0..len {
                pages = (pages + rng.range(-2000, 2000)).max(1);
                vs.push((pages * 4096) as f64);
            }
        }
        Kind::LoadAvg => {
            let mut hundredths = rng.range(0, 400);
            for _ in 0..len {
                hundredths = (hundredths + rng.range(-15, 15)).max(0);
                vs.push(hundredths as f64 / 100.0);
            }
        }
        Kind::NoisyGauge => {
            let base = rng.unit() * 0.05;
            for _ in 0..len {
                vs.push(base * (0.5 + rng.unit()));
            }
        }
    }
    Series { kind, ts, vs }
}

fn timestamps(rng: &mut Rng, start: i64, interval: i64, len: usize, jitter: Jitter) -> Vec<i64> {
    let mut ts = Vec::with_capacity(len);
    let mut last: Option<i64> = None;
    for i in 0..len as i64 {
        let scheduled = start + i * interval;
        if jitter == Jitter::Aligned {
            ts.push(scheduled);
            continue;
        }
        let mut t = scheduled + rng.range(-3, 3);
        if let (Jitter::Adjusted, Some(prev)) = (jitter, last) {
            if (t - (prev + interval)).abs() <= 2 {
                t = prev + interval;
            }
        }
        ts.push(t);
        last = Some(t);
    }
    ts
}
