//! A private network for a cluster's members, so that a member can be cut from its peers
//! at the network level while its clients still reach it.
//!
//! Each member runs in a network namespace of its own, with two links:
//!
//! ```text
//!  host  10.X.Y.(4i+1) ──veth── 10.X.Y.(4i+2)  member i  (clients)
//!  member i  10.X.Y.(128+i) ──veth── port m{i} of a bridge in the lan namespace  (peers)
//! ```
//!
//! The host reaches each member's client address over the member's own link, and the
//! members reach one another only over the bridge. Cutting member `i` takes its bridge port
//! down: its peers' packets to it, and its packets to them, go nowhere, as when a switch
//! port or a cable fails; the client link stays up. Nothing is routed through the host, so
//! the host's own firewall (Docker's FORWARD policy, say) plays no part, and no rule of the
//! host's is added.
//!
//! The namespaces are named `smk-etcd-{pid}-{n}-...`, after the test process; dropping the
//! [`Lan`] deletes them, and with them every link and the bridge. Namespaces left by a test
//! process that died without unwinding (its pid no longer runs) are deleted by the next
//! [`Lan::create`]. Creating namespaces needs root, as CI has.

use std::fs::{self, OpenOptions};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::program;

/// What every namespace of this kind is named after.
const PREFIX: &str = "smk-etcd-";
/// The second octet of the subnets tried (10.X.Y.0/24): far from Docker's 172.17/16 and
/// the 10.0-10.199 ranges most networks take first.
const SECOND_OCTETS: std::ops::RangeInclusive<u8> = 200..=249;
/// The most members one lan takes: a /30 client link each below .128, a peer address each
/// above it.
const MAX_MEMBERS: usize = 32;
/// How long another process may hold the lock file while it makes its lan: a few dozen
/// `ip` commands.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The namespaces, links and bridge of one cluster, deleted when dropped.
pub(crate) struct Lan {
    name: String,
    ip: PathBuf,
    subnet: [u8; 2],
    members: usize,
}

impl Lan {
    /// Creates the namespaces of `members` members and the bridge between them, on a /24
    /// of 10.200.0.0-10.249.255.255 that no address or route of the host overlaps.
    ///
    /// # Panics
    ///
    /// If `ip` (Debian's `iproute2`) is missing, a command fails (not root, say), or no
    /// subnet is free.
    #[track_caller]
    pub(crate) fn create(members: usize) -> Lan {
        assert!(
            members <= MAX_MEMBERS,
            "a lan takes at most {MAX_MEMBERS} members"
        );
        static COUNT: AtomicU32 = AtomicU32::new(0);
        // One lan is made at a time in this process, and, through the lock file, in every
        // process of the testkit, so that two do not pick the same free subnet.
        static MAKING: Mutex<()> = Mutex::new(());
        let _making = MAKING.lock().unwrap_or_else(PoisonError::into_inner);
        let _lock = LockFile::take();
        let ip = program::find_on_path("ip", "iproute2");
        delete_stale(&ip);
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let subnet = free_subnet(&ip);
        let lan = Lan {
            name,
            ip,
            subnet,
            members,
        };
        lan.build();
        lan
    }

    /// What its namespaces are named after: `smk-etcd-{pid}-{n}`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The network namespace member `i` runs in.
    pub(crate) fn namespace(&self, i: usize) -> String {
        format!("{}-m{i}", self.name)
    }

    /// The address member `i` serves its clients on, which the host reaches.
    pub(crate) fn client_ip(&self, i: usize) -> Ipv4Addr {
        self.address(4 * i + 2)
    }

    /// The address member `i` talks to its peers on, over the bridge.
    pub(crate) fn peer_ip(&self, i: usize) -> Ipv4Addr {
        self.address(128 + i)
    }

    /// The `ip` program, to run a member inside its namespace (`ip netns exec`).
    pub(crate) fn ip_program(&self) -> &std::path::Path {
        &self.ip
    }

    /// Takes member `i`'s bridge port down (`cut`) or up again.
    #[track_caller]
    pub(crate) fn cut(&self, i: usize, cut: bool) {
        let state = if cut { "down" } else { "up" };
        self.run(&["-n", &self.lan(), "link", "set", &format!("m{i}"), state]);
    }

    fn address(&self, host: usize) -> Ipv4Addr {
        let [x, y] = self.subnet;
        Ipv4Addr::new(
            10,
            x,
            y,
            u8::try_from(host).expect("a host number below 256"),
        )
    }

    fn lan(&self) -> String {
        format!("{}-lan", self.name)
    }

    /// The host's end of member `i`'s client link: at most 15 bytes, as Linux wants.
    fn host_link(&self, i: usize) -> String {
        let [x, y] = self.subnet;
        format!("smk{x:02x}{y:02x}c{i}")
    }

