//! The fault-injection campaign: a fleet, its registry, clients, faults and the checker.

use std::process::ExitCode;

/// What `snowmint-chaos run` takes.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the campaign and reports what it checked.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the campaign is not written yet")
}
