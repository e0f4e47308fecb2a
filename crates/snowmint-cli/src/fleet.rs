//! `snowmint fleet`: who holds the worker ids of a registry, until when, and how many are
//! left.

use std::io::{self, Write};
use std::sync::Arc;

use anyhow::Context;
use snowmint_lease::{Fleet, LeaseError, ListFilter, Listing, Registry};

use crate::failure::{BadInput, Failure};
use crate::fleet_table;

/// List who holds the worker ids of a registry, until when, and how many are left
///
/// Reads every record of the registry that --lease names, in every fleet (or only the
/// one --fleet names) and in the namespaces earlier releases left (such as
/// twitter-1288834974657, which record no fleet, no layout and no taken-at): for each
/// worker id its fleet and layout, datacenter and worker, the holder's identity and holder
/// name (identity/pid/nonce: one per acquisition), when it was taken (PostgreSQL and
/// ZooKeeper record it), its high-water mark, when its lease expires, and whether it is
/// held, expired (its holder stopped renewing, and nobody took it since) or free. Then the
/// free worker ids left per fleet and datacenter, 2^worker_bits of the fleet's layout less
/// its live holders, and the datacenters that several fleets share: their servers draw
/// from separate pools, so two may hold one worker id at once.
///
/// It only reads, and takes and renews nothing: a read-only registry user will do
/// (docs/OPERATIONS.md, "Seeing the fleet"). static:W and hostname name no registry, and
/// have nothing to list.
///
/// With --json, one JSON object:
///
///   {"backend":"redis","read_at_ms":1765148400000,
///    "records":[{"namespace":"fleet.default","fleet":"default","earlier_release":false,
///      "layout":"timestamp@22:41,...;epoch=1288834974657","datacenter":0,"worker":3,
///      "identity":"web-7","holder":"web-7/4242/0a1b2c3d","taken_at_ms":null,
///      "high_water_ms":1765148401000,"expires_at_ms":1765148408000,"lasts":"ttl",
///      "state":"held","lacks":[]}],
///    "pools":[{"namespace":"fleet.default","fleet":"default","datacenter":0,
///      "workers":32,"held":1,"free":31}],
///    "shared":[{"datacenter":0,"namespaces":["fleet.default","fleet.payments"]}]}
///
/// Times are ms since the Unix epoch, on this machine's clock; a field not known is null.
/// state is held, expired or free; lasts is ttl, session (ZooKeeper) or process (file:).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct FleetArgs {
    /// The registry, as `serve --lease` names it: file:DIR, redis[s]://...,
    /// redis[s]+sentinel://..., etcd[s]://..., postgres://... or zookeeper[s]://...,
    /// with the same TLS files and users (default: none; required)
    #[arg(
        long,
        env = "SNOWMINT_LEASE",
        value_name = "URL",
        hide_env_values = true
    )]
    lease: String,

    /// Only this fleet's records, or those of an earlier release's namespace such as
    /// twitter-1288834974657; the datacenters it shares with others are still named
    /// (default: every fleet)
    #[arg(long, env = "SNOWMINT_FLEET", value_name = "NAME")]
    fleet: Option<String>,

    /// Only this datacenter's records (default: every datacenter)
    #[arg(long, env = "SNOWMINT_DATACENTER", value_name = "D")]
    datacenter: Option<u64>,

    /// One JSON object in the shape above instead of tables (default: off)
    #[arg(long, env = "SNOWMINT_JSON")]
    json: bool,
}

/// What to list, checked.
#[derive(Debug)]
struct FleetConfig {
    registry: Arc<dyn Registry>,
    filter: ListFilter,
    json: bool,
}

impl TryFrom<FleetArgs> for FleetConfig {
    type Error = anyhow::Error;

    fn try_from(args: FleetArgs) -> anyhow::Result<FleetConfig> {
        let registry = snowmint_lease::registry_from_url(&args.lease)?;
        // A fleet's name and an earlier release's namespace take the same characters.
        let fleet = args
            .fleet
            .map(|name| Fleet::new(&name).map(|fleet| fleet.name().to_string()))
            .transpose()?;
        Ok(FleetConfig {
            registry,
            filter: ListFilter {
                fleet,
                datacenter: args.datacenter,
            },
            json: args.json,
        })
    }
}

/// Runs `snowmint fleet`.
pub fn run(args: FleetArgs) -> Result<(), Failure> {
    let config = FleetConfig::try_from(args).bad_input()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let listing = match runtime.block_on(config.registry.list(&config.filter)) {
        Ok(listing) => listing,
        Err(err @ LeaseError::NothingToList { .. }) => {
            return Err(anyhow::Error::new(err)).bad_input();
        }
        Err(err) => {
            let backend = config.registry.backend();
            return Err(anyhow::Error::new(err)
                .context(format!("cannot list the {backend} registry"))
                .into());
        }
    };
    match print(&listing, &config.filter, config.json, io::stdout().lock()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other.context("cannot write to stdout")?),
    }
}

fn print(listing: &Listing, filter: &ListFilter, json: bool, out: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    if json {
        serde_json::to_writer(&mut out, listing)?;
        writeln!(out)?;
    } else {
        out.write_all(fleet_table::render(listing, filter).as_bytes())?;
    }
    out.flush()
}
