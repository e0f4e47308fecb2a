//! `--identity-from ip`: a server names itself in the registry by its host's address, as seed
//! 004 keys its Redis assignment on datacenter + IP, and gets its old worker id back.
//!
//! The host is a network namespace this test makes (as root, with `ip netns`), holding one
//! end of a veth pair, `d0`, with an address other than loopback and the default route
//! through it; the other end stays down-stream in this namespace with no address. Redis and
//! the servers run inside the namespace, on its own loopback: no packet leaves it.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use snowmint_testkit::eventually;

use support::{Serve, serve_command, spawn_logged};

/// The namespace's address, in private space, on its end of the veth pair.
const ADDRESS: &str = "10.77.0.2";

/// A network namespace of this test's own, deleted (with what runs in it) on drop.
struct Host {
    name: String,
    redis: Option<Child>,
    redis_port: u16,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("`ip` runs (iproute2; scripts/setup installs it)");
    assert!(
        out.status.success(),
        "ip {}: {}; making a network namespace needs root",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Host {
    fn new() -> Host {
        static HOSTS: AtomicU32 = AtomicU32::new(0);
        let n = HOSTS.fetch_add(1, Ordering::SeqCst);
        let name = format!("snowmint-id-{}-{n}", std::process::id());
        ip(&["netns", "add", &name]);
        // At most 15 characters, as every interface name.
        let outside = format!("smid{}{n}", std::process::id() % 10_000_000);
        ip(&[
            "link", "add", &outside, "type", "veth", "peer", "name", "d0", "netns", &name,
        ]);
        let host = Host {
            name,
            redis: None,
            redis_port: 6390 + u16::try_from(n).unwrap(),
        };
        for args in [
            &["link", "set", "lo", "up"][..],
            &["addr", "add", &format!("{ADDRESS}/24"), "dev", "d0"],
            &["link", "set", "d0", "up"],
            &["route", "add", "default", "dev", "d0"],
        ] {
            let mut all = vec!["-n", host.name.as_str()];
            all.extend_from_slice(args);
            ip(&all);
        }
        host
    }

    /// `program args...` inside the namespace.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }

    fn start_redis(&mut self) -> String {
        let child = self
            .command("redis-server")
            .args(["--port", &self.redis_port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/setup installs it)");
        self.redis = Some(child);
        eventually(
            Duration::from_secs(20),
            "redis answering in the namespace",
            || {
                let pong = self
                    .command("redis-cli")
                    .args(["-p", &self.redis_port.to_string(), "ping"])
                    .output()
                    .expect("redis-cli runs");
                let said = String::from_utf8_lossy(&pong.stdout).trim().to_string();
                if said == "PONG" {
                    Ok(())
                } else {
                    Err(format!("{said:?}"))
                }
            },
        );
        format!("redis://127.0.0.1:{}", self.redis_port)
    }

    /// `snowmint serve` inside the namespace under the Redis lease, with `extra` flags.
    fn serve(&self, state: &std::path::Path, lease: &str, extra: &[&str]) -> Serve {
        let mut args = vec!["--grpc-addr", "off", "--datacenter", "1", "--lease", lease];
        args.extend_from_slice(extra);
        let inner = serve_command(state, &args);
        // The same command, run by `ip netns exec`, with the same environment.
        let mut cmd = self.command(inner.get_program().to_str().unwrap());
        cmd.args(inner.get_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        spawn_logged(cmd)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(mut redis) = self.redis.take() {
            let _ = redis.kill();
            let _ = redis.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}

/// Waits until the server has taken a worker id, and returns its acquisition log line.
fn acquired(serve: &mut Serve) -> String {
    eventually(Duration::from_secs(20), "a worker id acquired", || {
        let log = serve.logged();
        match log.lines().find(|l| l.contains("acquired worker id")) {
            Some(line) => Ok(line.to_string()),
            None => Err(format!("the log:\n{log}")),
        }
    })
}

fn field(line: &str, key: &str) -> String {
    line.split(&format!("{key}="))
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .trim_matches('"')
        .to_string()
}

#[test]
fn the_same_datacenter_and_address_get_their_worker_back() {
    let mut host = Host::new();
    let lease = host.start_redis();
    let state = tempfile::tempdir().unwrap();

    // Another instance takes the first worker id; the one named by its address, the next.
    let mut other = host.serve(state.path(), &lease, &["--identity", "other"]);
    assert_eq!(field(&acquired(&mut other), "worker"), "0");
    let mut by_ip = host.serve(state.path(), &lease, &["--identity-from", "ip"]);
    let line = acquired(&mut by_ip);
    assert_eq!(field(&line, "identity"), ADDRESS, "{line}");
    assert_eq!(
        (field(&line, "datacenter"), field(&line, "worker")),
        ("1".into(), "1".into())
    );
    assert!(by_ip.terminate().success());
    assert!(other.terminate().success());

    // Both gave their worker ids back. The address comes first this time, and still gets
    // worker 1: its old one, not the lowest free.
    let mut again = host.serve(state.path(), &lease, &["--identity-from", "ip:d0"]);
    let line = acquired(&mut again);
    assert_eq!(
        (field(&line, "identity"), field(&line, "worker")),
        (ADDRESS.into(), "1".into()),
        "{line}"
    );
    assert!(again.terminate().success());
}

#[test]
fn an_interface_without_an_address_is_named_in_the_error() {
    let mut host = Host::new();
    let lease = host.start_redis();
    let state = tempfile::tempdir().unwrap();
    let proto = serve_command(state.path(), &[]);
    for (source, expected) in [
        (
            "ip:nope0",
            "config key `identity_from`: \"ip:nope0\" names no address: there is no interface nope0 (interfaces: lo, d0)",
        ),
        (
            "ip:lo",
            "config key `identity_from`: \"ip:lo\" names no address: interface lo has no address but loopback or link-local ones",
        ),
    ] {
        let out = host
            .command(proto.get_program().to_str().unwrap())
            .args(proto.get_args())
            .args(["--lease", &lease, "--identity-from", source])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}
