//! The layout every subcommand is given: the options of [`LayoutSettings`], which `serve`
//! reads from its file too, made into a [`Layout`] with the flag at fault named in front of
//! the core's reason.

use snowmint::error::LayoutChoiceError;
use snowmint::{Clock, Layout, UnixMs, WallClock};
use snowmint_server::LayoutSettings;

/// The layout `args` choose: a preset or custom widths, with another tick or epoch if given.
///
/// # Errors
///
/// The name, the tick or the epoch is not one the core takes.
pub fn chosen_layout(args: &LayoutSettings) -> anyhow::Result<Layout> {
    let now = UnixMs(WallClock.now_ms());
    Layout::chosen(args.name(), args.tick_ms, args.epoch.as_deref(), now).map_err(|err| {
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
