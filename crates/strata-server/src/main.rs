//! The `strata` command line.

use clap::{Parser, Subcommand};

/// Ingest allocates many small, short-lived buffers per request; glibc's
/// allocator took over half of the CPU under load in profiles. Counted, for
/// `strata_heap_allocated_bytes`.
#[global_allocator]
static GLOBAL: strata_server::alloc::CountingMiMalloc = strata_server::alloc::CountingMiMalloc;
use std::io::IsTerminal as _;
use std::process::ExitCode;

use strata_server::config::{Config, Overrides, Role, ShardId};

mod rules_cmd;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "A Prometheus-compatible time-series database on object storage",
    after_help = SETTINGS_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const SETTINGS_HELP: &str = "Every setting of config/strata.toml can also be set as \
STRATA_<SECTION>_<KEY> (e.g. STRATA_STORAGE_RETENTION=30d). Precedence: flag, then \
environment, then --config file, then the built-in default. `strata config` prints the \
effective settings and where each came from. Exit codes: 0 after a clean stop, 2 for a \
configuration or start-up error (bad setting, address in use, unusable object store), \
1 for a failure while running.";

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    #[command(after_help = SETTINGS_HELP)]
    Serve(Settings),
    /// Print the effective configuration (TOML), each value with where it
    /// came from (default, file, env or flag), secrets redacted; exit 2 if
    /// it is invalid.
    #[command(after_help = SETTINGS_HELP)]
    Config(Settings),
    /// Recording and alerting rule files.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Check rule files as `promtool check rules` does: exit 0 when all
    /// pass, 1 when any has errors (3 for lint findings with
    /// --lint-fatal).
    Check(rules_cmd::CheckArgs),
}

/// The flags both subcommands take.
#[derive(clap::Args)]
struct Settings {
    /// Configuration file (TOML); see config/strata.toml.
    #[arg(long)]
    config: Option<String>,
    /// Role of this process [default: all] [env: STRATA_SERVER_ROLE].
    #[arg(long, value_enum)]
    role: Option<Role>,
    /// Address to listen on: host:port, localhost:port or :port (every
    /// interface) [default: 127.0.0.1:9470] [env: STRATA_SERVER_LISTEN].
    #[arg(long)]
    listen: Option<String>,
    /// Where the data lives: a folder, file:///path, s3://bucket/prefix or
    /// memory:// [default: ./data] [env: STRATA_OBJECT_STORE_URL].
    #[arg(long)]
    object_store: Option<String>,
    /// Reader nodes: folder of the on-disk block cache (local NVMe)
    /// [default: none] [env: STRATA_READER_CACHE_DIR].
    #[arg(long)]
    cache_dir: Option<String>,
    /// Number of writer shards (writers, readers) [default: 1]
    /// [env: STRATA_SHARDS_COUNT].
    #[arg(long)]
    shards: Option<u32>,
    /// This writer's shard, 0 to shards-1, or "auto" for the trailing
    /// -<n> of the host name (a StatefulSet ordinal) [default: 0]
    /// [env: STRATA_SHARDS_ID].
    #[arg(long, conflicts_with = "shard_id_from_hostname")]
    shard_id: Option<ShardId>,
    /// Same as --shard-id auto.
    #[arg(long)]
    shard_id_from_hostname: bool,
    /// Distributor: the writers' base URLs, shard i at position i
    /// [env: STRATA_SHARDS_WRITERS].
    #[arg(long, value_delimiter = ',')]
    writers: Option<Vec<String>>,
    /// A file of bearer tokens, one per line, accepted for writes and
    /// reads [default: none] [env: STRATA_AUTH_TOKEN_FILE].
    #[arg(long)]
    auth_token_file: Option<String>,
}

impl Settings {
    fn overrides(self) -> (Option<String>, Overrides) {
        let overrides = Overrides {
            role: self.role,
            listen: self.listen,
            object_store: self.object_store,
            cache_dir: self.cache_dir,
            shards: self.shards,
            shard_id: if self.shard_id_from_hostname {
                Some(ShardId::FromHostname)
            } else {
                self.shard_id
            },
            writers: self.writers,
            auth_token_file: self.auth_token_file,
        };
        (self.config, overrides)
    }
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

fn main() -> ExitCode {
    strata_server::alloc::counting();
    // What seals and compactions free goes back to the system in 100 ms,
    // not mimalloc's 1 s, unless MIMALLOC_PURGE_DELAY says otherwise.
    strata_server::alloc::purge_sooner();
    // The allocator keeps free room per thread and looks at it again only
    // when that thread allocates: threads that free a seal's or a
    // compaction's buffers and then wait give it back as they go idle.
    strata_storage::set_idle_hook(strata_server::alloc::collect_thread_now_and_then);
    let (print_only, settings) = match Cli::parse().command {
        Command::Serve(s) => (false, s),
        Command::Config(s) => (true, s),
        Command::Rules {
            command: RulesCommand::Check(args),
        } => return rules_cmd::check(args),
    };
    let (file, overrides) = settings.overrides();
    let (config, effective) =
        match Config::load_effective(file.as_deref(), std::env::vars(), &overrides) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("strata: {e}");
                return ExitCode::from(2);
            }
        };
    if print_only {
        print!("{}", effective.render());
        return ExitCode::SUCCESS;
    }
    init_logging(&config.server.log_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(strata_server::alloc::collect_thread_now_and_then)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("strata: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(strata_server::run(config, shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        // Printed once, on stderr; the log may go elsewhere. Start-up
        // problems exit 2, like configuration errors.
        Err(e) => {
            eprintln!("strata: {e:#}");
            if e.downcast_ref::<strata_server::StartupError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Logs to stdout at `level` unless `RUST_LOG` says otherwise; colour only
/// on a terminal (and not with `NO_COLOR`). At `info`, SlateDB's own info
/// lines (its full settings on open, every manifest a reader follows) are
/// left out.
fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let quiet = if level.trim() == "info" {
            ",slatedb=warn"
        } else {
            ""
        };
        tracing_subscriber::EnvFilter::new(format!("{level}{quiet}"))
    });
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .init();
}
