//! `snowmint layout`: what a layout looks like and how long it lasts.

use std::io::{self, Write};

use snowmint::{Clock, Layout, MS_PER_YEAR, UnixMs, WallClock};

use crate::failure::{BadInput, Failure};
use crate::layout_args::chosen_layout;
use snowmint_server::LayoutSettings;

/// Show a layout: bit diagram, epoch, tick, capacity and when its time field runs out
#[derive(Debug, clap::Args)]
pub struct LayoutCmdArgs {
    #[command(flatten)]
    layout: LayoutSettings,
}

/// Runs `snowmint layout`.
pub fn run(args: LayoutCmdArgs) -> Result<(), Failure> {
    let layout = chosen_layout(&args.layout).bad_input()?;
    let mut text = Vec::new();
    describe(&layout, WallClock.now_ms(), &mut text).map_err(anyhow::Error::from)?;
    match io::stdout().lock().write_all(&text) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e)
            .context("cannot write to stdout")
            .into()),
        _ => Ok(()),
    }
}

fn describe(layout: &Layout, now_ms: u64, out: &mut impl Write) -> io::Result<()> {
    let capacity = layout.capacity();
    let bits = layout.bits();
    writeln!(out, "{} layout", layout.name())?;
    writeln!(out)?;
    writeln!(out, "{}", layout.diagram())?;
    writeln!(out)?;
    writeln!(
        out,
        "epoch       {} ({} ms)",
        UnixMs(layout.epoch_ms()),
        layout.epoch_ms()
    )?;
    writeln!(out, "tick        {} ms", layout.tick_ms())?;
    writeln!(
        out,
        "capacity    {} ids per second per worker id ({} per tick)",
        capacity.ids_per_second,
        layout.max_sequence().saturating_add(1)
    )?;
    writeln!(
        out,
        "worker ids  {} ({} datacenter bits, {} worker bits)",
        capacity.worker_ids, bits.datacenter, bits.worker
    )?;
    let runs_out = UnixMs(capacity.runs_out_ms);
    if capacity.runs_out_ms <= now_ms {
        writeln!(out, "runs out    {runs_out} (already past)")?;
    } else {
        let years = (capacity.runs_out_ms - now_ms) / MS_PER_YEAR;
        writeln!(out, "runs out    {runs_out} (in {years} years)")?;
    }
    if let Some(ms) = capacity.signed_overflow_ms {
        writeln!(
            out,
            "note: uses bit 63: ids are unsigned 64-bit numbers, and from {} on they pass 2^63 and overflow a signed BIGINT column",
            UnixMs(ms)
        )?;
    }
    if capacity.runs_out_ms <= now_ms {
        writeln!(
            out,
            "warning: the time field ran out on {runs_out}; ids with this epoch can no longer be made"
        )?;
    } else if let Some(warning) = layout.runs_out_warning(now_ms) {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(layout: Layout, now_ms: u64) -> String {
        let mut out = Vec::new();
        describe(&layout, now_ms, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    const NOW: u64 = 1_763_780_112_345; // 2025-11-22T02:55:12.345Z

    #[test]
    fn twitter_has_decades_left() {
        let t = text(Layout::TWITTER, NOW);
        assert!(
            t.contains("\nepoch       2010-11-04T01:42:54.657Z (1288834974657 ms)\n"),
            "{t}"
        );
        assert!(
            t.contains("\ncapacity    4096000 ids per second per worker id (4096 per tick)\n"),
            "{t}"
        );
        assert!(
            t.contains("\nworker ids  1024 (5 datacenter bits, 5 worker bits)\n"),
            "{t}"
        );
        assert!(
            t.contains("\nruns out    2080-07-10T17:30:30.209Z (in 54 years)\n"),
            "{t}"
        );
        assert!(!t.contains("warning"), "{t}");
    }

    #[test]
    fn warns_when_less_than_a_year_is_left_or_none() {
        let end = Layout::TWITTER.capacity().runs_out_ms;
        let t = text(Layout::TWITTER, end - 2 * MS_PER_YEAR);
        assert!(t.contains("(in 2 years)\n"), "{t}");
        assert!(!t.contains("warning"), "{t}");
        let t = text(Layout::TWITTER, end - MS_PER_YEAR / 2);
        assert!(
            t.ends_with(
                "(in 0 years)\nwarning: layout twitter's time field runs out on 2080-07-10T17:30:30.209Z, within a year: no id can be issued after that; move to another layout or a later epoch\n"
            ),
            "{t}"
        );
        let baidu = text(Layout::BAIDU, NOW);
        assert!(
            baidu.contains("runs out    2024-11-20T21:24:16.000Z (already past)"),
            "{baidu}"
        );
        assert!(
            baidu.contains("warning: the time field ran out on 2024-11-20T21:24:16.000Z"),
            "{baidu}"
        );
    }
}
