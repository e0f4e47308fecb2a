//! `snowmint parse`: take ids apart.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};

use anyhow::Context;
use snowmint::{Decoded, Encoding, IdReading, Layout, ParseError};

use crate::failure::{BadInput, Failure};
use crate::layout_args::chosen_layout;
use snowmint_server::LayoutSettings;

/// Take ids apart: time, datacenter, worker, sequence
///
/// Each ID is read in the encoding --encoding names, or else in whichever it looks like:
/// only digits is decimal; a 0x prefix and hex digits is hex, 0b and binary digits binary;
/// exactly 13 characters is Crockford base32 (TSID's), 11 is base62, 16 is hex. The output
/// says which encoding was read.
///
/// Base32 and base62 have no prefix, so the guess can be wrong: text of digits only is read
/// as decimal (base32 0000000000123 is 1091, but reads as 123), and base62 without padding,
/// as TSID libraries other than tsid-creator write it (WIlLsHwljH), is valid base32 too.
/// Give --encoding base62 (or base32, hex...) to read such text as what it is.
///
/// A negative decimal is an id as a signed 64-bit column (SQL bigint, Java long) holds it:
/// for a layout that uses all 64 bits (discord, instagram, tsid, mastodon, custom layouts
/// of 64 bits) it is read as the two's complement, and the output says so; a layout of 63
/// bits has no negative ids, so it is refused. Put -- before a negative id:
///
///   snowmint parse --layout instagram -- -8499700661677131895
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
    #[arg(value_name = "ID", required = true, allow_negative_numbers = true)]
    ids: Vec<String>,

    /// How to read the ids: decimal, hex, base32, base62 or binary (default: guessed from
    /// each id's form, as above)
    #[arg(long, value_name = "ENCODING", env = "SNOWMINT_ENCODING")]
    encoding: Option<Encoding>,

    #[command(flatten)]
    layout: LayoutSettings,

    /// One JSON object per line (default: off)
    #[arg(long, env = "SNOWMINT_JSON")]
    json: bool,
}

/// The command line with `parse`'s options read after `--` too, when `--` only stands
/// before a negative id: `snowmint parse -- -8499700661677131895 --layout instagram` puts
/// it there as people do for any argument with a dash, and means the layout all the same.
/// Negative decimals read as ids without `--`, so it is dropped when the argument right
/// after it is one and an option follows. Anything else after `--` stays an id, as `--`
/// says: `parse -- --5` is refused as an id, `parse -- --help` asks for no help.
pub fn options_after_ids(args: Vec<OsString>) -> Vec<OsString> {
    let is_parse = args.get(1).is_some_and(|arg| arg == "parse");
    let Some(dashes) = args.iter().position(|arg| arg == "--") else {
        return args;
    };
    let negative_next = args
        .get(dashes + 1)
        .and_then(|arg| arg.to_str())
        .is_some_and(|a| {
            a.strip_prefix('-').is_some_and(|digits| {
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            })
        });
    let option_after = args[dashes + 1..]
        .iter()
        .any(|arg| arg.to_str().is_some_and(|a| a.starts_with("--")));
    if !is_parse || !negative_next || !option_after {
        return args;
    }
    let mut args = args;
    args.remove(dashes);
    args
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
    reading: IdReading,
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
                let reading = layout
                    .read_id(&text, args.encoding)
                    .map_err(|err| unreadable(&text, err))?;
                let decoded = Decoded::new(&layout, reading.id).with_context(|| {
                    format!("cannot decode {text} with layout {}", layout.name())
                })?;
                Ok(Row {
                    text,
                    reading,
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

/// Why `text` is no id, pointing a failed guess to `--encoding`.
fn unreadable(text: &str, err: ParseError) -> anyhow::Error {
    let context = match &err {
        ParseError::Unguessed { readers, .. } => {
            // Base62 last: of the readers, the one a guess never picks for such text.
            let reader = readers.last().map_or("", |encoding| encoding.name());
            format!("cannot parse {text:?} without --encoding (such as --encoding {reader})")
        }
        _ => format!("cannot parse {text:?}"),
    };
    anyhow::Error::new(err).context(context)
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
    let reading = &row.reading;
    let read_as = if reading.signed {
        format!(
            "read {:?} as a signed 64-bit decimal: its two's complement",
            row.text
        )
    } else if reading.encoding == Encoding::Decimal {
        format!("read as {}", reading.encoding)
    } else {
        format!("read {:?} as {}", row.text, reading.encoding)
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
