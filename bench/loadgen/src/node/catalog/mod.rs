//! The catalog of one node_exporter target's series, by subsystem, in the
//! order a scrape lists them.

mod exporter;
mod host;

use strata_remote_write::proto::v1;

use super::{Motion, SeriesTemplate, TargetTemplate};
use exporter::{exporter, scrape};
use host::{cpu, kernel, memory, network, storage};

struct Builder {
    series: Vec<SeriesTemplate>,
}

impl Builder {
    fn add(&mut self, name: &str, labels: &[(&str, &str)], motion: Motion) {
        let mut all: Vec<(String, String)> = vec![
            ("__name__".into(), name.into()),
            ("instance".into(), String::new()),
            ("job".into(), "node".into()),
        ];
        all.extend(labels.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        all.sort();
        let instance_pos = all.iter().position(|(n, _)| n == "instance").unwrap_or(0);
        self.series.push(SeriesTemplate {
            labels: all
                .into_iter()
                .map(|(name, value)| v1::Label { name, value })
                .collect(),
            instance_pos,
            motion,
        });
    }

    fn counter(&mut self, name: &str, labels: &[(&str, &str)], per_sec: f64, resolution: f64) {
        self.add(
            name,
            labels,
            Motion::Counter {
                start: per_sec * 86_400.0 * 3.0,
                per_sec,
                resolution,
                idle: 0.0,
            },
        );
    }

    fn rare_counter(&mut self, name: &str, labels: &[(&str, &str)], start: f64) {
        self.add(
            name,
            labels,
            Motion::Counter {
                start,
                per_sec: 0.2,
                resolution: 1.0,
                idle: 0.9,
            },
        );
    }

    fn gauge(&mut self, name: &str, labels: &[(&str, &str)], start: f64, step: f64, res: f64) {
        self.add(
            name,
            labels,
            Motion::Gauge {
                start,
                step,
                resolution: res,
                min: 0.0,
                max: start * 4.0 + step * 100.0,
            },
        );
    }

    fn constant(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.add(name, labels, Motion::Constant(v));
    }
}

impl TargetTemplate {
    /// The series of a node_exporter 1.x on an 8-CPU virtual machine with a
    /// few disks, network devices and mounts, plus the series Prometheus
    /// adds to every scrape (`up`, `scrape_*`): 1,000 in all.
    pub fn node_exporter() -> Self {
        let mut b = Builder { series: Vec::new() };
        cpu(&mut b);
        memory(&mut b);
        network(&mut b);
        storage(&mut b);
        kernel(&mut b);
        exporter(&mut b);
        scrape(&mut b);
        TargetTemplate { series: b.series }
    }
}
