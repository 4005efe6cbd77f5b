//! `strata-loadgen`: open-loop remote-write load; the summary JSON goes to
//! stdout (or `--output`), progress lines to stderr.

use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use strata_loadgen::LoadConfig;

#[derive(Parser, Debug)]
#[command(
    name = "strata-loadgen",
    about = "Open-loop Prometheus remote-write 1.0 load: node_exporter-like targets at a fixed samples/s rate"
)]
struct Args {
    /// Remote-write endpoint. With --histograms, repeatable: the same load
    /// goes to every URL; `URL#v1` or `URL#v2` overrides --rw-version for it.
    #[arg(long, default_value = "http://127.0.0.1:9470/api/v1/write")]
    url: Vec<String>,
    /// Offered samples per second.
    #[arg(long, default_value_t = 10_000.0)]
    rate: f64,
    /// How long to offer load, e.g. 60s or 1h.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Number of targets (1,000 series each); default: rate × scrape interval / 1000.
    #[arg(long)]
    targets: Option<usize>,
    /// Scrape interval used to size the number of targets.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    scrape_interval: Duration,
    /// Most samples per request.
    #[arg(long, default_value_t = 2000)]
    batch_size: usize,
    /// Concurrent HTTP/1.1 keep-alive senders.
    #[arg(long, default_value_t = 8)]
    senders: usize,
    /// Queue capacity in batches; default five seconds of load.
    #[arg(long)]
    queue_batches: Option<usize>,
    /// Share of targets replaced by new ones every scrape interval (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    churn: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Give a batch up when it still fails this long after its scheduled time.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    give_up_after: Duration,
    /// How long to wait for queued batches after the load ends.
    #[arg(long, default_value = "35s", value_parser = humantime::parse_duration)]
    drain_timeout: Duration,
    /// Time between progress lines.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    progress_interval: Duration,
    /// Progress lines as JSON (one object per line) instead of text.
    #[arg(long)]
    progress_json: bool,
    /// Extra request header, `Name: value`; repeatable.
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Write the summary JSON here instead of stdout.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// What the requests carry: `remote-write` (1.0, snappy) or `otlp`
    /// (OTLP/HTTP protobuf, gzip; point --url at /v1/metrics).
    #[arg(long, default_value = "remote-write")]
    protocol: String,
    /// Histogram mode: send this many native histogram series (one sample
    /// each per --scrape-interval) instead of node_exporter floats; --rate
    /// and --targets are then ignored and --batch-size counts histograms.
    #[arg(long)]
    histograms: Option<usize>,
    /// Histogram mode: remote-write version, 1 or 2.
    #[arg(long, default_value_t = 2)]
    rw_version: u8,
    /// Histogram mode: share of series with custom buckets (NHCB).
    #[arg(long, default_value_t = 0.0)]
    nhcb_share: f64,
    /// Histogram mode: chance per series and interval of a counter reset.
    #[arg(long, default_value_t = 0.002)]
    reset_probability: f64,
    /// Histogram mode: mean observations per series and interval.
    #[arg(long, default_value_t = 200.0)]
    observations: f64,
    /// Histogram mode: metric name (NHCB series get `<name>_nhcb`).
    #[arg(long, default_value = "bench_request_duration_seconds")]
    metric: String,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let headers = args
        .headers
        .iter()
        .map(|h| {
            let (k, v) = h
                .split_once(':')
                .with_context(|| format!("header {h:?} is not `Name: value`"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(series) = args.histograms {
        return run_histograms(args, series, headers);
    }
    anyhow::ensure!(args.url.len() == 1, "several --url need --histograms");
    let config = LoadConfig {
        url: args.url.into_iter().next().unwrap_or_default(),
        rate: args.rate,
        duration: args.duration,
        targets: args.targets,
        scrape_interval: args.scrape_interval,
        batch_size: args.batch_size,
        senders: args.senders,
        queue_batches: args.queue_batches,
        churn: args.churn,
        seed: args.seed,
        give_up_after: args.give_up_after,
        drain_timeout: args.drain_timeout,
        progress_interval: args.progress_interval,
        headers,
        protocol: match args.protocol.as_str() {
            "remote-write" => strata_loadgen::Protocol::RemoteWrite,
            "otlp" => strata_loadgen::Protocol::Otlp,
            other => anyhow::bail!("--protocol {other:?}: use remote-write or otlp"),
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let json = args.progress_json;
    let summary = runtime.block_on(strata_loadgen::run(config, move |p| {
        print_progress(json, p)
    }))?;
    write_summary(args.output, &summary)
}

fn run_histograms(args: Args, series: usize, headers: Vec<(String, String)>) -> anyhow::Result<()> {
    use strata_loadgen::hist::{Endpoint, HistConfig, RwVersion};
    let version = match args.rw_version {
        1 => RwVersion::V1,
        2 => RwVersion::V2,
        v => anyhow::bail!("--rw-version {v}: use 1 or 2"),
    };
    let endpoints = args
        .url
        .iter()
        .map(|u| Endpoint::parse(u, version))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let config = HistConfig {
        endpoints,
        series,
        interval: args.scrape_interval,
        duration: args.duration,
        batch_size: args.batch_size,
        senders: args.senders,
        seed: args.seed,
        nhcb_share: args.nhcb_share,
        reset_probability: args.reset_probability,
        observations: args.observations,
        metric: args.metric,
        give_up_after: args.give_up_after,
        drain_timeout: args.drain_timeout,
        progress_interval: args.progress_interval,
        headers,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let json = args.progress_json;
    let summary = runtime.block_on(strata_loadgen::hist::run(config, move |p| {
        print_progress(json, p)
    }))?;
    write_summary(args.output, &summary)
}

/// Prints a progress line on stderr: JSON with `--progress-json`.
fn print_progress<P: serde::Serialize + std::fmt::Display>(json: bool, p: &P) {
    if json {
        match serde_json::to_string(p) {
            Ok(s) => eprintln!("{s}"),
            Err(e) => eprintln!("progress: {e}"),
        }
    } else {
        eprintln!("{p}");
    }
}

/// Writes the run's summary as JSON to `--output`, or to stdout.
fn write_summary(
    output: Option<std::path::PathBuf>,
    summary: &impl serde::Serialize,
) -> anyhow::Result<()> {
    let out = serde_json::to_string_pretty(summary)?;
    match output {
        Some(path) => std::fs::write(&path, out + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => println!("{out}"),
    }
    Ok(())
}
