//! The registry the fleet shares (one server, a cluster, or the `file` registry's directory),
//! and the poller that reads its leases from the registry itself: Redis's worker keys (whose
//! values name the holder, `identity/pid/nonce`) on the primary the Sentinels name, etcd's
//! worker keys through its JSON gateway, PostgreSQL's `snowmint_workers` rows with `psql`,
//! ZooKeeper's worker nodes over a session of the poller's own, and for the `file` registry
//! the kernel's table of locks on its worker files (`/proc/locks`).

mod backup;
mod blockers;
mod zk;

pub use backup::{Backup, restart_empty};
pub use blockers::Blockers;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use snowmint_testkit::{Cluster, Server};

use super::checker::LeasePoll;
use super::fleet::{LEASE_MARGIN, LEASE_TTL, RESERVE_AHEAD};
use super::{Epoch, Event};

/// How often the leases are read.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// Which registry the fleet shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A real `redis-server`.
    Redis,
    /// A real `etcd`.
    Etcd,
    /// A real PostgreSQL.
    Postgres,
    /// A real ZooKeeper.
    Zookeeper,
    /// `file:DIR`, a directory of locked files shared by the fleet.
    File,
}

impl Kind {
    /// The lease's reach on this registry, as the servers count it: how far past the last
    /// instant a holder reached the registry it may issue ids, whatever its clock's offset
    /// within the margin: the TTL and the margin where leases expire; for the `file`
    /// registry, what its holders issue for past their last check of the lock file, and
    /// the margin (the servers borrow no ticks ahead). A lease taken from a registry
    /// restored at `t` starts after `t` and this.
    pub fn reach(self) -> Duration {
        self.issues_for() + LEASE_MARGIN
    }

    /// How far past the last instant a holder reached the registry it can issue ids on the
    /// campaign's machine, where every unstepped clock is one: to its fence, the TTL less
    /// the margin, where leases expire; for `file`, to its fence (what a check of its lock
    /// file vouches for) or its reservation, whichever ends first, since a reservation is
    /// made only after a check. Past that no id of a holder the registry forgot can be met
    /// again.
    pub fn issues_for(self) -> Duration {
        match self {
            Kind::File => RESERVE_AHEAD.min(snowmint_lease::FileRegistry::CONFIRMS_FOR),
            _ => LEASE_TTL - LEASE_MARGIN,
        }
    }
}

/// The running registry: a server process, a cluster of them, or a directory.
pub enum Registry {
    /// A server the campaign can kill, restart and stop.
    Process(Kind, Box<dyn Server>),
    /// Members the campaign can kill, fail over and cut off, one of them the primary.
    Cluster(Kind, Box<dyn Cluster>),
    /// The `file` registry's directory.
    Dir(PathBuf),
}

impl Registry {
    /// Starts the registry of `kind`, as a cluster if `clustered`, in its secured form if
    /// `secured` names the host names and addresses its certificate is for; `dir` holds
    /// the `file` registry's files.
    pub fn start(
        kind: Kind,
        clustered: bool,
        secured: Option<Vec<String>>,
        dir: &Path,
    ) -> anyhow::Result<Registry> {
        if let Some(names) = secured {
            anyhow::ensure!(
                kind == Kind::Redis && !clustered,
                "--secured runs a single Redis: give --registry redis, without --cluster"
            );
            // The server keeps copies of the files it needs: the authority may go.
            let pki = snowmint_testkit::Pki::new();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let redis = snowmint_testkit::Redis::start_secured_with(&pki, &pki.server_for(&names));
            return Ok(Registry::Process(kind, Box::new(redis)));
        }
        if clustered {
            return Ok(Registry::Cluster(kind, start_cluster(kind)?));
        }
        Ok(match kind {
            Kind::Redis => Registry::Process(kind, Box::new(snowmint_testkit::Redis::start())),
            Kind::Etcd => Registry::Process(kind, Box::new(snowmint_testkit::Etcd::start())),
            Kind::Postgres => {
                Registry::Process(kind, Box::new(snowmint_testkit::Postgres::start()))
            }
            Kind::Zookeeper => {
                Registry::Process(kind, Box::new(snowmint_testkit::ZooKeeper::start()))
            }
            Kind::File => {
                let dir = dir.join("registry");
                std::fs::create_dir_all(&dir)?;
                Registry::Dir(dir)
            }
        })
    }

