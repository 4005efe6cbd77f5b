//! The simulated series: node-exporter-like value models, and one scrape
//! of them as write requests.

use std::sync::Arc;

use strata_codec::rand::SplitMix64;
use strata_codec::Label;
use strata_storage::IngestSeries;

use crate::{SAMPLES_PER_REQUEST, SCRAPE_MS, SERIES_PER_HOST};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Constant,
    RareCounter,
    CpuSeconds,
    ByteCounter,
    MemoryGauge,
    LoadAverage,
    FloatGauge,
}

pub(crate) const KINDS: [(Kind, usize, &str); 7] = [
    (Kind::Constant, 30, "constant"),
    (Kind::RareCounter, 15, "rare counter"),
    (Kind::CpuSeconds, 20, "CPU seconds"),
    (Kind::ByteCounter, 15, "byte counter"),
    (Kind::MemoryGauge, 10, "memory gauge"),
    (Kind::LoadAverage, 5, "load average"),
    (Kind::FloatGauge, 5, "float gauge"),
];

pub(crate) fn kind_of(slot: usize) -> (Kind, usize) {
    let mut start = 0;
    for (kind, n, _) in KINDS {
        if slot < start + n {
            return (kind, slot - start);
        }
        start += n;
    }
    (Kind::Constant, slot)
}

/// One write request: series with shared labels.
pub(crate) type Request = Vec<IngestSeries<Arc<[Label]>>>;

/// One simulated series: labels, value model and state.
pub(crate) struct SimSeries {
    /// Shared, as a decoder shares label bytes with the request body:
    /// handing a series to `write` allocates nothing.
    pub(crate) labels: Arc<[Label]>,
    pub(crate) kind: Kind,
    /// Integer state: centiseconds, bytes, pages, hundredths, or a count.
    int: i64,
    float: f64,
    rng: SplitMix64,
    /// Offset of its host's scrapes within the interval.
    pub(crate) offset_ms: i64,
}

impl SimSeries {
    pub(crate) fn new(host: usize, slot: usize) -> Self {
        let (kind, k) = kind_of(slot);
        let mut rng = SplitMix64::new((host as u64) << 20 | slot as u64);
        let (name, a, b): (&str, (&str, String), (&str, String)) = match kind {
            Kind::Constant => (
                "node_filesystem_size_bytes",
                (
                    "device",
                    format!("/dev/sd{}", (b'a' + (k / 10) as u8) as char),
                ),
                ("mountpoint", format!("/mnt/vol{k}")),
            ),
            Kind::RareCounter => (
                "node_network_receive_errs_total",
                ("device", format!("eth{}", k / 5)),
                ("queue", format!("{}", k % 5)),
            ),
            Kind::CpuSeconds => (
                "node_cpu_seconds_total",
                ("cpu", format!("{}", k / 8 + 2 * (k % 3))),
                (
                    "mode",
                    [
                        "idle", "user", "system", "iowait", "irq", "softirq", "steal", "nice",
                    ][k % 8]
                        .to_string(),
                ),
            ),
            Kind::ByteCounter => (
                "node_network_receive_bytes_total",
                ("device", format!("eth{k}")),
                ("duplex", "full".into()),
            ),
            Kind::MemoryGauge => (
                "node_memory_bytes",
                ("type", format!("pool{k}")),
                ("numa", format!("{}", k % 2)),
            ),
            Kind::LoadAverage => (
                "node_load",
                ("window", format!("{}m", [1, 5, 15, 30, 60][k])),
                ("source", "proc".into()),
            ),
            Kind::FloatGauge => (
                "node_hwmon_temp_celsius",
                ("chip", format!("coretemp{k}")),
                ("sensor", format!("temp{}", k + 1)),
            ),
        };
        let mut labels = vec![
            Label::new("__name__", name),
            Label::new(a.0, a.1),
            Label::new(b.0, b.1),
            Label::new(
                "az",
                format!("eu-west-1{}", (b'a' + (host % 3) as u8) as char),
            ),
            Label::new("env", "prod"),
            Label::new(
                "instance",
                format!(
                    "10.{}.{}.{}:9100",
                    host / 65536,
                    (host / 256) % 256,
                    host % 256
                ),
            ),
            Label::new("job", "node"),
            Label::new("region", "eu-west-1"),
        ];
        labels.sort_by(|x, y| x.name.cmp(&y.name));
        let int = match kind {
            Kind::Constant => [0, 1, 536_870_912_000][k % 3],
            Kind::RareCounter => (rng.below(5)) as i64,
            Kind::CpuSeconds => rng.below(100_000_000) as i64,
            Kind::ByteCounter => rng.below(1 << 40) as i64,
            Kind::MemoryGauge => (1 << 20) + rng.below(1 << 20) as i64,
            Kind::LoadAverage => rng.below(400) as i64,
            Kind::FloatGauge => 0,
        };
        let float = 40.0 + rng.unit() * 20.0;
        Self {
            labels: labels.into(),
            kind,
            int,
            float,
            rng,
            offset_ms: (host as i64 * 7_919) % SCRAPE_MS,
        }
    }

    /// The value at the next scrape.
    pub(crate) fn next_value(&mut self, slot: usize) -> f64 {
        let r = &mut self.rng;
        match self.kind {
            Kind::Constant => self.int as f64,
            Kind::RareCounter => {
                if r.below(100) < 2 {
                    self.int += 1;
                }
                self.int as f64
            }
            Kind::CpuSeconds => {
                // idle gets most of the 10 s; the other modes a little.
                let rate = if slot % 8 == 0 { 900 } else { 30 };
                self.int += rate + r.below(60) as i64;
                self.int as f64 / 100.0
            }
            Kind::ByteCounter => {
                self.int += r.below(2_000_000) as i64;
                self.int as f64
            }
            Kind::MemoryGauge => {
                self.int = (self.int + r.below(101) as i64 - 50).max(0);
                (self.int * 4096) as f64
            }
            Kind::LoadAverage => {
                self.int = (self.int + r.below(41) as i64 - 20).max(0);
                self.int as f64 / 100.0
            }
            Kind::FloatGauge => {
                self.float += (r.unit() - 0.5) * 0.8;
                self.float
            }
        }
    }
}

/// One scrape of `sims` at `t`, as requests.
pub(crate) fn scrape(sims: &mut [SimSeries], t: i64) -> Vec<Request> {
    sims.iter_mut()
        .enumerate()
        .map(|(i, s)| IngestSeries {
            labels: Arc::clone(&s.labels),
            samples: vec![(t, s.next_value(i % SERIES_PER_HOST))],
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect::<Vec<_>>()
        .chunks(SAMPLES_PER_REQUEST)
        .map(<[_]>::to_vec)
        .collect()
}
