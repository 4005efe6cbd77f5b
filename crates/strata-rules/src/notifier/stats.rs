//! What the notifier counts, for `/metrics`, named after Prometheus'
//! `prometheus_notifications_*`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// Latencies kept per Alertmanager for the summary's quantiles.
const LATENCY_WINDOW: usize = 1024;
/// The quantiles Prometheus' summary reports.
const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

/// The notifier's counters and gauges.
#[derive(Default)]
pub struct NotifierStats {
    dropped: AtomicU64,
    queue_length: AtomicU64,
    queue_capacity: AtomicU64,
    alertmanagers: Mutex<BTreeMap<String, AlertmanagerStats>>,
}

/// One Alertmanager's counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlertmanagerStats {
    /// Alerts it accepted.
    pub sent: u64,
    /// Alerts in requests to it that failed.
    pub errors: u64,
    /// Seconds its accepted requests took, summed.
    pub latency_sum: f64,
    /// Its accepted requests.
    pub latency_count: u64,
    recent: VecDeque<f64>,
}

impl AlertmanagerStats {
    /// The `q` quantile of its recent latencies, NaN with none.
    pub fn latency_quantile(&self, q: f64) -> f64 {
        let mut sorted: Vec<f64> = self.recent.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let rank = (q * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.saturating_sub(1))
            .copied()
            .unwrap_or(f64::NAN)
    }
}

impl NotifierStats {
    pub(crate) fn new(capacity: usize) -> Self {
        let s = Self::default();
        s.queue_capacity.store(capacity as u64, Ordering::Relaxed);
        s
    }

    pub(crate) fn add_dropped(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn set_queue_length(&self, n: usize) {
        self.queue_length.store(n as u64, Ordering::Relaxed);
    }

    /// Keeps the counts of `urls` (starting at 0 those new) and forgets
    /// the others, as Prometheus deletes the series of an Alertmanager
    /// that is gone.
    pub(crate) fn set_alertmanagers<'a>(&self, urls: impl IntoIterator<Item = &'a str>) {
        let mut map = self.alertmanagers.lock();
        let mut kept = BTreeMap::new();
        for url in urls {
            let stats = map.remove(url).unwrap_or_default();
            kept.insert(url.to_owned(), stats);
        }
        *map = kept;
    }

    pub(crate) fn record_sent(&self, url: &str, alerts: usize, took: Duration) {
        let mut map = self.alertmanagers.lock();
        let s = map.entry(url.to_owned()).or_default();
        s.sent += alerts as u64;
        let secs = took.as_secs_f64();
        s.latency_sum += secs;
        s.latency_count += 1;
        if s.recent.len() == LATENCY_WINDOW {
            s.recent.pop_front();
        }
        s.recent.push_back(secs);
    }

    pub(crate) fn record_error(&self, url: &str, alerts: usize) {
        let mut map = self.alertmanagers.lock();
        map.entry(url.to_owned()).or_default().errors += alerts as u64;
    }

