//! The registry a fleet races on: started here on loopback by the testkit (or given by
//! address), and asked how many operations it has served so far.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use snowmint_testkit::Server;

use super::proc;

/// Which registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `redis-server`.
    Redis,
    /// `etcd`.
    Etcd,
    /// PostgreSQL.
    Postgres,
    /// ZooKeeper.
    Zookeeper,
    /// A shared directory of lock files.
    File,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Redis => "redis",
            Kind::Etcd => "etcd",
            Kind::Postgres => "postgres",
            Kind::Zookeeper => "zookeeper",
            Kind::File => "file",
        }
    }
}

/// How a registry's own statistics count operations.
pub const COUNTED_AS_REDIS: &str =
    "commands (INFO commandstats: EVALSHA calls and the commands they ran)";
pub const COUNTED_AS_ETCD: &str = "gRPC calls (etcd /metrics grpc_server_handled_total)";
pub const COUNTED_AS_POSTGRES: &str = "statements (pg_stat_statements calls)";
pub const COUNTED_AS_ZOOKEEPER: &str = "requests (mntr zk_packets_received)";

/// PostgreSQL's programs, Debian's layout.
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// How long a question to the registry may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// ZooKeeper's session timeout bounds in the testkit's server are 2 and 20 ticks of 200
/// ms, below the keeper's default 10 s TTL: raised, so leases last as asked.
const ZK_MAX_SESSION_MS: u64 = 20_000;

/// A registry, with the guard that stops it (none when given by address).
pub struct Registry {
    pub kind: Kind,
    /// What the instances connect to: the registry, or the pool in front of it.
    pub url: String,
    /// Where the bench asks for the registry's statistics: PostgreSQL itself, not its pool.
    stats_url: String,
    server: Option<Box<dyn Server>>,
    /// A `file` registry's directory, removed on drop.
    _dir: Option<tempfile::TempDir>,
    port: u16,
    /// The processes whose CPU and memory are the registry's: the server, and PgBouncer
    /// in front of PostgreSQL.
    pids: Vec<u32>,
}

impl Registry {
    /// Starts `kind` on loopback. PostgreSQL gets `max_connections` if given (its default
    /// is 100) and pg_stat_statements, and PgBouncer in front of it in transaction mode
    /// with `pool` server connections if given; ZooKeeper a session timeout bound of 20 s
    /// and the `mntr` command.
    pub fn start(
        kind: Kind,
        max_connections: Option<u32>,
        pool: Option<u32>,
    ) -> anyhow::Result<Registry> {
        // PgBouncer's PostgreSQL: its URL and its process, beside the pool's.
        let mut behind: Option<(String, Option<u32>)> = None;
        let (server, dir): (Option<Box<dyn Server>>, _) = match kind {
            Kind::Redis => (Some(Box::new(snowmint_testkit::Redis::start())), None),
            Kind::Etcd => (Some(Box::new(snowmint_testkit::Etcd::start())), None),
            Kind::Postgres => {
                let mut settings = "shared_preload_libraries = 'pg_stat_statements'\n".to_string();
                if let Some(max) = max_connections {
                    settings.push_str(&format!("max_connections = {max}\n"));
                }
                let prepare = |pg: &mut snowmint_testkit::Postgres| -> anyhow::Result<()> {
                    append(&pg.dir().join("data/postgresql.auto.conf"), &settings)?;
                    pg.restart();
                    psql(
                        &pg.url(),
                        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
                    )?;
                    Ok(())
                };
                let pg: Box<dyn Server> = match pool {
                    Some(pool) => {
                        let mut pooled = snowmint_testkit::PgBouncer::start(pool);
                        prepare(pooled.postgres_mut())?;
                        behind = Some((pooled.postgres().url(), pooled.postgres().pid()));
                        Box::new(pooled)
                    }
                    None => {
                        let mut pg = snowmint_testkit::Postgres::start();
                        prepare(&mut pg)?;
                        Box::new(pg)
                    }
                };
                (Some(pg), None)
            }
            Kind::Zookeeper => {
                let mut zk = snowmint_testkit::ZooKeeper::start();
                // Later lines win in a Java properties file.
                let more = format!(
                    "maxSessionTimeout={ZK_MAX_SESSION_MS}\n4lw.commands.whitelist=srvr,mntr\n"
                );
                append(&zk.dir().join("zoo.cfg"), &more)?;
                zk.restart();
                (Some(Box::new(zk) as Box<dyn Server>), None)
            }
            Kind::File => {
                let dir =
                    tempfile::tempdir().context("cannot make the file registry's directory")?;
                let url = format!("file:{}", dir.path().display());
                return Ok(Registry {
                    kind,
                    stats_url: url.clone(),
                    url,
                    server: None,
                    _dir: Some(dir),
                    port: 0,
                    pids: Vec::new(),
                });
            }
        };
        let server = server.expect("a network registry");
        let url = server.url();
        let (stats_url, pids) = match behind {
            Some((stats_url, pid)) => (
                stats_url,
                [server.pid(), pid].into_iter().flatten().collect(),
            ),
            None => (url.clone(), server.pid().into_iter().collect()),
        };
        Ok(Registry {
            kind,
            port: port_of(&url)?,
            url,
            stats_url,
            server: Some(server),
            _dir: dir,
            pids,
        })
    }

    /// A registry that runs already, at `url` on loopback; `pid`, if given, is whose CPU
    /// is measured.
    pub fn at(kind: Kind, url: &str, pid: Option<u32>) -> anyhow::Result<Registry> {
        let port = if kind == Kind::File { 0 } else { port_of(url)? };
        Ok(Registry {
            kind,
            url: url.to_string(),
            stats_url: url.to_string(),
            server: None,
            _dir: None,
            port,
            pids: pid.into_iter().collect(),
        })
    }

