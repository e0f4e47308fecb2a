//! Connection abuse against one server, with a well-behaved client measured meanwhile.

use std::process::ExitCode;

/// What `snowmint-chaos abuse` takes.
#[derive(clap::Args)]
pub struct Args {}

/// Runs each attack and reports how the other clients fared.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the abuse runs are not written yet")
}
