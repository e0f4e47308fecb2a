//! The fault-injection campaign: a fleet, its registry, clients, faults and the checker.
//!
//! ```text
//! main thread      starts the registry, the namespace, the fleet; waits; reports
//! fault thread     the seeded schedule (faults::inject)
//! lease poller     the registry's leases every 100 ms (registry::spawn_poller)
//! tokio runtime    the clients and the /readyz pollers (clients), the relays (net)
//! checker thread   every answer, poll and fault (checker::Checker)
//! ```

mod checker;
mod clients;
mod faults;
mod fleet;
mod ids;
mod net;
mod registry;
mod report;
mod sys;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use checker::{Answer, Checker, FaultRecord, Incarnation, LeasePoll, ReadyPoll, Rollback};

/// How big a campaign is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// At least 2,000,000 ids and every fault kind once (but one restore of the registry,
    /// of a kind drawn from the seed), in under 3 minutes.
    Ci,
    /// At least 100,000,000 ids over at least 10 minutes, faults all along.
    Long,
}

/// What `snowmint-chaos run` takes.
#[derive(clap::Args)]
pub struct Args {
    /// The registry the fleet shares
    #[arg(long, value_enum)]
    registry: registry::Kind,
    /// The registry as a cluster, with its members' faults: a Redis primary, its replica
    /// and three Sentinels; three etcd members; a three-node ZooKeeper ensemble; a
    /// PostgreSQL primary and its streaming standby
    #[arg(long)]
    cluster: bool,
    /// The registry in its secured form (Redis only): a port that speaks TLS only and an
    /// ACL user allowed only snowmint's keys and commands; the servers lease over
    /// `rediss://`, and the lease poller reads over TLS as an admin
    #[arg(long)]
    secured: bool,
    /// The campaign's size
    #[arg(long, value_enum, default_value = "ci")]
    profile: Profile,
    /// The seed of the fault schedule (default: drawn from the clock, and printed)
    #[arg(long)]
    seed: Option<u64>,
    /// How many `snowmint serve` processes
    #[arg(long, default_value_t = 4)]
    servers: usize,
    /// The `snowmint` binary (default: the one beside this binary)
    #[arg(long)]
    snowmint: Option<PathBuf>,
    /// At least this many ids (default: 2,000,000 for ci, 100,000,000 for long)
    #[arg(long)]
    ids: Option<u64>,
    /// At least this many seconds (default: the ci schedule's length, 600 for long)
    #[arg(long)]
    duration: Option<u64>,
    /// Also write the report, as JSON, to this file
    #[arg(long)]
    report: Option<PathBuf>,
    /// At most this many ids a second, fleet-wide (default: no cap for ci, 500,000 for
    /// long, which keeps a 10-minute run's ids to a few GB on disk)
    #[arg(long)]
    rate: Option<u64>,
    /// Ids held in memory before a sorted run is spilled to disk (default 50,000,000:
    /// 400 MB)
    #[arg(long, default_value_t = 50_000_000)]
    memory_ids: usize,
}

/// The campaign's clock: monotonic microseconds since it began, shared by every thread,
/// and the wall clock's reading when it began.
#[derive(Debug, Clone, Copy)]
pub struct Epoch {
    began: Instant,
    began_unix_ms: u64,
}

impl Epoch {
    fn start() -> Epoch {
        let began_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Epoch {
            began: Instant::now(),
            began_unix_ms,
        }
    }

    /// Microseconds since the campaign began.
    pub fn now(&self) -> u64 {
        self.began.elapsed().as_micros() as u64
    }

    /// The instant `at` (µs since the campaign began) on the wall clock, in ms since the
    /// Unix epoch: what the id of a server whose clock is not stepped says.
    pub fn unix_ms(&self, at: u64) -> u64 {
        self.began_unix_ms + at / 1_000
    }
}

/// What the checker thread takes in.
pub enum Event {
    Answer(Answer),
    Incarnation(u32, Incarnation),
    Lease(LeasePoll),
    PollError,
    Ready(ReadyPoll),
    ClientError(String),
    Fault(FaultRecord),
    /// The registry was restored from an older backup, or restarted from nothing.
    Rollback(Rollback),
    /// The clients have stopped: the end of the time line.
    Ended(u64),
}

/// What the checker thread gives back.
pub struct Tally {
    pub findings: checker::Findings,
    pub errors: BTreeMap<String, u64>,
    pub faults: Vec<FaultRecord>,
    pub poll_errors: u64,
}

