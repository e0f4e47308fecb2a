//! `snowmint serial`: business serial numbers (payment and order numbers) made from new
//! ids, and `snowmint serial parse`: serials taken back apart.

use std::io::Write;

use anyhow::Context;
use clap::Subcommand;
use snowmint::serial::{Template, Zone};
use snowmint::{BizCode, Decoded};

use crate::failure::{BadInput, Failure};
use crate::generate::{GenConfig, IssueArgs, Output, SerialOutput, generate};
use crate::layout_args::chosen_layout;
use snowmint_server::LayoutSettings;

/// Print business serial numbers, or take them apart (`serial parse`)
///
/// A serial is a new id written by a template: the business code, the id's time as
/// yyyyMMddHHmmssSSS, its node (datacenter and worker) and its sequence, each zero-padded
/// to a fixed width, with optional separators (- _ . / space) and an optional check digit
/// ({check} or {check:luhn}, {check:mod97}). Serials are unique because ids are, and one
/// business code's serials sort as strings in issue order. Example: PAY20261122153045123
/// then node 0001 and sequence 0000.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SerialArgs {
    #[command(subcommand)]
    action: Option<SerialAction>,

    /// Business code: 1 to 16 of A-Z and 0-9 (required unless parsing)
    #[arg(long, env = "SNOWMINT_BIZ", value_name = "CODE")]
    biz: Option<String>,

    #[command(flatten)]
    format: FormatArgs,

    #[command(flatten)]
    issue: IssueArgs,
}

#[derive(Debug, Subcommand)]
enum SerialAction {
    /// Take serials apart: business code, time (UTC), node, sequence and the id
    Parse(ParseArgs),
}

#[derive(Debug, clap::Args)]
struct ParseArgs {
    /// The serials
    #[arg(required = true, value_name = "SERIAL")]
    serials: Vec<String>,

    /// One JSON object per serial: biz, and the keys of `snowmint parse --json` (default: off)
    #[arg(long, env = "SNOWMINT_JSON")]
    json: bool,

    #[command(flatten)]
    format: FormatArgs,
}

/// How serials are written: the same for making and for parsing them.
#[derive(Debug, clap::Args)]
struct FormatArgs {
    /// Template of named fields {biz} {time} {node} {seq} {check} (default: {biz}{time}{node}{seq})
    #[arg(long, env = "SNOWMINT_TEMPLATE", value_name = "T", default_value = Template::DEFAULT, hide_default_value = true)]
    template: String,

    /// Time zone of {time}: UTC or a fixed offset such as +08:00 (default: UTC)
    #[arg(
        long = "tz",
        env = "SNOWMINT_TZ",
        value_name = "OFFSET",
        default_value = "UTC",
        hide_default_value = true
    )]
    tz: String,

    #[command(flatten)]
    layout: LayoutSettings,
}

impl FormatArgs {
    fn resolve(&self) -> anyhow::Result<(Template, Zone)> {
        let layout = chosen_layout(&self.layout)?;
        let template = Template::parse(&self.template, &layout)?;
        let zone = Zone::parse(&self.tz)?;
        Ok((template, zone))
    }
}

impl TryFrom<SerialArgs> for GenConfig {
    type Error = anyhow::Error;

    fn try_from(args: SerialArgs) -> anyhow::Result<GenConfig> {
        let (template, zone) = args.format.resolve()?;
        let biz = args
            .biz
            .context("--biz is required: the business code, 1 to 16 of A-Z and 0-9")?;
        let biz = BizCode::new(&biz)?;
        let layout = *template.layout();
        let output = Output::Serial(Box::new(SerialOutput {
            template,
            biz,
            zone,
        }));
        args.issue.config(layout, output)
    }
}

/// Runs `snowmint serial` and `snowmint serial parse`.
pub fn run(args: SerialArgs) -> Result<(), Failure> {
    if let Some(SerialAction::Parse(parse)) = args.action {
        return parse_serials(parse);
    }
    let config = GenConfig::try_from(args).bad_input()?;
    Ok(generate(&config)?)
}

fn parse_serials(args: ParseArgs) -> Result<(), Failure> {
    let (template, zone) = args.format.resolve().bad_input()?;
    // Every serial is checked before anything is printed: bad input prints nothing.
    let parsed = args
        .serials
        .iter()
        .map(|text| {
            template
                .parse_serial(text, &zone)
                .with_context(|| format!("cannot parse serial {text:?}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .bad_input()?;
    let mut out = std::io::stdout().lock();
    for (text, p) in args.serials.iter().zip(&parsed) {
        let decoded: Decoded = p.decoded();
        let biz = p.biz.map(|b| b.as_str().to_string());
        if args.json {
            let value = serde_json::json!({
                "serial": text,
                "biz": biz,
                "id": decoded.id,
                "unix_ms": decoded.unix_ms,
                "time": decoded.time,
                "datacenter": decoded.datacenter,
                "worker": decoded.worker,
                "sequence": decoded.sequence,
            });
            writeln!(out, "{value}").map_err(anyhow::Error::from)?;
        } else {
            writeln!(
                out,
                "serial      {text}\nbiz         {}\nid          {}\ntime        {}\nunix_ms     {}\ndatacenter  {}\nworker      {}\nsequence    {}",
                biz.as_deref().unwrap_or("-"),
                decoded.id,
                decoded.time,
                decoded.unix_ms,
                decoded.datacenter,
                decoded.worker,
                decoded.sequence
            )
            .map_err(anyhow::Error::from)?;
        }
    }
    Ok(())
}
