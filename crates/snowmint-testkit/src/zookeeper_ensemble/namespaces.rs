//! A network namespace per ensemble member, joined to the host by a veth pair: the host
//! routes between the pairs, so the members' own traffic (quorum, election) is forwarded
//! by the host, whereas a client on the host reaches a member's address directly. A cut
//! drops what the host forwards to and from one member, and nothing else: the member's
//! clients stay connected, its peers no longer hear it.
//!
//! Everything is named after the test process and the guard (`smzk-PID-N-I` for the
//! namespaces, an iptables comment `snowmint-testkit-zk-PID-N`), removed when the guard
//! drops, and swept by the next guard when the process that made it died without
//! unwinding.

use std::fs::{self, File};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// What every namespace's name starts with.
const NETNS_PREFIX: &str = "smzk-";
/// What every iptables comment of ours starts with.
const TAG_PREFIX: &str = "snowmint-testkit-zk-";
/// Where `ip netns` keeps the namespaces it names.
const NETNS_DIR: &str = "/var/run/netns";
/// The second octet of the /24 the members' addresses come from: `10.X.Y.0/24`, with X
/// in this range and Y chosen free, away from the ranges Docker and the host use.
const OCTETS: std::ops::Range<u8> = 200..250;
/// The third octets tried before giving up: each is one look at the host's routes.
const SUBNET_ATTEMPTS: u32 = 256;

/// The namespaces, veth pairs and iptables rules of one ensemble; removed on drop.
pub(super) struct Namespaces {
    tag: String,
    /// `10.X.Y`: member `i`'s pair is `10.X.Y.(4i+1)` (host) and `10.X.Y.(4i+2)` (member).
    subnet: [u8; 3],
    links: Vec<Link>,
    /// The iptables rules in force (FORWARD chain), as their specs, to delete on drop.
    rules: Vec<Vec<String>>,
}

/// One member's namespace and the host's end of its veth pair.
struct Link {
    netns: String,
    host_if: String,
    /// The namespace, held open so a member's process can enter it with setns(2).
    handle: Option<File>,
}

impl Namespaces {
    /// Makes `count` namespaces, each with its member's address, and the rules that let
    /// the host forward between them (Docker sets the FORWARD policy to DROP).
    ///
    /// # Panics
    ///
    /// When `ip` or `iptables` fails (the message quotes it), as when not run as root;
    /// whatever was made is removed first.
    #[track_caller]
    pub(super) fn create(count: usize) -> Namespaces {
        static GUARDS: AtomicU32 = AtomicU32::new(0);
        sweep();
        let (pid, n) = (std::process::id(), GUARDS.fetch_add(1, Ordering::Relaxed));
        let mut made = Namespaces {
            tag: format!("{TAG_PREFIX}{pid}-{n}"),
            subnet: free_subnet(pid, n),
            links: Vec::new(),
            rules: Vec::new(),
        };
        for i in 0..count {
            let link = Link {
                netns: format!("{NETNS_PREFIX}{pid}-{n}-{i}"),
                // An interface name has at most 15 bytes.
                host_if: format!("zk{pid:x}.{n:x}{i}"),
                handle: None,
            };
            let (netns, host_if) = (link.netns.clone(), link.host_if.clone());
            made.links.push(link);
            let (host, member) = (made.host_address(i), made.address(i));
            ip(&["netns", "add", &netns]);
            ip(&[
                "link", "add", &host_if, "type", "veth", "peer", "name", "eth0", "netns", &netns,
            ]);
            ip(&["addr", "add", &format!("{host}/30"), "dev", &host_if]);
            ip(&["link", "set", &host_if, "up"]);
            ip(&[
                "-n",
                &netns,
                "addr",
                "add",
                &format!("{member}/30"),
                "dev",
                "eth0",
            ]);
            ip(&["-n", &netns, "link", "set", "eth0", "up"]);
            ip(&["-n", &netns, "link", "set", "lo", "up"]);
            ip(&[
                "-n",
                &netns,
                "route",
                "add",
                "default",
                "via",
                &host.to_string(),
            ]);
            let path = format!("{NETNS_DIR}/{netns}");
            let handle =
                File::open(&path).unwrap_or_else(|err| panic!("cannot open {path}: {err}"));
            made.links[i].handle = Some(handle);
        }
        let subnet = format!("{}.0/24", made.prefix());
        made.add_rule(&["-s", &subnet, "-d", &subnet, "-j", "ACCEPT"]);
        made
    }

    /// Member `i`'s address, in its namespace.
    pub(super) fn address(&self, i: usize) -> Ipv4Addr {
        self.pair_address(i, 2)
    }

    /// The host's address on member `i`'s pair.
    fn host_address(&self, i: usize) -> Ipv4Addr {
        self.pair_address(i, 1)
    }