    /// Whether the registry has processes of its own to measure (a directory has none).
    pub fn measured(&self) -> bool {
        !self.pids.is_empty()
    }

    /// The CPU time of the registry's processes and their children so far, in ms.
    pub fn cpu_ms(&self) -> u64 {
        self.pids.iter().map(|&pid| proc::cpu_ms(pid)).sum()
    }

    /// The memory of the registry's processes and their children, in KiB.
    pub fn pss_kib(&self) -> u64 {
        self.pids.iter().map(|&pid| proc::pss_kib(pid)).sum()
    }

    /// PostgreSQL's sessions now; `None` for the others ([`Stats::server_connections`]).
    pub fn server_connections(&self) -> Option<u64> {
        self.stats_handle().server_connections()
    }

    /// What asks for the registry's sessions, for a thread of its own.
    pub fn stats_handle(&self) -> Stats {
        Stats {
            kind: self.kind,
            url: self.stats_url.clone(),
        }
    }

    /// The operations the registry has served so far, by its own count, and what it counts;
    /// `None` for a directory.
    pub fn operations(&self) -> anyhow::Result<Option<(u64, &'static str)>> {
        Ok(Some(match self.kind {
            Kind::File => return Ok(None),
            Kind::Redis => (redis_commands(self.port)?, COUNTED_AS_REDIS),
            Kind::Etcd => (etcd_calls(self.port)?, COUNTED_AS_ETCD),
            Kind::Postgres => (postgres_statements(&self.stats_url)?, COUNTED_AS_POSTGRES),
            Kind::Zookeeper => (zookeeper_requests(self.port)?, COUNTED_AS_ZOOKEEPER),
        }))
    }

    /// PostgreSQL's shared memory, as it reports it (`shared_memory_size`, MiB): what
    /// `max_connections` adds to at start, whether the connections come or not.
    pub fn shared_memory_mib(&self) -> Option<f64> {
        if self.kind != Kind::Postgres {
            return None;
        }
        let shown = psql(&self.stats_url, "SHOW shared_memory_size").ok()?;
        shown.trim().trim_end_matches("MB").parse().ok()
    }

    /// Stops the server, if this started it, and removes its directory.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.stop();
        }
    }
}

/// Where a registry's statistics are asked.
pub struct Stats {
    kind: Kind,
    url: String,
}

impl Stats {
    /// PostgreSQL's sessions now, other than the bench's own: what a pool in front of it
    /// holds, or what the instances hold without one. `None` for the other registries,
    /// or when PostgreSQL does not answer.
    pub fn server_connections(&self) -> Option<u64> {
        if self.kind != Kind::Postgres {
            return None;
        }
        let count = psql(
            &self.url,
            "SELECT count(*) FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
        .ok()?;
        count.trim().parse().ok()
    }
}

fn append(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The port of a loopback URL; anything else is refused.
fn port_of(url: &str) -> anyhow::Result<u16> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host_port = rest.split(['/', '?', ',']).next().unwrap_or_default();
    let Some((host, port)) = host_port.rsplit_once(':') else {
        bail!("{url}: no port");
    };
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        bail!("{url}: the fleet bench sends traffic to loopback only");
    }
    port.parse().with_context(|| format!("{url}: bad port"))
}

/// One plain-text exchange with a server on loopback: `request` sent, the whole answer read.
fn exchange(port: u16, request: &[u8]) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(ASK_TIMEOUT))?;
    stream.write_all(request)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// Every command's `calls` in `INFO commandstats` (less INFO's own), inline over RESP.
fn redis_commands(port: u16) -> anyhow::Result<u64> {
    let answer = exchange(port, b"INFO commandstats\r\nQUIT\r\n")?;
    Ok(answer
        .lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| {
            line.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum())
}

/// The gRPC calls etcd has handled (its HTTP gateway's calls go through gRPC too).
fn etcd_calls(port: u16) -> anyhow::Result<u64> {
    let answer = exchange(port, b"GET /metrics HTTP/1.0\r\nHost: etcd\r\n\r\n")?;
    let total = answer
        .lines()
        .filter(|line| line.starts_with("grpc_server_handled_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    Ok(total as u64)
}

/// The statements PostgreSQL has run in the database, less the bench's own questions.
fn postgres_statements(url: &str) -> anyhow::Result<u64> {
    let out = psql(
        url,
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
         WHERE query NOT LIKE '%pg_stat%' AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )?;
    out.trim()
        .parse()
        .with_context(|| format!("pg_stat_statements said {out:?}"))
}

/// Runs one statement with `psql`, as the URL's user, and answers its unaligned output.
pub fn psql(url: &str, statement: &str) -> anyhow::Result<String> {
    let output = Command::new(Path::new(PG_BIN).join("psql"))
        .args(["-XAtq", "-v", "ON_ERROR_STOP=1", url, "-c", statement])
        .output()
        .context("cannot run psql")?;
    if !output.status.success() {
        bail!("psql: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The packets ZooKeeper has received from its clients (requests and pings).
fn zookeeper_requests(port: u16) -> anyhow::Result<u64> {
    let answer = exchange(port, b"mntr")?;
    answer
        .lines()
        .find_map(|line| line.strip_prefix("zk_packets_received"))
        .and_then(|rest| rest.trim().parse().ok())
        .with_context(|| format!("mntr said no zk_packets_received: {answer:?}"))
}
