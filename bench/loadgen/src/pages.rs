//! Real node_exporter pages for a real scraper (vmagent, Prometheus): the
//! series one job of the captured fixture holds
//! (`crates/strata-codec/benches/data/node_exporter.txt.zst`, real
//! prometheus-node-exporter data), served as Prometheus text pages at
//! `/metrics/<n>` for any number of targets `n`.
//!
//! Every target exposes the same series with the captured values, shifted
//! by a few scrapes per target so targets differ; each scrape of a target
//! moves it to its next captured value (a counter starts over when the
//! capture does, as after an exporter restart). The scraper adds `job` and
//! `instance`, so the page leaves them out.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;

/// One series of the page: its text up to the value, and the captured
/// values.
struct PageSeries {
    prefix: String,
    values: Vec<f64>,
}

/// The pages of every target.
pub struct Pages {
    series: Vec<PageSeries>,
    /// Scrapes served per target, grown on demand up to `targets`.
    scrapes: Vec<AtomicU64>,
}

impl Pages {
    /// The series of `job` in the fixture's text, for `targets` targets.
    pub fn from_fixture(text: &str, job: &str, targets: usize) -> anyhow::Result<Self> {
        let mut series = Vec::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(labels) = line.strip_prefix("s ") {
                let pairs = parse_labels(labels)
                    .with_context(|| format!("fixture: bad labels {labels:?}"))?;
                let of_job = pairs.iter().any(|(k, v)| k == "job" && v == job);
                current = of_job.then(|| page_prefix(&pairs));
            } else if let Some(values) = line.strip_prefix("v ") {
                if let Some(prefix) = current.take() {
                    let values = values
                        .split(' ')
                        .map(str::parse::<f64>)
                        .collect::<Result<Vec<_>, _>>()
                        .context("fixture: bad value")?;
                    if !values.is_empty() {
                        series.push(PageSeries { prefix, values });
                    }
                }
            }
        }
        anyhow::ensure!(!series.is_empty(), "fixture: no series of job {job:?}");
        Ok(Pages {
            series,
            scrapes: (0..targets).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Series on every page.
    pub fn series_per_target(&self) -> usize {
        self.series.len()
    }

    pub fn targets(&self) -> usize {
        self.scrapes.len()
    }

    /// Target `target`'s page at its next scrape, or `None` past the last
    /// target.
    pub fn render(&self, target: usize, out: &mut String) -> Option<()> {
        use std::fmt::Write as _;
        let scrape = self.scrapes.get(target)?.fetch_add(1, Ordering::Relaxed);
        let shift = scrape + target as u64 * 7;
        for s in &self.series {
            let v = s.values[(shift % s.values.len() as u64) as usize];
            out.push_str(&s.prefix);
            let _ = writeln!(out, "{v}");
        }
        Some(())
    }
}

/// `name{k="v",...} ` without `job` and `instance`.
fn page_prefix(pairs: &[(String, String)]) -> String {
    let name = pairs
        .iter()
        .find(|(k, _)| k == "__name__")
        .map_or("", |(_, v)| v.as_str());
    let mut out = String::from(name);
    let rest: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "__name__" | "job" | "instance"))
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if !rest.is_empty() {
        out.push('{');
        out.push_str(&rest.join(","));
        out.push('}');
    }
    out.push(' ');
    out
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `k="v",k2="v2"` as the fixture writes labels (values escaped as in the
/// text format).
fn parse_labels(s: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        out.push((key.to_string(), value));
        rest = after.get(end + 1..)?;
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "# comment\n\
        s __name__=\"node_cpu_seconds_total\",cpu=\"0\",instance=\"x:1\",job=\"node10\",mode=\"idle\"\n\
        t 1000 10000 10000\n\
        v 1 2 3\n\
        s __name__=\"up\",instance=\"x:2\",job=\"prometheus\"\n\
        t 1000\n\
        v 1\n\
        s __name__=\"node_uname_info\",instance=\"x:1\",job=\"node10\",version=\"#1 \\\"SMP\\\" a,b\"\n\
        t 1000\n\
        v 1\n";

    #[test]
    fn pages_hold_the_jobs_series_and_move_per_scrape() {
        let pages = Pages::from_fixture(FIXTURE, "node10", 2).unwrap();
        assert_eq!(pages.series_per_target(), 2);
        let mut page = String::new();
        pages.render(0, &mut page).unwrap();
        assert_eq!(
            page,
            "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1\n\
             node_uname_info{version=\"#1 \\\"SMP\\\" a,b\"} 1\n"
        );
        page.clear();
        pages.render(0, &mut page).unwrap();
        assert!(page.starts_with("node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2\n"));
        page.clear();
        pages.render(1, &mut page).unwrap();
        // Target 1 is 7 scrapes ahead: 7 % 3 = 1.
        assert!(page.starts_with("node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2\n"));
        assert!(pages.render(2, &mut page).is_none());
    }
}