    /// Address `end` (1: the host's, 2: the member's) of member `i`'s /30.
    fn pair_address(&self, i: usize, end: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        let last = u8::try_from(4 * i + end).expect("at most 63 members");
        Ipv4Addr::new(a, b, c, last)
    }

    fn prefix(&self) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}")
    }

    /// A handle on member `i`'s namespace, for setns(2) in its process before it execs;
    /// valid while this lives.
    pub(super) fn handle(&self, i: usize) -> RawFd {
        self.links[i]
            .handle
            .as_ref()
            .expect("opened when made")
            .as_raw_fd()
    }

    /// Drops everything the host forwards to or from member `i` (`cut`), or lets it
    /// through again. Placed first in the FORWARD chain, ahead of the rule that accepts
    /// the members' traffic.
    #[track_caller]
    pub(super) fn cut(&mut self, i: usize, cut: bool) {
        let host_if = self.links[i].host_if.clone();
        for direction in ["-i", "-o"] {
            let spec = [direction, host_if.as_str(), "-j", "DROP"];
            if cut {
                self.add_rule(&spec);
            } else {
                let tagged = self.tagged(&spec);
                if let Some(at) = self.rules.iter().position(|rule| *rule == tagged) {
                    delete_rule(&self.rules.remove(at));
                }
            }
        }
    }

    /// Inserts `spec` at the top of the FORWARD chain, with this guard's comment.
    #[track_caller]
    fn add_rule(&mut self, spec: &[&str]) {
        let tagged = self.tagged(spec);
        if self.rules.contains(&tagged) {
            return;
        }
        let mut args = vec!["-w", "-I", "FORWARD", "1"];
        args.extend(tagged.iter().map(String::as_str));
        run("iptables", &args);
        self.rules.push(tagged);
    }

    fn tagged(&self, spec: &[&str]) -> Vec<String> {
        let mut tagged: Vec<String> = spec.iter().map(ToString::to_string).collect();
        tagged.extend(["-m", "comment", "--comment", &self.tag].map(str::to_string));
        tagged
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for rule in self.rules.drain(..) {
            delete_rule(&rule);
        }
        // Deleting a namespace destroys its end of the veth pair, and with it the host's.
        for link in self.links.drain(..) {
            drop(link.handle);
            let _ = Command::new("ip")
                .args(["netns", "del", &link.netns])
                .output();
        }
    }
}

/// Deletes the FORWARD rule of `spec`, if it is there.
fn delete_rule(spec: &[String]) {
    let _ = Command::new("iptables")
        .args(["-w", "-D", "FORWARD"])
        .args(spec)
        .output();
}

/// A `10.X.Y` with no route on the host yet, so it is no other guard's nor the host's.
#[track_caller]
fn free_subnet(pid: u32, n: u32) -> [u8; 3] {
    let routes = Command::new("ip")
        .args(["-4", "route", "show", "table", "all"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_else(|err| panic!("cannot run ip: {err}; the ensemble needs iproute2"));
    let spread = u32::from(OCTETS.end - OCTETS.start);
    let second = OCTETS.start + u8::try_from(pid % spread).expect("below 50");
    for attempt in 0..SUBNET_ATTEMPTS {
        let third = u8::try_from((pid / spread + n * 7 + attempt) % 256).expect("below 256");
        if !routes.contains(&format!("10.{second}.{third}.")) {
            return [10, second, third];
        }
    }
    panic!("no free 10.{second}.Y.0/24 on this host for the ensemble's namespaces")
}

/// Removes the namespaces and iptables rules of earlier test processes that died without
/// removing theirs (killed outright); those of live processes are left alone.
fn sweep() {
    let dead = |pid: &str| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(entries) = fs::read_dir(NETNS_DIR) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix(NETNS_PREFIX)
                && rest.split('-').next().is_some_and(dead)
            {
                let _ = Command::new("ip").args(["netns", "del", &name]).output();
            }
        }
    }
    let Ok(out) = Command::new("iptables")
        .args(["-w", "-S", "FORWARD"])
        .output()
    else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let stale = words.iter().any(|word| {
            word.strip_prefix(TAG_PREFIX)
                .and_then(|rest| rest.split('-').next())
                .is_some_and(dead)
        });
        if stale && words.first() == Some(&"-A") {
            let _ = Command::new("iptables")
                .args(["-w", "-D"])
                .args(&words[1..])
                .output();
        }
    }
}

/// Runs `ip ARGS`.
#[track_caller]
fn ip(args: &[&str]) {
    run("ip", args);
}

/// Runs `program ARGS`, or panics with what it said.
#[track_caller]
fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {program}: {err}; the ensemble needs it"));
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}): {}; the ensemble's namespaces need root",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
}