    /// The URL `snowmint serve --lease` takes.
    pub fn url(&self) -> String {
        match self {
            Registry::Process(_, server) => server.url(),
            Registry::Cluster(_, cluster) => cluster.url(),
            Registry::Dir(dir) => format!("file:{}", dir.display()),
        }
    }

    /// The registry's port on 127.0.0.1, for a relay; none for the `file` registry, nor
    /// for a cluster (the servers reach its members straight).
    pub fn port(&self) -> Option<u16> {
        if let Registry::Cluster(..) = self {
            return None;
        }
        let url = self.url();
        let rest = url.split("127.0.0.1:").nth(1)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }

    /// Which registry it is.
    pub fn kind(&self) -> Kind {
        match self {
            Registry::Process(kind, _) | Registry::Cluster(kind, _) => *kind,
            Registry::Dir(_) => Kind::File,
        }
    }

    /// The process, for faults that need one.
    pub fn process(&mut self) -> Option<&mut Box<dyn Server>> {
        match self {
            Registry::Process(_, server) => Some(server),
            _ => None,
        }
    }

    /// The cluster, to read.
    pub fn as_cluster(&self) -> Option<&dyn Cluster> {
        match self {
            Registry::Cluster(_, cluster) => Some(cluster.as_ref()),
            _ => None,
        }
    }

    /// The cluster, for faults that need one.
    pub fn cluster(&mut self) -> Option<&mut Box<dyn Cluster>> {
        match self {
            Registry::Cluster(_, cluster) => Some(cluster),
            _ => None,
        }
    }
}

/// Starts `kind` as a cluster: a Redis primary, its replica and three Sentinels; three
/// etcd members; a three-node ZooKeeper ensemble; a PostgreSQL primary and its standby.
fn start_cluster(kind: Kind) -> anyhow::Result<Box<dyn Cluster>> {
    Ok(match kind {
        Kind::Redis => Box::new(snowmint_testkit::RedisReplicated::start()),
        Kind::Etcd => Box::new(snowmint_testkit::EtcdCluster::start()),
        Kind::Postgres => Box::new(snowmint_testkit::PostgresReplicated::start()),
        Kind::Zookeeper => Box::new(snowmint_testkit::ZooKeeperEnsemble::start()),
        Kind::File => anyhow::bail!("the file registry is a directory, never a cluster"),
    })
}

/// Reads every lease of datacenter 0..32 once.
enum Reader {
    Redis {
        client: Box<redis::Client>,
        connection: Option<redis::Connection>,
    },
    /// The Redis primary the Sentinels on these ports name, asked before every read, on a
    /// connection to it that is kept while they name it.
    Sentinels {
        sentinels: Vec<u16>,
        primary: Option<(u16, redis::Connection)>,
    },
    Locks(PathBuf),
    /// etcd's JSON gateway at these addresses, the first that answers.
    Etcd(Vec<SocketAddr>),
    /// PostgreSQL, read with `psql` at this URL.
    Postgres(String),
    /// ZooKeeper at these addresses, the first that takes a session of the reader's own.
    Zookeeper(Vec<SocketAddr>, Option<zk::Session>),
    /// No reader for this registry: the lease check is reported as not done.
    None,
}