    #[track_caller]
    fn build(&self) {
        let lan = self.lan();
        self.run(&["netns", "add", &lan]);
        self.run(&["-n", &lan, "link", "add", "br0", "type", "bridge"]);
        self.run(&["-n", &lan, "link", "set", "br0", "up"]);
        for i in 0..self.members {
            let (ns, host) = (self.namespace(i), self.host_link(i));
            let host_ip = format!("{}/30", self.address(4 * i + 1));
            let client = format!("{}/30", self.client_ip(i));
            let peer = format!("{}/25", self.peer_ip(i));
            let port = format!("m{i}");
            self.run(&["netns", "add", &ns]);
            self.run(&["-n", &ns, "link", "set", "lo", "up"]);
            self.run(&[
                "link", "add", &host, "type", "veth", "peer", "name", "cli", "netns", &ns,
            ]);
            self.run(&["addr", "add", &host_ip, "dev", &host]);
            self.run(&["link", "set", &host, "up"]);
            self.run(&["-n", &ns, "addr", "add", &client, "dev", "cli"]);
            self.run(&["-n", &ns, "link", "set", "cli", "up"]);
            self.run(&[
                "-n", &lan, "link", "add", &port, "type", "veth", "peer", "name", "peer", "netns",
                &ns,
            ]);
            self.run(&["-n", &lan, "link", "set", &port, "master", "br0", "up"]);
            self.run(&["-n", &ns, "addr", "add", &peer, "dev", "peer"]);
            self.run(&["-n", &ns, "link", "set", "peer", "up"]);
        }
    }

    #[track_caller]
    fn run(&self, args: &[&str]) {
        if let Err(err) = run(&self.ip, args) {
            panic!("{err}");
        }
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        // Deleting a namespace deletes its links, and a veth's other end with it.
        for ns in (0..self.members)
            .map(|i| self.namespace(i))
            .chain([self.lan()])
        {
            if let Err(err) = run(&self.ip, &["netns", "del", &ns]) {
                eprintln!("snowmint-testkit: {err}");
            }
        }
    }
}

/// Runs `ip args`; the error quotes the command and what it printed.
fn run(ip: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new(ip)
        .args(args)
        .output()
        .map_err(|err| format!("cannot run {}: {err}", ip.display()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Deletes the namespaces of test processes that are gone.
fn delete_stale(ip: &std::path::Path) {
    let Ok(list) = run(ip, &["netns", "list"]) else {
        return;
    };
    for name in list
        .lines()
        .filter_map(|line| line.split_whitespace().next())
    {
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run(ip, &["netns", "del", name]);
        }
    }
}

/// A /24 of 10.200-249.x that overlaps no route of the host (its own addresses included),
/// starting from one of this process's own.
#[track_caller]
fn free_subnet(ip: &std::path::Path) -> [u8; 2] {
    let routes =
        run(ip, &["-4", "route", "show", "table", "all"]).unwrap_or_else(|err| panic!("{err}"));
    let taken: Vec<(u32, u32)> = routes
        .lines()
        .filter_map(|line| {
            let first = line
                .split_whitespace()
                .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))?;
            let (address, length) = first.split_once('/').unwrap_or((first, "32"));
            let address: Ipv4Addr = address.parse().ok()?;
            let length: u32 = length.parse().ok()?;
            (length > 0).then_some((u32::from(address), length))
        })
        .collect();
    let overlaps = |net: u32| {
        taken.iter().any(|&(address, length)| {
            let common = length.min(24);
            let mask = u32::MAX << (32 - common);
            address & mask == net & mask
        })
    };
    let count = u32::from(SECOND_OCTETS.end() - SECOND_OCTETS.start() + 1) * 256;
    let start = std::process::id().wrapping_mul(2_654_435_761) % count;
    (0..count)
        .map(|k| (start + k) % count)
        .map(|k| {
            let x = SECOND_OCTETS.start() + u8::try_from(k / 256).expect("below 50");
            let y = u8::try_from(k % 256).expect("below 256");
            [x, y]
        })
        .find(|[x, y]| !overlaps(u32::from(Ipv4Addr::new(10, *x, *y, 0))))
        .expect("no free /24 in 10.200.0.0-10.249.255.255 for a test lan")
}

/// An exclusive lock on a file every testkit process takes while it makes a lan.
struct LockFile {
    _file: fs::File,
}

impl LockFile {
    #[track_caller]
    fn take() -> LockFile {
        let path = std::env::temp_dir().join("snowmint-testkit-lan.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|err| panic!("cannot open {}: {err}", path.display()));
        let deadline = Instant::now() + LOCK_TIMEOUT;
        loop {
            // SAFETY: flock(2) on a descriptor this function owns; no memory is involved.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return LockFile { _file: file };
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::WouldBlock || Instant::now() >= deadline {
                panic!("cannot lock {}: {err}", path.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
