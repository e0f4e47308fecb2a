//! A fleet of lease keepers racing for worker ids on one registry, and what it costs:
//! `fleet --registry redis|etcd|postgres|zookeeper|file --instances N`.
//!
//! Starts the registry on loopback (the testkit's, in a temporary directory) unless given
//! `--url`, then N keepers at the same instant, each with its own registry connection as
//! a server has, and measures
//! - the time until every one holds a worker id (median and slowest), and apart from it
//!   the wait before issuing that the lease's mark asks for;
//! - the registry's operations per acquisition, by its own statistics;
//! - the registry's CPU per renewal in the steady state, from `/proc/PID/stat`, over
//!   `--seconds` at the default renewal interval (a directory has no renewals);
//! - a rolling restart of all N, in waves (each releases, then acquires again).
//!
//! Prints the results, appends them to `--record` (one JSON object a line) and writes the
//! Markdown table and the SVG plot of every run recorded there (`--table`, `--svg`).

// Its parts live beside it, in `fleet/`: a binary's root file finds modules in its own
// directory, which `src/bin/` shares with the other binaries.
#[path = "fleet/measure.rs"]
mod measure;
#[path = "fleet/proc.rs"]
mod proc;
#[path = "fleet/registry.rs"]
mod registry;
#[path = "fleet/report.rs"]
mod report;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

use measure::{Plan, run};
use registry::{Kind, Registry};

/// The most instances one run starts.
const MAX_INSTANCES: usize = 8_192;
/// The longest steady window.
const MAX_SECONDS: u64 = 300;
/// File descriptors per instance, with room: its registry connection, and the registry's
/// end of it when the registry runs from here.
const FDS_PER_INSTANCE: u64 = 4;

#[derive(Debug, Parser)]
#[command(about = "N lease keepers racing for worker ids on one registry, measured")]
struct Args {
    /// The registry.
    #[arg(
        long,
        env = "SNOWMINT_FLEET_REGISTRY",
        required_unless_present = "report_only"
    )]
    registry: Option<Kind>,
    /// How many keepers start together (default 16).
    #[arg(long, env = "SNOWMINT_FLEET_INSTANCES", default_value_t = 16)]
    instances: usize,
    /// The ids' layout, whose worker bits say how many worker ids there are (default
    /// custom:41/0/10/12: 1,024 worker ids in one datacenter).
    #[arg(
        long,
        env = "SNOWMINT_FLEET_LAYOUT",
        default_value = "custom:41/0/10/12"
    )]
    layout: String,
    /// The steady window over which renewals and the registry's CPU are measured, in
    /// seconds (default 20).
    #[arg(long, env = "SNOWMINT_FLEET_SECONDS", default_value_t = 20)]
    seconds: u64,
    /// A running registry's lease URL, on loopback, instead of starting one (default: none).
    #[arg(long, env = "SNOWMINT_FLEET_URL")]
    url: Option<String>,
    /// With --url: the registry's process id, whose CPU is measured (default: none).
    #[arg(long, env = "SNOWMINT_FLEET_PID", requires = "url")]
    pid: Option<u32>,
    /// PostgreSQL's max_connections for the server started here (default: its own, 100).
    #[arg(long, env = "SNOWMINT_FLEET_MAX_CONNECTIONS")]
    max_connections: Option<u32>,
    /// PostgreSQL only: put PgBouncer in front of the server started here, in transaction
    /// mode with at most this many server connections (default: none, every instance
    /// connects to PostgreSQL itself).
    #[arg(long, env = "SNOWMINT_FLEET_POOL", conflicts_with = "url")]
    pool: Option<u32>,
    /// The share of the fleet restarted at once in the rolling restart, in percent
    /// (default 25, a Deployment's default maxUnavailable).
    #[arg(long, env = "SNOWMINT_FLEET_WAVE_PERCENT", default_value_t = 25,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    wave_percent: u32,
    /// How long one instance may take to acquire, in seconds (default 60).
    #[arg(long, env = "SNOWMINT_FLEET_DEADLINE", default_value_t = 60)]
    deadline: u64,
    /// A file the results are appended to, one JSON object a line (default: none).
    #[arg(long, env = "SNOWMINT_FLEET_RECORD")]
    record: Option<PathBuf>,
    /// With --record: where the SVG plot of every recorded run goes (default: none).
    #[arg(long, env = "SNOWMINT_FLEET_SVG", requires = "record")]
    svg: Option<PathBuf>,
    /// With --record: where the Markdown table of every recorded run goes (default: none).
    #[arg(long, env = "SNOWMINT_FLEET_TABLE", requires = "record")]
    table: Option<PathBuf>,
    /// Only write the table and plot from --record, running nothing.
    #[arg(long, requires = "record")]
    report_only: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(kind) = args.registry.filter(|_| !args.report_only) {
        anyhow::ensure!(
            (1..=MAX_INSTANCES).contains(&args.instances),
            "--instances {} is out of range 1..={MAX_INSTANCES}",
            args.instances
        );
        let layout = snowmint::Layout::by_name(&args.layout)?;
        let open_files = proc::raise_open_files((args.instances as u64 + 64) * FDS_PER_INSTANCE);
        // Started before the runtime: the testkit waits for the server by sleeping.
        let mut registry = match &args.url {
            Some(url) => Registry::at(kind, url, args.pid)?,
            None => Registry::start(kind, args.max_connections, args.pool)?,
        };
        let plan = Plan {
            instances: args.instances,
            layout,
            steady: Duration::from_secs(args.seconds.min(MAX_SECONDS)),
            wave: (args.instances * args.wave_percent as usize)
                .div_ceil(100)
                .max(1),
            deadline: Duration::from_secs(args.deadline.min(MAX_SECONDS)),
            max_connections: args.max_connections,
            pool: args.pool,
            open_files,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime")?;
        let result = runtime.block_on(run(&registry, &plan));
        runtime.shutdown_timeout(Duration::from_secs(5));
        registry.stop();
        let result = result?;
        println!("{}", report::summary(&result));
        if let Some(path) = &args.record {
            report::append(path, &result)?;
        }
    }
    if let Some(record) = &args.record {
        let runs = report::read(record)?;
        let table = report::table(&runs);
        println!("{table}");
        if let Some(path) = &args.table {
            std::fs::write(path, &table)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        if let Some(path) = &args.svg {
            std::fs::write(path, report::svg(&runs))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}
