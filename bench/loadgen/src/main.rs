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
    /// Remote-write endpoint.
    #[arg(long, default_value = "http://127.0.0.1:9470/api/v1/write")]
    url: String,
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
    let config = LoadConfig {
        url: args.url,
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
        if json {
            match serde_json::to_string(p) {
                Ok(s) => eprintln!("{s}"),
                Err(e) => eprintln!("progress: {e}"),
            }
        } else {
            eprintln!("{p}");
        }
    }))?;
    let out = serde_json::to_string_pretty(&summary)?;
    match args.output {
        Some(path) => std::fs::write(&path, out + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => println!("{out}"),
    }
    Ok(())
}
