//! `snowmint serve`: the ID service over HTTP, gRPC and, when asked for, Thrift.

use std::path::PathBuf;

use anyhow::Context;
use clap::{ArgMatches, FromArgMatches};
use snowmint_server::{Config, Settings};

use crate::failure::{BadInput, Failure};

/// Serve ids over HTTP/JSON, gRPC and Thrift, with metrics, health probes and a web page
///
/// Settings come from a TOML file (--config), then SNOWMINT_* variables, then flags: each
/// overrides the one before. The file's keys are the flags' names with underscores
/// (http_addr, worker, ...). With nothing set, it listens on 127.0.0.1:8080 (HTTP) and
/// 127.0.0.1:50051 (gRPC) as datacenter 0, worker 0 of the twitter layout, and keeps its
/// high-water mark in the per-user state directory. --thrift-addr serves Twitter's
/// Snowflake Thrift service too, with no bearer token: bind it to a trusted interface only.
/// --admin-addr serves /healthz, /readyz and /metrics alone on a port with connections of
/// its own, which the API's clients cannot take: point probes and scrapes there.
/// --tls-cert and --tls-key serve TLS; the files are read again when they change, or on
/// SIGHUP. SIGTERM or SIGINT stops it gracefully.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TOML file of settings (default: none)
    #[arg(long, env = "SNOWMINT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(flatten)]
    settings: Settings,
}

impl ServeArgs {
    /// The settings: the file's, if there is one, with the keys that the flags and variables
    /// gave in their place. `given` are the command line's matches, which know those keys.
    fn settings(self, given: &ArgMatches) -> anyhow::Result<Settings> {
        let Some(path) = self.config else {
            return Ok(self.settings);
        };
        let mut settings = Settings::from_file(&path)?;
        let serve = given
            .subcommand_matches("serve")
            .context("the command line has no serve subcommand")?;
        settings.update_from_arg_matches(serve)?;
        Ok(settings)
    }
}

/// Takes over SIGTERM and SIGINT at once, and resolves when either arrives. The handlers
/// are installed when this is called, not when the future is first polled: the server
/// polls it only once it listens, and a signal before that would kill it undrained.
fn terminated() -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let signals = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match signals {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            // Without signal handlers the process can still be stopped; it just won't drain.
            _ => std::future::pending().await,
        }
    }
}

/// Runs `snowmint serve`; `given` are the command line's matches.
pub fn run(args: ServeArgs, given: &ArgMatches) -> Result<(), Failure> {
    let config = args
        .settings(given)
        .and_then(|settings| Ok(Config::try_from(settings)?))
        .bad_input()?;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNOWMINT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    // Multi-thread even with one worker: the listeners and connections are spawned tasks,
    // which run on the workers, while the thread that starts them waits for the signal.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads)
        .enable_all()
        .thread_name("snowmint-serve")
        .build()
        .context("cannot start the async runtime")?;
    // `terminated()` needs the runtime to install its handlers, and runs before `serve` binds.
    runtime
        .block_on(async { snowmint_server::serve(config, terminated()).await })
        .context("serve")?;
    Ok(())
}
