//! `snowmint`: mint, take apart and describe 64-bit Snowflake-style ids.
//!
//! Thin by design: each subcommand parses its flags, builds a validated config with
//! `TryFrom`, and calls the libraries. Bad input exits with status 2, other failures 1.
#![forbid(unsafe_code)]

mod compose;
mod failure;
mod generate;
mod layout;
mod layout_args;
mod parse;
mod serial;
mod serve;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Mint, take apart and describe 64-bit, time-sorted ids in the style of Twitter's Snowflake.
#[derive(Debug, Parser)]
#[command(name = "snowmint", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    #[command(name = "gen")]
    Gen(generate::GenArgs),
    Parse(parse::ParseArgs),
    Layout(layout::LayoutCmdArgs),
    Serve(Box<serve::ServeArgs>),
    Serial(Box<serial::SerialArgs>),
    Compose(compose::ComposeArgs),
    At(compose::AtArgs),
}

fn main() -> ExitCode {
    // One crypto provider for every TLS connection, chosen before the first one.
    snowmint_lease::install_crypto_provider();
    // `Cli::parse()` in two steps, keeping the matches: `serve` asks them which settings the
    // flags and variables gave, to put those over its config file's.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let result = match cli.command {
        Command::Gen(args) => generate::run(args),
        Command::Parse(args) => parse::run(args),
        Command::Layout(args) => layout::run(args),
        Command::Serve(args) => serve::run(*args, &matches),
        Command::Serial(args) => serial::run(*args),
        Command::Compose(args) => compose::run_compose(args),
        Command::At(args) => compose::run_at(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings `gen` shares with `serve` are one declaration each: the same flag,
    /// variable and help in both, and serve's file takes the same key.
    #[test]
    fn gen_shares_serves_declarations() {
        let cli = Cli::command();
        let sub = |name: &str| cli.find_subcommand(name).expect(name).clone();
        let (generate, serve) = (sub("gen"), sub("serve"));
        let mut shared = Vec::new();
        for arg in generate.get_arguments() {
            let Some(same) = serve.get_arguments().find(|a| a.get_id() == arg.get_id()) else {
                continue;
            };
            assert_eq!(arg.get_long(), same.get_long());
            assert_eq!(arg.get_env(), same.get_env());
            assert_eq!(
                arg.get_help().map(ToString::to_string),
                same.get_help().map(ToString::to_string),
                "{}",
                arg.get_id()
            );
            shared.push(arg.get_id().to_string());
        }
        shared.sort();
        let mut expected = [
            "layout",
            "epoch",
            "tick_ms",
            "datacenter",
            "worker",
            "state_dir",
            "fleet",
            "clock",
            "rollback",
            "rollback_wait_ms",
            "sequence_start",
        ];
        expected.sort_unstable();
        assert_eq!(shared, expected);
    }
}
