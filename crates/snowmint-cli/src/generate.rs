//! `snowmint gen`: new ids, unique across runs and across processes on this host.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use snowmint::error::Chain;
use snowmint::serial::{Template, Zone};
use snowmint::{BizCode, Clock, Decoded, Encoding, Generator, Layout, ModeClock};
use snowmint_lease::FileStore;
use snowmint_server::{ClockPolicies, ClockSettings, LayoutSettings, PlaceSettings};

use crate::failure::{BadInput, Failure};
use crate::layout_args::chosen_layout;

/// The longest reservation a run makes: the core's default, so a crashed run makes the next
/// one wait at most 1 s.
const MAX_RESERVE_AHEAD_MS: u64 = 1_000;

/// Big writes to stdout: one system call per many lines.
const OUTPUT_BUFFER: usize = 64 * 1024;

/// Print new ids, one per line
///
/// Ids are unique across runs and across processes on this host that use the same layout,
/// epoch, datacenter and worker. A high-water mark in the state directory records the
/// time up to which ids may have been issued; a run issues nothing at or before it, and
/// lowers it to its last id when it ends. A crashed run leaves the mark up to 1 s ahead,
/// and the next run waits for it to pass (the core's rollback wait: at most 5 s, then an
/// error). The mark's lock lets one process at a time issue ids for a worker id: a second
/// `snowmint gen` started at the same moment waits for the first to finish (at most 10 s).
#[derive(Debug, clap::Args)]
pub struct GenArgs {
    #[command(flatten)]
    layout: LayoutSettings,

    #[command(flatten)]
    issue: IssueArgs,

    /// Encoding of the ids: dec, hex, base32, base62 or binary (`0b` and 64 digits)
    /// (default: dec)
    #[arg(
        long,
        env = "SNOWMINT_FORMAT",
        value_name = "ENCODING",
        default_value = "dec",
        hide_default_value = true,
        value_parser = parse_encoding
    )]
    format: Encoding,

    /// One JSON object per line, with the keys of `snowmint parse --json`; the id is a
    /// decimal string whatever --format says (default: off)
    #[arg(long, env = "SNOWMINT_JSON")]
    json: bool,
}

/// What every command that issues ids takes: how many, and the groups of settings `serve`
/// takes too, declared once in the server crate (where each is also a key of serve's file):
/// where in its fleet the run issues, and its clock policies.
#[derive(Debug, clap::Args)]
pub struct IssueArgs {
    /// How many to print (default: 1)
    #[arg(
        short = 'n',
        long = "count",
        env = "SNOWMINT_COUNT",
        value_name = "N",
        default_value_t = 1,
        hide_default_value = true
    )]
    count: u64,

    #[command(flatten)]
    place: PlaceSettings,

    #[command(flatten)]
    clock: ClockSettings,
}

impl IssueArgs {
    /// Checks the layout, datacenter and worker (the builder holds every such check and the
    /// core's messages for them; nothing is touched yet) and returns the config.
    pub fn config(self, layout: Layout, output: Output) -> anyhow::Result<GenConfig> {
        let policies = ClockPolicies::new(&self.clock, &layout)?;
        let PlaceSettings {
            datacenter,
            worker,
            state_dir,
            fleet,
        } = self.place;
        let (datacenter, worker) = (datacenter.unwrap_or(0), worker.unwrap_or(0));
        policies
            .apply(Generator::builder(layout))
            .datacenter(datacenter)
            .worker(worker)
            .check()?;
        let fleet = match fleet.as_deref() {
            Some(name) => snowmint_lease::Fleet::new(name)?,
            None => snowmint_lease::Fleet::default(),
        };
        Ok(GenConfig {
            fleet,
            policies,
            count: self.count,
            layout,
            datacenter,
            worker,
            output,
            state_dir: state_dir.unwrap_or_else(snowmint_lease::default_state_dir),
        })
    }
}

fn parse_encoding(text: &str) -> Result<Encoding, String> {
    text.parse()
}

/// What `gen` (or `serial`) was asked for, checked.
#[derive(Debug)]
pub struct GenConfig {
    pub count: u64,
    pub policies: ClockPolicies,
    pub layout: Layout,
    pub datacenter: u64,
    pub worker: u64,
    pub output: Output,
    pub state_dir: PathBuf,
    pub fleet: snowmint_lease::Fleet,
}

/// How each id is printed.
#[derive(Debug)]
pub enum Output {
    Text(Encoding),
    Json,
    /// As a business serial number (`snowmint serial`).
    Serial(Box<SerialOutput>),
}

/// A serial's template, business code and zone.
#[derive(Debug)]
pub struct SerialOutput {
    pub template: Template,
    pub biz: BizCode,
    pub zone: Zone,
}

impl TryFrom<GenArgs> for GenConfig {
    type Error = anyhow::Error;

