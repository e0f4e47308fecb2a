//! The options that pick a layout, shared by every subcommand: a preset or custom widths,
//! a tick length and an epoch.

use snowmint::error::LayoutChoiceError;
use snowmint::{Clock, Layout, UnixMs, WallClock};

/// Which layout: a preset or custom widths, optionally with another tick and epoch.
#[derive(Debug, Clone, clap::Args)]
pub struct LayoutArgs {
    /// Layout: a preset (twitter, discord, instagram, sonyflake, tsid, mastodon; baidu ran
    /// out in 2024) or custom:T/D/W/S, the timestamp, datacenter, worker and sequence bits
    /// from high to low, adding up to 63 or 64 (default: twitter)
    #[arg(
        long,
        env = "SNOWMINT_LAYOUT",
        value_name = "LAYOUT",
        default_value = "twitter",
        hide_default_value = true
    )]
    pub layout: String,

    /// Replace the preset's epoch: milliseconds since the Unix epoch, or an RFC 3339 time
    /// such as 2020-01-01T00:00:00Z; never in the future (default: the preset's own)
    #[arg(long, env = "SNOWMINT_EPOCH", value_name = "MS|RFC3339")]
    pub epoch: Option<String>,

    /// Milliseconds per tick of the timestamp field (default: the preset's own; 1 for a
    /// custom layout)
    #[arg(long, env = "SNOWMINT_TICK_MS", value_name = "MS")]
    pub tick_ms: Option<u64>,
}

impl TryFrom<&LayoutArgs> for Layout {
    type Error = anyhow::Error;

    fn try_from(args: &LayoutArgs) -> anyhow::Result<Layout> {
        let now = UnixMs(WallClock.now_ms());
        Layout::chosen(&args.layout, args.tick_ms, args.epoch.as_deref(), now).map_err(|err| {
            // The flag at fault, in front of the core's reason.
            match err {
                LayoutChoiceError::TickMs { tick_ms, source } => {
                    anyhow::Error::new(source).context(format!("cannot use --tick-ms {tick_ms}"))
                }
                LayoutChoiceError::Epoch { text, source } => {
                    anyhow::Error::new(source).context(format!("cannot use epoch {text}"))
                }
                other => anyhow::Error::new(other),
            }
        })
    }
}