/// Never longer than this past the planned end, whatever happens: every loop is bounded.
const OVERTIME: Duration = Duration::from_secs(120);

/// Runs the campaign and reports what it checked.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.servers < 2 {
        bail!("--servers {} is below the least, 2", args.servers);
    }
    sys::catch_interrupts();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let (ids_wanted, rounds, least) = match args.profile {
        Profile::Ci => (2_000_000, 1, Duration::ZERO),
        // Every fault of a cluster at least five times.
        Profile::Long if args.cluster => (100_000_000, 5, Duration::from_secs(600)),
        Profile::Long => (100_000_000, 2, Duration::from_secs(600)),
    };
    let rate = args.rate.or(match args.profile {
        Profile::Ci => None,
        Profile::Long => Some(500_000),
    });
    let ids_wanted = args.ids.unwrap_or(ids_wanted);
    let least = args.duration.map_or(least, Duration::from_secs);
    let program = match args.snowmint.clone() {
        Some(path) => path,
        None => std::env::current_exe()?
            .parent()
            .context("the binary's directory")?
            .join("snowmint"),
    };
    if !program.exists() {
        bail!(
            "{} does not exist: build it (cargo build -p snowmint-cli) or pass --snowmint",
            program.display()
        );
    }
    let networked = args.registry != registry::Kind::File && !args.cluster;
    let plan = faults::schedule(
        seed,
        args.servers,
        (args.registry, args.cluster),
        rounds,
        least,
    );
    println!(
        "snowmint-chaos run --registry {}{}{} --profile {} --seed {seed}: {} servers, {} faults planned, at least {ids_wanted} ids",
        flag_value(args.registry),
        if args.cluster { " --cluster" } else { "" },
        if args.secured { " --secured" } else { "" },
        flag_value(args.profile),
        args.servers,
        plan.len()
    );

    let work = tempfile::Builder::new()
        .prefix("snowmint-chaos-")
        .tempdir()?;
    // Declared after `work`, dropped before it: mounts go before their directories.
    let cleanup = sys::Cleanup::default();
    let epoch = Epoch::start();
    let stop = Arc::new(AtomicBool::new(false));
    let ids_seen = Arc::new(AtomicU64::new(0));
    let (events, intake) = mpsc::channel::<Event>();
    let checker_thread = {
        let spill = work.path().join("ids");
        std::fs::create_dir_all(&spill)?;
        let budget = args.memory_ids;
        let ids_seen = ids_seen.clone();
        std::thread::Builder::new()
            .name("checker".into())
            .spawn(move || check(intake, budget, &spill, &ids_seen, epoch))?
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let netns = if networked {
        Some(Arc::new(net::Netns::create(&cleanup)?))
    } else {
        None
    };
    // A secured registry's certificate names the address the isolated servers reach it at.
    let secured = args.secured.then(|| {
        let mut names = snowmint_testkit::LOOPBACK_NAMES.map(String::from).to_vec();
        names.extend(netns.as_ref().map(|netns| netns.host_addr.to_string()));
        names
    });
    let mut registry =
        registry::Registry::start(args.registry, args.cluster, secured, work.path())?;
    let backups = work.path().join("backups");
    let isolated_lease = match (&netns, registry.port()) {
        (Some(netns), Some(port)) => {
            let target = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            let (relay, _task) = runtime.block_on(net::relay_out(netns.host_addr, target))?;
            Some(
                registry
                    .url()
                    .replace(&format!("127.0.0.1:{port}"), &relay.to_string()),
            )
        }
        _ => None,
    };
    let mut fleet = fleet::Fleet::new(
        fleet::Plan {
            program,
            servers: args.servers,
            work: work.path(),
            lease: registry.url(),
            isolated_lease,
            netns: netns.clone(),
            events: events.clone(),
            epoch,
            runtime: runtime.handle().clone(),
        },
        &cleanup,
    )?;
    for i in 0..args.servers {
        fleet.start(i)?;
    }
    let (lease_checked, poller) = registry::spawn_poller(
        args.registry,
        &registry,
        epoch,
        events.clone(),
        stop.clone(),
    )?;
    let shared = clients::Shared {
        targets: fleet.targets.clone(),
        events: events.clone(),
        epoch,
        stop: stop.clone(),
        rate,
        drawn: Arc::new(AtomicU64::new(0)),
    };
    clients::spawn_all(&shared, runtime.handle(), seed);

    let planned_end = plan.last().map_or(Duration::ZERO, |f| f.at) + Duration::from_secs(10);
    let deadline = planned_end.max(least) + OVERTIME;
    let started = Instant::now();
    let outcome = std::thread::scope(|scope| {
        // Stops everything on SIGINT, SIGTERM or the deadline, even mid-schedule.
        let watcher = scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                if sys::INTERRUPTED.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                    return Some("interrupted".to_string());
                }
                if started.elapsed() > deadline {
                    stop.store(true, Ordering::SeqCst);
                    return Some(format!(
                        "only {} ids of {ids_wanted} after {} s",
                        ids_seen.load(Ordering::Relaxed),
                        started.elapsed().as_secs()
                    ));
                }
            }
            None
        });
        // The registry's guard is not `Send`: the faults run on this thread.
        let mut target = faults::Target {
            fleet: &mut fleet,
            registry: &mut registry,
            backups: &backups,
            runtime: runtime.handle(),
            netns: netns.as_deref(),
            events: &events,
            epoch,
            stop: &stop,
        };
        let injected = faults::inject(&mut target, &plan);
        while injected.is_ok()
            && !stop.load(Ordering::SeqCst)
            && (started.elapsed() < least || ids_seen.load(Ordering::Relaxed) < ids_wanted)
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        stop.store(true, Ordering::SeqCst);
        let reason = watcher.join().unwrap_or(None);
        (injected, reason)
    });
    stop.store(true, Ordering::SeqCst);
    let _ = poller.join();
    runtime.shutdown_timeout(Duration::from_secs(5));
    let ended = epoch.now();
    let _ = events.send(Event::Ended(ended));
    drop(fleet);
    drop(registry);
    drop(events);
    drop(shared);
    let tally = checker_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the checker panicked"))??;
    drop(cleanup);
    let (injected, cut_short) = outcome;
    let summary = report::Summary {
        registry: format!("{:?}", args.registry).to_lowercase(),
        profile: format!("{:?}", args.profile).to_lowercase(),
        seed,
        servers: args.servers,
        seconds: ended as f64 / 1e6,
        lease_checked,
        tally,
        failure: match (&injected, &cut_short) {
            (Err(err), _) => Some(format!("{err:#}")),
            (_, Some(reason)) => Some(reason.clone()),
            _ => None,
        },
    };
    let text = summary.text();
    println!("{text}");
    if let Some(path) = &args.report {
        std::fs::write(path, summary.json())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if summary.passed() {
        return Ok(ExitCode::SUCCESS);
    }
    // The servers' logs (`sN/serve.log`) are what a break is read against: kept, without
    // the ids spilled to disk.
    let _ = std::fs::remove_dir_all(work.path().join("ids"));
    println!("the servers' logs are kept in {}", work.keep().display());
    Ok(ExitCode::FAILURE)
}