    fn try_from(args: GenArgs) -> anyhow::Result<GenConfig> {
        let layout = chosen_layout(&args.layout)?;
        let output = if args.json {
            Output::Json
        } else {
            Output::Text(args.format)
        };
        args.issue.config(layout, output)
    }
}

/// Runs `snowmint gen`.
pub fn run(args: GenArgs) -> Result<(), Failure> {
    let config = GenConfig::try_from(args).bad_input()?;
    Ok(generate(&config)?)
}

/// Issues `config.count` ids under the state directory's high-water mark and prints them.
pub fn generate(config: &GenConfig) -> anyhow::Result<()> {
    if config.count == 0 {
        return Ok(());
    }
    let mode = config.policies.clock;
    let store = FileStore::for_generator(
        &config.state_dir,
        &config.fleet,
        &config.layout,
        config.datacenter,
        config.worker,
    )?
    .with_clock(mode);
    let mark = store.path().to_path_buf();
    // Read here only for a plain error about an unreadable mark; the generator reads it too.
    store.mark()?;
    let ahead = reserve_ahead(&config.layout, config.count);
    let builder = Generator::builder(config.layout).clock(ModeClock::new(mode));
    let generator = config
        .policies
        .apply(builder)
        .datacenter(config.datacenter)
        .worker(config.worker)
        .reserve_ahead(ahead)
        .store(Arc::new(store))
        .build()
        .with_context(|| {
            format!(
                "cannot start after the high-water mark in {}",
                mark.display()
            )
        })?;
    let written = write_ids(&generator, config, &mark, io::stdout().lock());
    // Lowers the mark to the last id issued, so the next run need not wait.
    let released = generator.shutdown();
    match written {
        Err(err) if is_broken_pipe(&err) => {} // the reader has all it wanted (`| head -1`)
        other => other?,
    }
    if let Err(err) = released {
        let _ = writeln!(
            io::stderr(),
            "warning: could not lower the high-water mark in {} ({}); the next run may wait up to {} ms",
            mark.display(),
            Chain(&err),
            ahead.as_millis()
        );
    }
    Ok(())
}

/// How far ahead each reservation reaches: the ticks `count` ids take at full speed, so a
/// crash makes the next run wait about as long as this one meant to take, and a run of one
/// id reserves one tick. At most [`MAX_RESERVE_AHEAD_MS`], at least one tick.
fn reserve_ahead(layout: &Layout, count: u64) -> Duration {
    let per_tick = layout.max_sequence().saturating_add(1);
    let ticks = count.div_ceil(per_tick).max(1);
    let ms = ticks
        .saturating_mul(layout.tick_ms())
        .min(MAX_RESERVE_AHEAD_MS.max(layout.tick_ms()));
    Duration::from_millis(ms)
}

fn write_ids<C: Clock>(
    generator: &Generator<C>,
    config: &GenConfig,
    mark: &Path,
    out: impl Write,
) -> anyhow::Result<()> {
    let mut out = BufWriter::with_capacity(OUTPUT_BUFFER, out);
    let mut text = [0u8; Encoding::BUF_LEN];
    let mut json = Vec::new();
    let mut serial = String::new();
    let mut left = config.count;
    while left > 0 {
        let batch = generator.next_batch(left).with_context(|| {
            format!(
                "cannot issue ids after the high-water mark in {}",
                mark.display()
            )
        })?;
        for id in batch.iter() {
            match &config.output {
                Output::Text(encoding) => {
                    out.write_all(id.encode(*encoding, &mut text).as_bytes())?
                }
                Output::Json => {
                    json.clear();
                    serde_json::to_writer(&mut json, &Decoded::new(generator.layout(), id)?)?;
                    out.write_all(&json)?;
                }
                Output::Serial(s) => {
                    serial.clear();
                    s.template.write_to(&mut serial, &s.biz, id, &s.zone)?;
                    out.write_all(serial.as_bytes())?;
                }
            }
            out.write_all(b"\n")?;
        }
        left -= batch.len();
    }
    out.flush()?;
    Ok(())
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_run() {
        let ms = |layout, count| reserve_ahead(&layout, count).as_millis();
        assert_eq!(ms(Layout::TWITTER, 0), 1);
        assert_eq!(ms(Layout::TWITTER, 1), 1);
        assert_eq!(ms(Layout::TWITTER, 4_096), 1);
        assert_eq!(ms(Layout::TWITTER, 200_000), 49);
        assert_eq!(ms(Layout::TWITTER, u64::MAX), 1_000);
        assert_eq!(ms(Layout::SONYFLAKE, 1), 10);
        assert_eq!(ms(Layout::SONYFLAKE, 1_000_000), 1_000);
        assert_eq!(ms(Layout::BAIDU, 1), 1_000);
    }
}
