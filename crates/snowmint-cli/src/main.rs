//! `snowmint`: mint, take apart and describe 64-bit Snowflake-style ids.
//!
//! Thin by design: each subcommand parses its flags, builds a validated config with
//! `TryFrom`, and calls the libraries. Bad input exits with status 2, other failures 1.
#![forbid(unsafe_code)]

mod compose;
mod failure;
mod fleet;
mod fleet_table;
mod generate;
mod layout;
mod layout_args;
mod parse;
mod serial;
mod serve;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The version and the commit it was built from, as `snowmint --version` prints them.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SNOWMINT_COMMIT"),
    ")"
);

/// Mint, take apart and describe 64-bit, time-sorted ids in the style of Twitter's Snowflake.
#[derive(Debug, Parser)]
#[command(name = "snowmint", version = VERSION)]
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
    Fleet(fleet::FleetArgs),
    Serial(Box<serial::SerialArgs>),
    Compose(compose::ComposeArgs),
    At(compose::AtArgs),
    Completions(CompletionsArgs),
    Manpage(ManpageArgs),
}

/// Print a completion script for SHELL to standard output
///
/// bash: `snowmint completions bash > /etc/bash_completion.d/snowmint`; zsh: into a
/// directory of $fpath as `_snowmint`; fish: `~/.config/fish/completions/snowmint.fish`;
/// PowerShell: add it to $PROFILE.
#[derive(Debug, clap::Args)]
struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Print the man page snowmint(1) in roff, or write it and one page a subcommand
///
/// `snowmint manpage > /usr/local/share/man/man1/snowmint.1`, or
/// `snowmint manpage --out-dir /usr/local/share/man/man1` for snowmint.1 and
/// snowmint-gen.1, snowmint-serve.1 and the others, each with every option `--help` lists.
#[derive(Debug, clap::Args)]
struct ManpageArgs {
    /// Write every page into DIR instead of snowmint.1 to standard output (default: none)
    #[arg(long, value_name = "DIR")]
    out_dir: Option<std::path::PathBuf>,
}

fn manpage(args: ManpageArgs) -> Result<(), failure::Failure> {
    use anyhow::Context;
    let top = Cli::command();
    let Some(dir) = args.out_dir else {
        clap_mangen::Man::new(top)
            .render(&mut std::io::stdout().lock())
            .context("cannot write the man page")?;
        return Ok(());
    };
    let mut pages = vec![("snowmint".to_string(), top.clone())];
    for sub in top.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let name = format!("snowmint-{}", sub.get_name());
        // clap names commands with static strings: a few bytes once per page written.
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((name, sub.clone().name(leaked)));
    }
    for (name, command) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .context("cannot render a man page")?;
        std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    // One crypto provider for every TLS connection, chosen before the first one.
    snowmint_lease::install_crypto_provider();
    // `Cli::parse()` in two steps, keeping the matches: `serve` asks them which settings the
    // flags and variables gave, to put those over its config file's.
    let matches =
        Cli::command().get_matches_from(parse::options_after_ids(std::env::args_os().collect()));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let result = match cli.command {
        Command::Gen(args) => generate::run(args),
        Command::Parse(args) => parse::run(args),
        Command::Layout(args) => layout::run(args),
        Command::Serve(args) => serve::run(*args, &matches),
        Command::Fleet(args) => fleet::run(args),
        Command::Serial(args) => serial::run(*args),
        Command::Compose(args) => compose::run_compose(args),
        Command::At(args) => compose::run_at(args),
        Command::Completions(args) => {
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "snowmint",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Manpage(args) => manpage(args),
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
