//! The options that pick a layout, shared by every subcommand: a preset and an epoch.

use anyhow::{Context, bail};
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
        let epoch_ms = parse_epoch(text, WallClock.now_ms())?;
        layout
            .with_epoch_ms(epoch_ms)
            .with_context(|| format!("cannot use epoch {text}"))
    }
}

/// Reads an epoch given as milliseconds or as an RFC 3339 time, refusing one after `now_ms`
/// (ids would have no time to count yet, and a typo in the year is the likelier story).
fn parse_epoch(text: &str, now_ms: u64) -> anyhow::Result<u64> {
    let epoch_ms = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>()
            .ok()
            .with_context(|| format!("epoch {text} ms does not fit in 64 bits"))?
    } else {
        let time: jiff::Timestamp = text.parse().with_context(|| {
            format!(
                "epoch {text:?} is neither milliseconds since the Unix epoch nor an RFC 3339 time"
            )
        })?;
        match u64::try_from(time.as_millisecond()) {
            Ok(ms) => ms,
            Err(_) => bail!("epoch {text} is before the Unix epoch (1970-01-01T00:00:00Z)"),
        }
    };
    if epoch_ms > now_ms {
        bail!(
            "epoch {} is in the future (now is {}): ids would have no time to count",
            UnixMs(epoch_ms),
            UnixMs(now_ms)
        );
    }
    Ok(epoch_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_763_780_112_345; // 2025-11-22T02:55:12.345Z

    #[test]
    fn epochs_in_ms_and_rfc_3339() {
        assert_eq!(
            parse_epoch("1288834974657", NOW).unwrap(),
            1_288_834_974_657
        );
        assert_eq!(
            parse_epoch("2020-01-01T00:00:00Z", NOW).unwrap(),
            1_577_836_800_000
        );
        assert_eq!(
            parse_epoch("2020-01-01T01:00:00.5+01:00", NOW).unwrap(),
            1_577_836_800_500
        );
        assert_eq!(parse_epoch("0", NOW).unwrap(), 0);
    }

    #[test]
    fn bad_epochs_say_why() {
        let msg = |text| format!("{:#}", parse_epoch(text, NOW).unwrap_err());
        assert_eq!(
            msg("2999-01-01T00:00:00Z"),
            "epoch 2999-01-01T00:00:00.000Z is in the future (now is 2025-11-22T02:55:12.345Z): ids would have no time to count"
        );
        assert!(
            msg("1763780112346").starts_with("epoch 2025-11-22T02:55:12.346Z is in the future")
        );
        assert_eq!(
            msg("99999999999999999999"),
            "epoch 99999999999999999999 ms does not fit in 64 bits"
        );
        assert!(msg("yesterday").starts_with(
            "epoch \"yesterday\" is neither milliseconds since the Unix epoch nor an RFC 3339 time: "
        ));
        assert_eq!(
            msg("1969-12-31T23:59:59Z"),
            "epoch 1969-12-31T23:59:59Z is before the Unix epoch (1970-01-01T00:00:00Z)"
        );
    }
}
