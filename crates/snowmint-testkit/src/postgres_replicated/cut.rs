//! The cut of a [`PostgresReplicated`](super::PostgresReplicated): the loopback address each
//! member serves its peer on, and the iptables rules that drop what goes to or comes from
//! those addresses, tagged `snowmint-testkit-<pid>-<n>` and removed when dropped.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::run_within;
use crate::program;

/// A loopback address for one member's peer: 127.x.y.z, from the test process's id and a
/// count, never in 127.0.0.0/16 (127.0.0.1 is every server's client address). Two
/// processes may pick the same one; their members' ports still differ, and the rules
/// match ports too.
pub(super) fn peer_address() -> Ipv4Addr {
    /// 127.1.0.0, the first address handed out.
    const FIRST: u32 = 0x7f01_0000;
    /// How many addresses follow it, staying below 127.255.0.0.
    const SPAN: u32 = 0x00fe_0000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let host = std::process::id().wrapping_mul(256).wrapping_add(n) % SPAN;
    Ipv4Addr::from(FIRST + host)
}

/// The iptables rules of one guard's cut, tagged `snowmint-testkit-<pid>-<n>`; removed
/// when dropped.
pub(super) struct Cut {
    pub(super) comment: String,
    iptables: PathBuf,
    /// The rules in place, each as `iptables -D INPUT` takes it.
    rules: Vec<Vec<String>>,
}

impl Cut {
    pub(super) fn new() -> Cut {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Cut {
            comment: format!("snowmint-testkit-{}-{n}", std::process::id()),
            iptables: PathBuf::new(),
            rules: Vec::new(),
        }
    }

    pub(super) fn is_on(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Drops every packet to or from each of `links` (address and port), or lets them
    /// through again.
    ///
    /// # Panics
    ///
    /// If iptables is missing or refuses (it needs root).
    #[track_caller]
    pub(super) fn set(&mut self, on: bool, links: &[(Ipv4Addr, u16)]) {
        if on && !self.is_on() {
            if self.iptables.as_os_str().is_empty() {
                self.iptables = program::find_on_path("iptables", "iptables");
            }
            for (address, port) in links {
                for (side, port_side) in [("-d", "--dport"), ("-s", "--sport")] {
                    let rule: Vec<String> = [
                        side,
                        &address.to_string(),
                        "-p",
                        "tcp",
                        port_side,
                        &port.to_string(),
                        "-m",
                        "comment",
                        "--comment",
                        &self.comment,
                        "-j",
                        "DROP",
                    ]
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                    if let Err(err) = self.iptables(&["-I", "INPUT", "1"], &rule) {
                        panic!("cannot cut the postgres replication link: {err}");
                    }
                    self.rules.push(rule);
                }
            }
        } else if !on {
            while let Some(rule) = self.rules.pop() {
                if let Err(err) = self.iptables(&["-D", "INPUT"], &rule) {
                    panic!("cannot mend the postgres replication link: {err}");
                }
            }
        }
    }

    /// Takes every rule away, as far as iptables lets it: for drops, which must not panic.
    pub(super) fn clear(&mut self) {
        while let Some(rule) = self.rules.pop() {
            let _ = self.iptables(&["-D", "INPUT"], &rule);
        }
    }

    fn iptables(&self, action: &[&str], rule: &[String]) -> Result<(), String> {
        /// How long to wait for the lock other iptables users hold.
        const LOCK_WAIT_S: &str = "5";
        let mut command = Command::new(&self.iptables);
        command.args(["-w", LOCK_WAIT_S]).args(action).args(rule);
        let output = run_within(command, Duration::from_secs(10))?;
        if output.status.success() {
            return Ok(());
        }
        Err(format!(
            "iptables {} {} failed ({}; the cuts need root): {}",
            action.join(" "),
            rule.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

impl Drop for Cut {
    fn drop(&mut self) {
        self.clear();
    }
}
