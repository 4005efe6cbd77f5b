//! The sample stream: targets scraped one after another, evenly spread over
//! the scrape interval, cut into batches. Sample `n` of the stream is due at
//! `n / rate` seconds after the start, so batch `k` (samples `kB..(k+1)B`) is
//! scheduled when its last sample has been scraped, exactly as a remote-write
//! queue cuts a full batch.

use std::time::Duration;

use crate::node::{Rng, TargetTemplate};

/// One sample of a batch: which target instance and series, when, what.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Unique id of the target instance (a replaced target gets a new one).
    pub instance: u32,
    /// Index into the target template.
    pub series: u32,
    pub timestamp_ms: i64,
    pub value: f64,
}

/// Generates the stream batch by batch; owns every series' current value.
pub struct Stream {
    template: TargetTemplate,
    targets: usize,
    rate: f64,
    start_ms: i64,
    batch_size: usize,
    churn: f64,
    rng: Rng,
    /// Current instance id per target slot.
    instance: Vec<u32>,
    /// Whether the slot's instance has been scraped yet.
    fresh: Vec<bool>,
    values: Vec<f64>,
    next_instance: u32,
    /// Index of the next sample of the stream.
    cursor: u64,
    unique_series: u64,
}

impl Stream {
    pub fn new(
        template: TargetTemplate,
        targets: usize,
        rate: f64,
        start_ms: i64,
        batch_size: usize,
        churn: f64,
        seed: u64,
    ) -> Self {
        let per_target = template.len();
        Self {
            template,
            targets,
            rate,
            start_ms,
            batch_size: batch_size.max(1),
            churn: churn.clamp(0.0, 1.0),
            rng: Rng::new(seed),
            instance: (0..targets as u32).collect(),
            fresh: vec![true; targets],
            values: vec![0.0; targets * per_target],
            next_instance: targets as u32,
            cursor: 0,
            unique_series: 0,
        }
    }

    pub fn template(&self) -> &TargetTemplate {
        &self.template
    }

    /// Seconds between two scrapes of the same target.
    pub fn scrape_interval(&self) -> Duration {
        Duration::from_secs_f64(self.round_len() as f64 / self.rate)
    }

    fn round_len(&self) -> u64 {
        (self.targets * self.template.len()) as u64
    }

    /// When the batch that [`Self::next_batch`] would return is due, as an
    /// offset from the start.
    pub fn next_due(&self) -> Duration {
        let last = self.cursor + self.batch_size as u64;
        Duration::from_secs_f64(last as f64 / self.rate)
    }

    /// Series that have received at least one sample so far.
    pub fn unique_series(&self) -> u64 {
        self.unique_series
    }

    /// Targets replaced by churn so far.
    pub fn replaced_targets(&self) -> u64 {
        u64::from(self.next_instance) - self.targets as u64
    }

    /// The next batch, appended to `out` (which is cleared first).
    pub fn next_batch(&mut self, out: &mut Vec<Point>) {
        out.clear();
        let per_target = self.template.len() as u64;
        let round_len = self.round_len();
        let interval_s = self.scrape_interval().as_secs_f64();
        for _ in 0..self.batch_size {
            let n = self.cursor;
            self.cursor += 1;
            let round = n / round_len;
            let within = n % round_len;
            let slot = (within / per_target) as usize;
            let series = (within % per_target) as usize;
            if within == 0 && round > 0 {
                self.churn_round(round);
            }
            // Every sample of one scrape carries the scrape's timestamp.
            let scrape_start = n - series as u64;
            let timestamp_ms = self.start_ms + (scrape_start as f64 * 1000.0 / self.rate) as i64;
            let idx = slot * per_target as usize + series;
            let motion = self.template.series[series].motion;
            let value = if self.fresh[slot] {
                if series as u64 == per_target - 1 {
                    self.fresh[slot] = false;
                }
                self.unique_series += 1;
                let spread = self.rng.unit();
                motion.initial(spread)
            } else {
                motion.next(self.values[idx], interval_s, &mut self.rng)
            };
            self.values[idx] = value;
            out.push(Point {
                instance: self.instance[slot],
                series: series as u32,
                timestamp_ms,
                value,
            });
        }
    }

    /// Replaces `churn` of the targets at the start of a round, a different
    /// slice of them each round.
    fn churn_round(&mut self, round: u64) {
        let n = (self.churn * self.targets as f64).round() as usize;
        if n == 0 {
            return;
        }
        let first = (round as usize).wrapping_mul(n) % self.targets;
        for i in 0..n {
            let slot = (first + i) % self.targets;
            self.instance[slot] = self.next_instance;
            self.next_instance = self.next_instance.wrapping_add(1);
            self.fresh[slot] = true;
        }
    }
}

/// The `instance` label of a target: an address in 10.0.0.0/8 with
/// node_exporter's port.
pub fn instance_label(id: u32, out: &mut String) {
    use std::fmt::Write as _;
    out.clear();
    let _ = write!(
        out,
        "10.{}.{}.{}:9100",
        (id >> 16) & 0xFF,
        (id >> 8) & 0xFF,
        id & 0xFF
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_the_schedule_and_the_scrapes() {
        let mut s = Stream::new(TargetTemplate::node_exporter(), 3, 1500.0, 0, 2000, 0.0, 1);
        assert_eq!(s.scrape_interval(), Duration::from_secs(2));
        assert_eq!(s.next_due(), Duration::from_secs_f64(2000.0 / 1500.0));
        let mut b = Vec::new();
        s.next_batch(&mut b);
        assert_eq!(b.len(), 2000);
        assert_eq!((b[0].instance, b[0].timestamp_ms), (0, 0));
        assert_eq!((b[999].instance, b[999].timestamp_ms), (0, 0));
        assert_eq!((b[1000].instance, b[1000].timestamp_ms), (1, 666));
        s.next_batch(&mut b);
        // Target 2, then target 0's second scrape one interval later.
        assert_eq!((b[0].instance, b[0].timestamp_ms), (2, 1333));
        assert_eq!((b[1000].instance, b[1000].timestamp_ms), (0, 2000));
        assert_eq!(s.unique_series(), 3000);
    }

    #[test]
    fn churn_replaces_targets_each_round() {
        let mut s = Stream::new(
            TargetTemplate::node_exporter(),
            10,
            10_000.0,
            0,
            1000,
            0.2,
            1,
        );
        let mut b = Vec::new();
        for _ in 0..30 {
            s.next_batch(&mut b);
        }
        // Three rounds: two of them churn 2 targets each.
        assert_eq!(s.replaced_targets(), 4);
        assert_eq!(s.unique_series(), 14_000);
    }
}
