//! The partitioned server's network: a namespace of its own, joined to this one by a veth
//! pair. The server reaches the registry through a relay on the host end of the pair (the
//! registries listen on 127.0.0.1 only), so `ip link set ... down` on that end cuts the
//! server from its registry, and `tc ... tbf` throttles it. Clients reach the server
//! through relays on this namespace's 127.0.0.1 whose far sockets are made inside the
//! namespace, on its own loopback: they never cross the veth, and the cut leaves them be.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::sys::{Cleanup, Undo, run};

/// How long one connection attempt through a relay may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

type ConnectRequest = (
    SocketAddr,
    oneshot::Sender<std::io::Result<std::net::TcpStream>>,
);

/// A network namespace with one end of a veth pair; the other end is here.
pub struct Netns {
    /// The namespace's name, for `ip netns exec`.
    pub name: String,
    /// The end of the pair in this namespace: the one cut and throttled.
    pub host_link: String,
    /// Its address, where the registry relay listens.
    pub host_addr: Ipv4Addr,
    connect: mpsc::Sender<ConnectRequest>,
}

impl Netns {
    /// Makes the namespace and the pair, with addresses in `10.213.N.0/30`; fails (never
    /// skips) when it cannot.
    pub fn create(cleanup: &Cleanup) -> anyhow::Result<Netns> {
        let pid = std::process::id();
        let name = format!("snowmint-chaos-{pid}");
        run("ip", &["netns", "add", &name])
            .context("a campaign needs root to make a network namespace")?;
        cleanup.push(Undo::DeleteNetns(name.clone()));
        // At most 15 characters, as every interface name.
        let host_link = format!("smc{}", pid % 1_000_000_000);
        run(
            "ip",
            &[
                "link", "add", &host_link, "type", "veth", "peer", "name", "c0", "netns", &name,
            ],
        )?;
        cleanup.push(Undo::DeleteLink(host_link.clone()));
        // A /30 of its own per campaign, in private space; nothing routes it off the host.
        let subnet = u8::try_from(pid % 250).expect("below 250");
        let host_addr = Ipv4Addr::new(10, 213, subnet, 1);
        let inner_addr = Ipv4Addr::new(10, 213, subnet, 2);
        run(
            "ip",
            &["addr", "add", &format!("{host_addr}/30"), "dev", &host_link],
        )?;
        run("ip", &["link", "set", &host_link, "up"])?;
        for args in [
            &["link", "set", "lo", "up"][..],
            &["addr", "add", &format!("{inner_addr}/30"), "dev", "c0"],
            &["link", "set", "c0", "up"],
        ] {
            let mut all = vec!["-n", name.as_str()];
            all.extend_from_slice(args);
            run("ip", &all)?;
        }
        let connect = spawn_connector(&name)?;
        Ok(Netns {
            name,
            host_link,
            host_addr,
            connect,
        })
    }

    /// Cuts the link (`down`) or mends it.
    pub fn link(&self, up: bool) -> anyhow::Result<()> {
        let state = if up { "up" } else { "down" };
        run("ip", &["link", "set", &self.host_link, state])
    }

    /// Throttles what the registry sends the server to a trickle, or lifts the throttle.
    pub fn throttle(&self, on: bool) -> anyhow::Result<()> {
        if on {
            // 8 kbit/s with room for one full packet: a renewal crawls, nothing is lost.
            run(
                "tc",
                &[
                    "qdisc",
                    "add",
                    "dev",
                    &self.host_link,
                    "root",
                    "tbf",
                    "rate",
                    "8kbit",
                    "burst",
                    "1600",
                    "latency",
                    "2s",
                ],
            )
        } else {
            run("tc", &["qdisc", "del", "dev", &self.host_link, "root"])
        }
    }

    /// A connection to `addr` inside the namespace (its own loopback).
    async fn connect_inside(&self, addr: SocketAddr) -> std::io::Result<TcpStream> {
        let (tx, rx) = oneshot::channel();
        self.connect
            .send((addr, tx))
            .map_err(|_| std::io::Error::other("the namespace's connector is gone"))?;
        let stream = rx
            .await
            .map_err(|_| std::io::Error::other("the namespace's connector is gone"))??;
        stream.set_nonblocking(true)?;
        TcpStream::from_std(stream)
    }
}

/// A thread that joins the namespace and makes sockets there on request: a socket stays in
/// the namespace it was made in, whichever thread uses it after.
fn spawn_connector(name: &str) -> anyhow::Result<mpsc::Sender<ConnectRequest>> {
    let path = format!("/var/run/netns/{name}");
    let file = std::fs::File::open(&path).with_context(|| format!("cannot open {path}"))?;
    let (tx, rx) = mpsc::channel::<ConnectRequest>();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("netns-connector".into())
        .spawn(move || {
            // SAFETY: setns(2) on this thread only, with a namespace file held open.
            let joined = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            let _ = ready_tx.send(if joined == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            });
            if joined != 0 {
                return;
            }
            for (addr, reply) in rx {
                let _ = reply.send(std::net::TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT));
            }
        })?;
    ready_rx
        .recv()
        .context("the connector thread ended")?
        .context("cannot join the network namespace")?;
    Ok(tx)
}

/// A relay on 127.0.0.1 here to `inner` inside the namespace; returns its address.
pub async fn relay_in(
    netns: std::sync::Arc<Netns>,
    inner: SocketAddr,
) -> anyhow::Result<(SocketAddr, AbortHandle)> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        while let Ok((mut near, _)) = listener.accept().await {
            let netns = netns.clone();
            tokio::spawn(async move {
                if let Ok(mut far) = netns.connect_inside(inner).await {
                    let _ = far.set_nodelay(true);
                    let _ = near.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut near, &mut far).await;
                }
            });
        }
    });
    Ok((addr, task.abort_handle()))
}

/// A relay on `listen` (the host end of the veth pair) to `target` on this loopback: the
/// partitioned server's way to the registry.
pub async fn relay_out(
    listen: Ipv4Addr,
    target: SocketAddr,
) -> anyhow::Result<(SocketAddr, AbortHandle)> {
    let listener = TcpListener::bind((listen, 0)).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        while let Ok((mut near, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(Ok(mut far)) =
                    tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(target)).await
                {
                    let _ = far.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut near, &mut far).await;
                }
            });
        }
    });
    Ok((addr, task.abort_handle()))
}
