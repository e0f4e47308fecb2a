//! `snowmint compose` and `snowmint at`: ids made from chosen parts, and the ids that bound
//! an instant.

use std::io::{self, Write};

use anyhow::Context;
use snowmint::{Clock, Encoding, Fields, Id, UnixMs, WallClock};

use crate::failure::{BadInput, Failure};
use crate::layout_args::chosen_layout;
use snowmint_server::LayoutSettings;

/// Compose an id from a time, a datacenter, a worker and a sequence
#[derive(Debug, clap::Args)]
pub struct ComposeArgs {
    /// The id's time: milliseconds since the Unix epoch, or an RFC 3339 time such as
    /// 2024-01-01T00:00:00Z (default: now)
    #[arg(long, value_name = "MS|RFC3339")]
    time: Option<String>,

    /// Datacenter id (default: 0)
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    datacenter: u64,

    /// Worker id (default: 0)
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    worker: u64,

    /// Sequence number (default: 0)
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    sequence: u64,

    /// Encoding of the id: dec, hex, base32, base62 or binary (default: dec)
    #[arg(
        long,
        value_name = "ENCODING",
        default_value = "dec",
        hide_default_value = true,
        value_parser = parse_encoding
    )]
    format: Encoding,

    #[command(flatten)]
    layout: LayoutSettings,
}

/// Print the smallest and the largest id of an instant's tick, for `WHERE id BETWEEN`
#[derive(Debug, clap::Args)]
pub struct AtArgs {
    /// The instant: milliseconds since the Unix epoch, or an RFC 3339 time such as
    /// 2024-01-01T00:00:00Z
    #[arg(value_name = "MS|RFC3339")]
    time: String,

    #[command(flatten)]
    layout: LayoutSettings,
}

fn parse_encoding(text: &str) -> Result<Encoding, String> {
    text.parse()
}

/// Runs `snowmint compose`.
pub fn run_compose(args: ComposeArgs) -> Result<(), Failure> {
    let layout = chosen_layout(&args.layout).bad_input()?;
    let unix_ms = match &args.time {
        Some(text) => parse_time(text).bad_input()?,
        None => WallClock.now_ms(),
    };
    let fields = Fields {
        datacenter: args.datacenter,
        worker: args.worker,
        sequence: args.sequence,
    };
    let id = layout
        .compose_at(unix_ms, fields)
        .context("cannot compose an id")
        .bad_input()?;
    let mut buf = [0; Encoding::BUF_LEN];
    write_out(&format!("{}\n", id.encode(args.format, &mut buf)))
}

/// Runs `snowmint at`.
pub fn run_at(args: AtArgs) -> Result<(), Failure> {
    let layout = chosen_layout(&args.layout).bad_input()?;
    let unix_ms = parse_time(&args.time).bad_input()?;
    let (first, last): (Id, Id) = layout
        .ids_at(unix_ms)
        .with_context(|| format!("cannot give the ids of {}", args.time))
        .bad_input()?;
    write_out(&format!("first  {first}\nlast   {last}\n"))
}

/// Reads a time as people write one: milliseconds since the Unix epoch or RFC 3339.
fn parse_time(text: &str) -> anyhow::Result<u64> {
    Ok(UnixMs::parse_time(text)?.0)
}

fn write_out(text: &str) -> Result<(), Failure> {
    match io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e)
            .context("cannot write to stdout")
            .into()),
        _ => Ok(()),
    }
}
