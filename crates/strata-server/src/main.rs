//! The `strata` command line.

use clap::{Parser, Subcommand};

/// Ingest allocates many small, short-lived buffers per request; glibc's
/// allocator took over half of the CPU under load in profiles.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use strata_server::config::{Config, Overrides, Role, ShardId};

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "A Prometheus-compatible time-series database on object storage"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve {
        /// Configuration file (TOML); see config/strata.toml.
        #[arg(long)]
        config: Option<String>,
        /// Role of this process.
        #[arg(long, value_enum)]
        role: Option<Role>,
        /// Address to listen on, e.g. 127.0.0.1:9470.
        #[arg(long)]
        listen: Option<String>,
        /// Where the data lives: a folder, file:///path, s3://bucket/prefix or memory://.
        #[arg(long)]
        object_store: Option<String>,
        /// Reader nodes: folder of the on-disk block cache (local NVMe).
        #[arg(long)]
        cache_dir: Option<String>,
        /// Number of writer shards (writers, readers).
        #[arg(long)]
        shards: Option<u32>,
        /// This writer's shard, 0 to shards-1, or "auto" for the trailing
        /// -<n> of the host name (a StatefulSet ordinal).
        #[arg(long, conflicts_with = "shard_id_from_hostname")]
        shard_id: Option<ShardId>,
        /// Same as --shard-id auto.
        #[arg(long)]
        shard_id_from_hostname: bool,
        /// Distributor: the writers' base URLs, shard i at position i.
        #[arg(long, value_delimiter = ',')]
        writers: Option<Vec<String>>,
        /// A file of bearer tokens, one per line, accepted for writes and
        /// reads (auth.token_file).
        #[arg(long)]
        auth_token_file: Option<String>,
    },
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let Command::Serve {
        config,
        role,
        listen,
        object_store,
        cache_dir,
        shards,
        shard_id,
        shard_id_from_hostname,
        writers,
        auth_token_file,
    } = cli.command;
    let overrides = Overrides {
        role,
        listen,
        object_store,
        cache_dir,
        shards,
        shard_id: if shard_id_from_hostname {
            Some(ShardId::FromHostname)
        } else {
            shard_id
        },
        writers,
        auth_token_file,
    };
    let config = match Config::load(config.as_deref(), std::env::vars(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("strata: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&config.server.log_level));
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("strata: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(strata_server::run(config, shutdown_signal())) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Start-up problems exit 2, like configuration errors, printed once
        // (the log line goes to the same terminal).
        Err(e) if e.downcast_ref::<strata_server::StartupError>().is_some() => {
            eprintln!("strata: {e:#}");
            std::process::ExitCode::from(2)
        }
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("strata: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
