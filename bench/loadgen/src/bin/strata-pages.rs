//! `strata-pages`: real node_exporter pages for vmagent or Prometheus to
//! scrape (see `strata_loadgen::pages`): `/metrics/<n>` for targets 0 to
//! `--targets` - 1. Stops by itself after `--duration`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use clap::Parser;
use strata_loadgen::pages::Pages;

#[derive(Parser, Debug)]
#[command(
    name = "strata-pages",
    about = "Serves real node_exporter pages for many targets"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9100")]
    listen: String,
    /// The captured fixture (zstd-compressed text).
    #[arg(long)]
    fixture: std::path::PathBuf,
    /// The fixture's job whose series make a page.
    #[arg(long, default_value = "node10")]
    job: String,
    /// Number of targets.
    #[arg(long)]
    targets: usize,
    /// How long to serve, e.g. 10m.
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Duration,
}

async fn page(State(pages): State<Arc<Pages>>, Path(target): Path<usize>) -> impl IntoResponse {
    let mut body = String::with_capacity(pages.series_per_target() * 96);
    match pages.render(target, &mut body) {
        Some(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, format!("no target {target}\n")).into_response(),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let raw = std::fs::read(&args.fixture)
        .with_context(|| format!("cannot read {}", args.fixture.display()))?;
    let text = String::from_utf8(zstd::decode_all(&raw[..]).context("fixture: not zstd")?)
        .context("fixture: not UTF-8")?;
    let pages = Arc::new(Pages::from_fixture(&text, &args.job, args.targets)?);
    eprintln!(
        "strata-pages: {} targets x {} series on http://{}/metrics/<n>",
        pages.targets(),
        pages.series_per_target(),
        args.listen
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let app = axum::Router::new()
            .route("/metrics/{target}", axum::routing::get(page))
            .with_state(pages);
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        axum::serve(listener, app)
            .with_graceful_shutdown(tokio::time::sleep(args.duration))
            .await
            .context("serve")
    })
}