/// The checker thread: takes in every event until every sender is gone.
fn check(
    intake: mpsc::Receiver<Event>,
    budget: usize,
    spill: &std::path::Path,
    ids_seen: &AtomicU64,
    epoch: Epoch,
) -> anyhow::Result<Tally> {
    let mut checker = Checker::new(budget, spill);
    checker.began_at(epoch.unix_ms(0));
    let mut errors = BTreeMap::new();
    let mut faults = Vec::new();
    let mut poll_errors = 0;
    let mut ended = 0;
    for event in intake {
        match event {
            Event::Answer(answer) => {
                checker.answer(&answer)?;
                ids_seen.store(checker.ids(), Ordering::Relaxed);
            }
            Event::Incarnation(i, incarnation) => checker.incarnation(i, incarnation),
            Event::Lease(poll) => checker.lease_poll(poll),
            Event::PollError => poll_errors += 1,
            Event::Ready(poll) => checker.ready_poll(poll),
            Event::ClientError(kind) => *errors.entry(kind).or_default() += 1,
            Event::Fault(fault) => faults.push(fault),
            Event::Rollback(rollback) => checker.rollback(rollback),
            Event::Ended(at) => ended = at,
        }
    }
    let findings = checker.finish(if ended > 0 { ended } else { epoch.now() })?;
    Ok(Tally {
        findings,
        errors,
        faults,
        poll_errors,
    })
}

/// A choice as its flag takes it (`redis`, `ci`), so the line that starts a run replays it.
fn flag_value(choice: impl clap::ValueEnum) -> String {
    choice
        .to_possible_value()
        .map_or_else(String::new, |value| value.get_name().to_owned())
}
