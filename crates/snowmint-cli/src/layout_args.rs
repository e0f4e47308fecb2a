//! The options that pick a layout, shared by every subcommand: a preset and an epoch.

use anyhow::Context;
use snowmint::{Clock, Layout, UnixMs, WallClock};

/// Which layout: a preset, optionally moved to another epoch.
#[derive(Debug, Clone, clap::Args)]
pub struct LayoutArgs {
    /// Layout preset: twitter, discord, instagram, sonyflake, baidu, tsid or mastodon
    /// (default: twitter)
    #[arg(
        long,
        env = "SNOWMINT_LAYOUT",
        value_name = "PRESET",
        default_value = "twitter",
        hide_default_value = true
    )]
    pub layout: String,

    /// Replace the preset's epoch: milliseconds since the Unix epoch, or an RFC 3339 time
    /// such as 2020-01-01T00:00:00Z; never in the future (default: the preset's own)
    #[arg(long, env = "SNOWMINT_EPOCH", value_name = "MS|RFC3339")]
    pub epoch: Option<String>,
}

impl TryFrom<&LayoutArgs> for Layout {
    type Error = anyhow::Error;

    fn try_from(args: &LayoutArgs) -> anyhow::Result<Layout> {
        let layout = Layout::by_name(&args.layout)?;
        let Some(text) = &args.epoch else {
            return Ok(layout);
        };
        let epoch = UnixMs::parse_epoch(text, UnixMs(WallClock.now_ms()))?;
        layout
            .with_epoch_ms(epoch.0)
            .with_context(|| format!("cannot use epoch {text}"))
    }
}