impl Reader {
    fn new(kind: Kind, registry: &Registry) -> anyhow::Result<Reader> {
        if let Registry::Cluster(_, cluster) = registry {
            let members = (0..cluster.members()).map(|i| cluster.address(i)).collect();
            return Ok(match kind {
                Kind::Redis => Reader::Sentinels {
                    sentinels: ports_in(&cluster.url()),
                    primary: None,
                },
                Kind::Etcd => Reader::Etcd(members),
                Kind::Postgres => Reader::Postgres(cluster.url()),
                Kind::Zookeeper => Reader::Zookeeper(members, None),
                Kind::File => Reader::None,
            });
        }
        Ok(match (kind, registry) {
            (Kind::Redis, Registry::Process(_, server)) => Reader::Redis {
                client: Box::new(match server.admin() {
                    // A secured Redis: its admin, over TLS.
                    Some((url, ca)) => {
                        let root_cert = std::fs::read(&ca)
                            .with_context(|| format!("the CA {}", ca.display()))?;
                        let certificates = redis::TlsCertificates {
                            client_tls: None,
                            root_cert: Some(root_cert),
                        };
                        redis::Client::build_with_tls(url, certificates)
                            .context("the secured Redis's admin URL")?
                    }
                    None => redis::Client::open(server.url()).context("the Redis URL")?,
                }),
                connection: None,
            },
            (Kind::File, Registry::Dir(dir)) => Reader::Locks(dir.clone()),
            (Kind::Etcd, _) => {
                Reader::Etcd(vec![loopback(registry.port().context("etcd's port")?)])
            }
            (Kind::Postgres, _) => Reader::Postgres(registry.url()),
            (Kind::Zookeeper, _) => Reader::Zookeeper(
                vec![loopback(registry.port().context("ZooKeeper's port")?)],
                None,
            ),
            _ => Reader::None,
        })
    }

    fn read(&mut self) -> anyhow::Result<Option<Vec<(u16, u32)>>> {
        match self {
            Reader::Redis { client, connection } => {
                let conn = match connection {
                    Some(conn) => conn,
                    None => {
                        let conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
                        conn.set_read_timeout(Some(Duration::from_secs(1)))?;
                        conn.set_write_timeout(Some(Duration::from_secs(1)))?;
                        connection.insert(conn)
                    }
                };
                let read = read_redis(conn);
                if read.is_err() {
                    *connection = None;
                }
                read.map(Some)
            }
            Reader::Sentinels { sentinels, primary } => {
                let port = named_primary(sentinels)?;
                let conn = match primary {
                    Some((at, conn)) if *at == port => conn,
                    _ => {
                        let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
                        let conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
                        conn.set_read_timeout(Some(Duration::from_secs(1)))?;
                        conn.set_write_timeout(Some(Duration::from_secs(1)))?;
                        &mut primary.insert((port, conn)).1
                    }
                };
                let read = read_redis(conn);
                if read.is_err() {
                    *primary = None;
                }
                read.map(Some)
            }
            Reader::Locks(dir) => read_locks(dir).map(Some),
            Reader::Etcd(ports) => first_of(ports, read_etcd).map(Some),
            Reader::Postgres(url) => read_postgres(url).map(Some),
            Reader::Zookeeper(ports, session) => {
                let live = match session {
                    Some(live) => live,
                    None => session.insert(first_of(ports, zk::Session::connect)?),
                };
                let read = live.workers();
                if read.is_err() {
                    *session = None;
                }
                read.map(Some)
            }
            Reader::None => Ok(None),
        }
    }
}

/// 127.0.0.1:`port`.
fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// What `read` answers on the first of `places` where it succeeds, or the last error.
fn first_of<P: Copy, T>(
    places: &[P],
    mut read: impl FnMut(P) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut last = anyhow::anyhow!("no member to read");
    for &place in places {
        match read(place) {
            Ok(value) => return Ok(value),
            Err(err) => last = err,
        }
    }
    Err(last)
}

