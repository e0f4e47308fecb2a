//! Network cuts between members of a cluster on one host: iptables rules that reset the
//! TCP traffic a member's user sends to a peer's port, and its peers' to its own.
//!
//! Every member runs as a user of its own (a bare uid, no account needed), so a rule on
//! the `OUTPUT` chain tells its traffic apart from the tests' and the servers' (which run
//! as the test's own user) by `-m owner --uid-owner`. A cut resets rather than drops: the
//! first packet either side sends after the cut resets its connection, so nothing sent
//! before the cut and still buffered arrives after it, and a reconnection is refused at
//! once. Each rule carries a comment naming this process and the cut, and is deleted when
//! the cut is mended or its guard drops.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The first uid handed to members: far above any account's, and below 2^31, past which
/// iptables' owner match was not seen to match.
const FIRST_UID: u32 = 100_000_000;

/// A uid no other member of this or another test process has: from the process id and a
/// count kept by the process.
pub(crate) fn member_uid() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 256;
    FIRST_UID + (std::process::id() % 4_000_000) * 256 + n
}

/// The rules in place; all deleted on drop.
#[derive(Default)]
pub(crate) struct Cuts {
    rules: Vec<Vec<String>>,
}

impl Cuts {
    /// Cuts the member run as `uid`, serving on `port`, from its peers, given as
    /// `(uid, port)`: neither side's TCP to the other's port gets through.
    #[track_caller]
    pub(crate) fn cut(&mut self, (uid, port): (u32, u16), peers: &[(u32, u16)]) {
        let tag = format!("snowmint-testkit-{}-{uid}", std::process::id());
        for &(peer_uid, peer_port) in peers {
            for (from, to) in [(uid, peer_port), (peer_uid, port)] {
                let rule: Vec<String> = [
                    "OUTPUT",
                    "-o",
                    "lo",
                    "-p",
                    "tcp",
                    "--dport",
                    &to.to_string(),
                    "-m",
                    "owner",
                    "--uid-owner",
                    &from.to_string(),
                    "-m",
                    "comment",
                    "--comment",
                    &tag,
                    "-j",
                    "REJECT",
                    "--reject-with",
                    "tcp-reset",
                ]
                .iter()
                .map(ToString::to_string)
                .collect();
                iptables("-I", &rule).unwrap_or_else(|err| panic!("{err}"));
                self.rules.push(rule);
            }
        }
    }

    /// Mends the cuts of the member run as `uid`.
    pub(crate) fn mend(&mut self, uid: u32) {
        let tag = format!("snowmint-testkit-{}-{uid}", std::process::id());
        self.rules.retain(|rule| {
            if rule.contains(&tag) {
                // A rule already gone is mended all the same.
                let _ = iptables("-D", rule);
                false
            } else {
                true
            }
        });
    }
}

impl Drop for Cuts {
    fn drop(&mut self) {
        for rule in self.rules.drain(..) {
            let _ = iptables("-D", &rule);
        }
    }
}

/// Runs `iptables -w <action> <rule>`.
fn iptables(action: &str, rule: &[String]) -> Result<(), String> {
    let out = Command::new("iptables")
        .args(["-w", action])
        .args(rule)
        .output()
        .map_err(|err| format!("cannot run iptables (Debian's iptables package): {err}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "iptables {action} {} failed: {}",
            rule.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