    /// Alerts dropped: pushed out of a full queue, or in a batch that no
    /// Alertmanager of some group took.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn queue_length(&self) -> u64 {
        self.queue_length.load(Ordering::Relaxed)
    }

    pub fn queue_capacity(&self) -> u64 {
        self.queue_capacity.load(Ordering::Relaxed)
    }

    /// The Alertmanagers found at the last send (or start), as the URLs
    /// alerts are posted to.
    pub fn alertmanagers(&self) -> Vec<String> {
        self.alertmanagers.lock().keys().cloned().collect()
    }

    /// One Alertmanager's counts, by the URL alerts are posted to.
    pub fn alertmanager(&self, url: &str) -> Option<AlertmanagerStats> {
        self.alertmanagers.lock().get(url).cloned()
    }

    /// Writes the metrics in the Prometheus text format, each name
    /// starting `{prefix}_notifications_`.
    pub fn render(&self, prefix: &str, out: &mut String) {
        let ams = self.alertmanagers.lock().clone();
        let p = format!("{prefix}_notifications");
        let header = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {p}_{name} {help}\n# TYPE {p}_{name} {kind}");
        };

        header(
            out,
            "latency_seconds",
            "summary",
            "Latency quantiles for sending alert notifications.",
        );
        for (url, s) in &ams {
            let url = escape(url);
            for q in QUANTILES {
                let _ = writeln!(
                    out,
                    "{p}_latency_seconds{{alertmanager=\"{url}\",quantile=\"{q}\"}} {}",
                    number(s.latency_quantile(q))
                );
            }
            let _ = writeln!(
                out,
                "{p}_latency_seconds_sum{{alertmanager=\"{url}\"}} {}\n{p}_latency_seconds_count{{alertmanager=\"{url}\"}} {}",
                number(s.latency_sum),
                s.latency_count
            );
        }
        header(
            out,
            "errors_total",
            "counter",
            "Total number of sent alerts affected by errors.",
        );
        for (url, s) in &ams {
            let _ = writeln!(
                out,
                "{p}_errors_total{{alertmanager=\"{}\"}} {}",
                escape(url),
                s.errors
            );
        }
        header(out, "sent_total", "counter", "Total number of alerts sent.");
        for (url, s) in &ams {
            let _ = writeln!(
                out,
                "{p}_sent_total{{alertmanager=\"{}\"}} {}",
                escape(url),
                s.sent
            );
        }
        header(
            out,
            "dropped_total",
            "counter",
            "Total number of alerts dropped due to errors when sending to Alertmanager.",
        );
        let _ = writeln!(out, "{p}_dropped_total {}", self.dropped());
        header(
            out,
            "queue_length",
            "gauge",
            "The number of alert notifications in the queue.",
        );
        let _ = writeln!(out, "{p}_queue_length {}", self.queue_length());
        header(
            out,
            "queue_capacity",
            "gauge",
            "The capacity of the alert notifications queue.",
        );
        let _ = writeln!(out, "{p}_queue_capacity {}", self.queue_capacity());
        header(
            out,
            "alertmanagers_discovered",
            "gauge",
            "The number of alertmanagers discovered and active.",
        );
        let _ = writeln!(out, "{p}_alertmanagers_discovered {}", ams.len());
    }
}

/// A label value escaped for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value as the text format writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_text_format() {
        let s = NotifierStats::new(10_000);
        s.set_alertmanagers(["http://a:9093/api/v2/alerts", "http://b:9093/api/v2/alerts"]);
        s.record_sent("http://a:9093/api/v2/alerts", 3, Duration::from_millis(250));
        s.record_error("http://b:9093/api/v2/alerts", 3);
        s.add_dropped(2);
        s.set_queue_length(7);
        let mut out = String::new();
        s.render("strata", &mut out);
        for line in [
            "# TYPE strata_notifications_latency_seconds summary",
            "strata_notifications_latency_seconds{alertmanager=\"http://a:9093/api/v2/alerts\",quantile=\"0.5\"} 0.25",
            "strata_notifications_latency_seconds{alertmanager=\"http://b:9093/api/v2/alerts\",quantile=\"0.99\"} NaN",
            "strata_notifications_latency_seconds_sum{alertmanager=\"http://a:9093/api/v2/alerts\"} 0.25",
            "strata_notifications_latency_seconds_count{alertmanager=\"http://a:9093/api/v2/alerts\"} 1",
            "strata_notifications_sent_total{alertmanager=\"http://a:9093/api/v2/alerts\"} 3",
            "strata_notifications_sent_total{alertmanager=\"http://b:9093/api/v2/alerts\"} 0",
            "strata_notifications_errors_total{alertmanager=\"http://b:9093/api/v2/alerts\"} 3",
            "# TYPE strata_notifications_dropped_total counter",
            "strata_notifications_dropped_total 2",
            "strata_notifications_queue_length 7",
            "strata_notifications_queue_capacity 10000",
            "strata_notifications_alertmanagers_discovered 2",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing from\n{out}");
        }
    }

    #[test]
    fn alertmanagers_that_go_are_forgotten() {
        let s = NotifierStats::new(1);
        s.set_alertmanagers(["a", "b"]);
        s.record_sent("a", 1, Duration::ZERO);
        s.set_alertmanagers(["a", "c"]);
        assert_eq!(s.alertmanagers(), vec!["a", "c"]);
        assert_eq!(s.alertmanager("a").unwrap().sent, 1);
        assert!(s.alertmanager("b").is_none());
    }

    #[test]
    fn quantiles_of_recent_latencies() {
        let s = NotifierStats::new(1);
        for ms in 1..=100 {
            s.record_sent("a", 1, Duration::from_millis(ms));
        }
        let a = s.alertmanager("a").unwrap();
        assert_eq!(a.latency_quantile(0.5), 0.05);
        assert_eq!(a.latency_quantile(0.9), 0.09);
        assert_eq!(a.latency_quantile(0.99), 0.099);
        assert_eq!(a.latency_count, 100);
    }

    #[test]
    fn escapes_label_values() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