/// The 127.0.0.1 ports a URL names (`redis+sentinel://127.0.0.1:P1,127.0.0.1:P2/...`).
fn ports_in(url: &str) -> Vec<u16> {
    url.split("127.0.0.1:")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The port of the Redis primary the first Sentinel that answers names.
fn named_primary(sentinels: &[u16]) -> anyhow::Result<u16> {
    first_of(sentinels, |port| {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
        conn.set_read_timeout(Some(Duration::from_secs(1)))?;
        let address: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(snowmint_testkit::PRIMARY_NAME)
            .query(&mut conn)?;
        address
            .get(1)
            .and_then(|p| p.parse().ok())
            .context("the Sentinel names no primary")
    })
}

/// `snowmint:NS:dcD:wW` keys hold `identity/pid/nonce`.
fn read_redis(conn: &mut redis::Connection) -> anyhow::Result<Vec<(u16, u32)>> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("snowmint:*:dc*:w*").query(conn)?;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(conn)?;
    let mut held = Vec::new();
    for (key, value) in keys.iter().zip(values) {
        let (Some(worker), Some(holder)) = (worker_in_key(key, ":dc", ":w"), value) else {
            continue;
        };
        if let Some(pid) = holder.rsplit('/').nth(1).and_then(|p| p.parse().ok()) {
            held.push((worker, pid));
        }
    }
    Ok(held)
}

/// `datacenter * 32 + worker` from a name ending in `<dc_tag>D<w_tag>W`.
fn worker_in_key(name: &str, dc_tag: &str, w_tag: &str) -> Option<u16> {
    let after_dc = &name[name.rfind(dc_tag)? + dc_tag.len()..];
    let (dc, worker) = after_dc.split_once(w_tag)?;
    if !worker.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let dc: u16 = dc.parse().ok()?;
    let worker: u16 = worker.parse().ok()?;
    (dc < 32 && worker < 32).then_some(dc * 32 + worker)
}

/// etcd: `/snowmint/NS/dcD/wW` holds the holder's name, under an etcd lease that ends it;
/// read through the JSON gateway (`POST /v3/kv/range`) on a connection of its own, in
/// HTTP/1.0 so that the body comes whole, never chunked.
fn read_etcd(addr: SocketAddr) -> anyhow::Result<Vec<(u16, u32)>> {
    use base64::Engine;
    use std::io::{Read, Write};
    let b64 = base64::engine::general_purpose::STANDARD;
    // Every key from `/snowmint/` up to `/snowmint0`, the next byte after `/`.
    let body = serde_json::json!({
        "key": b64.encode("/snowmint/"),
        "range_end": b64.encode("/snowmint0"),
    })
    .to_string();
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    write!(
        stream,
        "POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, json) = response
        .split_once("\r\n\r\n")
        .context("no end of headers")?;
    anyhow::ensure!(
        head.split_whitespace().nth(1) == Some("200"),
        "etcd answered {head:?}"
    );
    let value: serde_json::Value = serde_json::from_str(json.trim())?;
    let mut held = Vec::new();
    for kv in value["kvs"].as_array().map_or(&[][..], Vec::as_slice) {
        let decode = |field: &str| -> Option<String> {
            let bytes = b64.decode(kv[field].as_str()?).ok()?;
            String::from_utf8(bytes).ok()
        };
        let (Some(key), Some(holder)) = (decode("key"), decode("value")) else {
            continue;
        };
        if let (Some(worker), Some(pid)) = (
            worker_in_key(&key, "/dc", "/w"),
            holder.rsplit('/').nth(1).and_then(|p| p.parse().ok()),
        ) {
            held.push((worker, pid));
        }
    }
    Ok(held)
}

/// PostgreSQL: the rows of `snowmint_workers` with a holder whose lease has not ended by
/// the database's clock, read with `psql` (killed after 2 s, for a stopped server).
fn read_postgres(url: &str) -> anyhow::Result<Vec<(u16, u32)>> {
    let out = std::process::Command::new("timeout")
        .args(["2", "psql", "-X", "-A", "-t", "-F", " ", url, "-c"])
        .arg(
            "SELECT datacenter, worker, holder FROM snowmint_workers \
             WHERE holder IS NOT NULL AND expires_at > clock_timestamp()",
        )
        .env("PGCONNECT_TIMEOUT", "1")
        .output()
        .context("cannot run psql")?;
    anyhow::ensure!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let mut held = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut fields = line.split(' ');
        let (Some(dc), Some(worker), Some(holder)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(dc), Ok(worker)) = (dc.parse::<u16>(), worker.parse::<u16>()) else {
            continue;
        };
        if let Some(pid) = holder.rsplit('/').nth(1).and_then(|p| p.parse().ok())
            && dc < 32
            && worker < 32
        {
            held.push((dc * 32 + worker, pid));
        }
    }
    Ok(held)
}

