//! `snowmint-chaos`: proof at fleet scale.
//!
//! ```text
//! snowmint-chaos run    a fleet of `snowmint serve` on one real registry, faults injected
//!                       while clients draw ids, every id checked
//! snowmint-chaos abuse  connection abuse against one server, and how other clients fare
//! ```
//!
//! All traffic goes to loopback or to network namespaces the tool makes itself; every
//! loop is bounded in count and time.

mod abuse;
mod campaign;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "snowmint-chaos", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a fleet on a real registry, injects faults while clients draw ids, and checks
    /// every id; exits non-zero on any broken invariant.
    Run(campaign::Args),
    /// Attacks one server's connections and measures how other clients fare meanwhile.
    Abuse(abuse::Args),
}

fn main() -> ExitCode {
    // The one crypto provider of every TLS connection (the lease poller's, a secured run's).
    snowmint_lease::install_crypto_provider();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => campaign::run(args),
        Command::Abuse(args) => abuse::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("snowmint-chaos: {err:#}");
            ExitCode::from(2)
        }
    }
}
