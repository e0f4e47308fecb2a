//! `snowmint parse`: take ids apart.

use std::io::{self, BufWriter, Write};

use anyhow::Context;
use snowmint::{Decoded, Encoding, Id, Layout};

use crate::failure::{BadInput, Failure};
use crate::layout_args::chosen_layout;
use snowmint_server::LayoutSettings;

/// Take ids apart: time, datacenter, worker, sequence
///
/// Each ID is read in whichever encoding it looks like: only digits is decimal; exactly 13
/// characters is Crockford base32 (TSID's), 16 is hex, 11 is base62; a 0x prefix is hex.
/// The output says which encoding was assumed.
///
/// Every layout's fields go by three keys: datacenter, worker and sequence. The presets'
/// own names map onto them, and the human output shows both:
///
///   discord    worker -> worker, process -> datacenter, increment -> sequence
///   instagram  shard -> worker
///   sonyflake  machine -> worker
///   tsid       node -> worker, counter -> sequence
///   twitter, baidu, mastodon use the keys as they are (mastodon's 16 low bits are its
///   sequence)
///
/// With --json, one object per ID and line, with exactly these keys:
///
///   {"id":"175928847299117063","unix_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter":0,"worker":1,"sequence":7}
///
/// `id` is a decimal string (JavaScript numbers lose precision above 2^53); `time` is RFC
/// 3339 UTC with milliseconds.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ParseArgs {
    /// Ids to take apart, in decimal, hex, base32, base62 or binary (`0b...`)
    #[arg(value_name = "ID", required = true)]
    ids: Vec<String>,

    #[command(flatten)]
    layout: LayoutSettings,

    /// One JSON object per line (default: off)
    #[arg(long, env = "SNOWMINT_JSON")]
    json: bool,
}

/// Every id read and decoded: bad input anywhere means nothing is printed.
#[derive(Debug)]
struct ParseConfig {
    layout: Layout,
    rows: Vec<Row>,
    json: bool,
}

#[derive(Debug)]
struct Row {
    text: String,
    encoding: Encoding,
    decoded: Decoded,
}

impl TryFrom<ParseArgs> for ParseConfig {
    type Error = anyhow::Error;

    fn try_from(args: ParseArgs) -> anyhow::Result<ParseConfig> {
        let layout = chosen_layout(&args.layout)?;
        let rows = args
            .ids
            .into_iter()
            .map(|text| {
                let (id, encoding) =
                    Id::parse_any(&text).with_context(|| format!("cannot parse {text:?}"))?;
                let decoded = Decoded::new(&layout, id).with_context(|| {
                    format!("cannot decode {text} with layout {}", layout.name())
                })?;
                Ok(Row {
                    text,
                    encoding,
                    decoded,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(ParseConfig {
            layout,
            rows,
            json: args.json,
        })
    }
}

/// Runs `snowmint parse`.
pub fn run(args: ParseArgs) -> Result<(), Failure> {
    let config = ParseConfig::try_from(args).bad_input()?;
    match print(&config, io::stdout().lock()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other.context("cannot write to stdout")?),
    }
}

fn print(config: &ParseConfig, out: impl Write) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    for (i, row) in config.rows.iter().enumerate() {
        if config.json {
            serde_json::to_writer(&mut out, &row.decoded)?;
            writeln!(out)?;
            continue;
        }
        if i > 0 {
            writeln!(out)?;
        }
        write_human(&mut out, &config.layout, row)?;
    }
    out.flush()
}

fn write_human(out: &mut impl Write, layout: &Layout, row: &Row) -> io::Result<()> {
    let d = &row.decoded;
    let read_as = if row.encoding == Encoding::Decimal {
        format!("read as {}", row.encoding)
    } else {
        format!("read {:?} as {}", row.text, row.encoding)
    };
    writeln!(out, "id          {} ({read_as})", d.id)?;
    writeln!(out, "layout      {}", layout.name())?;
    writeln!(out, "time        {}", d.time)?;
    writeln!(out, "unix_ms     {}", d.unix_ms)?;
    let names = layout.names();
    let fields = [
        ("datacenter", names.datacenter, d.datacenter),
        ("worker", names.worker, d.worker),
        ("sequence", names.sequence, d.sequence),
    ];
    for (key, name, value) in fields {
        if name == key {
            writeln!(out, "{key:<11} {value}")?;
        } else {
            writeln!(out, "{key:<11} {value} ({}'s {name})", layout.name())?;
        }
    }
    Ok(())
}