/// The `file` registry: `<ns>-dcD-wW.worker` files, held while their `.worker.lock`
/// sibling is locked. The kernel's lock table names the locking pid and the file's inode.
fn read_locks(dir: &Path) -> anyhow::Result<Vec<(u16, u32)>> {
    let mut by_inode = HashMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix(".worker.lock")
            .or_else(|| name.strip_suffix(".worker"))
            && let Some(worker) = worker_in_key(stem, "-dc", "-w")
        {
            by_inode.insert(entry.metadata()?.ino(), worker);
        }
    }
    let table = std::fs::read_to_string("/proc/locks")?;
    let mut held = Vec::new();
    for line in table.lines() {
        // `1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF`
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || fields.get(1) == Some(&"->") {
            continue;
        }
        let (Ok(pid), Some(inode)) = (
            fields[4].parse::<u32>(),
            fields[5]
                .rsplit(':')
                .next()
                .and_then(|i| i.parse::<u64>().ok()),
        ) else {
            continue;
        };
        if let Some(&worker) = by_inode.get(&inode) {
            held.push((worker, pid));
        }
    }
    Ok(held)
}

/// Each held worker id with its holder's pid, read once from the registry itself.
pub fn holders(registry: &Registry) -> anyhow::Result<Vec<(u16, u32)>> {
    let mut reader = Reader::new(registry.kind(), registry)?;
    reader
        .read()?
        .context("no reader of this registry's leases")
}

/// Polls the leases every [`POLL_EVERY`] until `stop`; says whether the registry could be
/// read at all (false: the lease check is not done, and the report says so).
pub fn spawn_poller(
    kind: Kind,
    registry: &Registry,
    epoch: Epoch,
    events: std::sync::mpsc::Sender<Event>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<(bool, std::thread::JoinHandle<()>)> {
    let mut reader = Reader::new(kind, registry)?;
    let readable = !matches!(reader, Reader::None);
    let handle = std::thread::Builder::new()
        .name("lease-poller".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let start = epoch.now();
                match reader.read() {
                    Ok(Some(held)) => {
                        let end = epoch.now();
                        let _ = events.send(Event::Lease(LeasePoll { start, end, held }));
                    }
                    Ok(None) => return,
                    Err(_) => {
                        let _ = events.send(Event::PollError);
                    }
                }
                std::thread::sleep(POLL_EVERY);
            }
        })?;
    Ok((readable, handle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_keys_and_files_are_read() {
        assert_eq!(
            worker_in_key("snowmint:twitter-1288834974657:dc0:w7", ":dc", ":w"),
            Some(7)
        );
        assert_eq!(
            worker_in_key("twitter-1288834974657-dc1-w31", "-dc", "-w"),
            Some(63)
        );
        assert_eq!(worker_in_key("snowmint:x:dc0:hwm", ":dc", ":w"), None);
        assert_eq!(worker_in_key("/snowmint/x/dc0/w3", "/dc", "/w"), Some(3));
        assert_eq!(worker_in_key("/snowmint/x/dc0/w3/hwm", "/dc", "/w"), None);
    }
}
