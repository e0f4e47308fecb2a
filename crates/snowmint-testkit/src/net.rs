//! Loopback ports for the servers, and the short-lived connections that probe them.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Ports below this are left alone: the low range holds the well-known and registered
/// ports of services a developer may be running.
const LOWEST_PORT: u16 = 10_000;
/// Linux's default start of the range it picks outgoing (ephemeral) ports from, used
/// when `/proc` cannot be read.
const DEFAULT_EPHEMERAL_START: u16 = 32_768;
/// Tries before giving up; each try is one `bind`, and thousands of ports are candidates.
const PORT_ATTEMPTS: usize = 1_000;
/// How long a readiness probe may wait to connect, read or write. Loopback answers in
/// microseconds; a server that takes this long is not ready.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// A TCP port on 127.0.0.1 that nothing listens on, for a server to bind.
///
/// The port is chosen below the kernel's ephemeral range, so an outgoing connection of
/// this or any other process cannot take it as its local port while a test has the
/// server stopped; a restart then finds its port still free. No port is handed out twice
/// by one process. Another process may still bind it before the server does: the guards'
/// first start retries on a fresh port when the server reports its address in use.
///
/// # Panics
///
/// If no port is free after a thousand tries.
///
/// ```
/// use std::net::TcpListener;
///
/// let port = snowmint_testkit::free_port();
/// assert_ne!(port, snowmint_testkit::free_port());
/// let listener = TcpListener::bind(("127.0.0.1", port))?;
/// assert_eq!(listener.local_addr()?.port(), port);
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use]
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let below = ephemeral_start();
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..PORT_ATTEMPTS {
        let Some(port) = candidate(below) else {
            continue;
        };
        if !handed_out.contains(&port) && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            handed_out.insert(port);
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 after {PORT_ATTEMPTS} tries");
}

/// A port to try: a random one below the ephemeral range, or, when that range starts
/// too low to leave room, one the kernel picks.
fn candidate(below: u16) -> Option<u16> {
    if below > LOWEST_PORT {
        return Some(fastrand::u16(LOWEST_PORT..below));
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).ok()?;
    Some(listener.local_addr().ok()?.port())
}

/// The first port of the range the kernel assigns to outgoing connections.
fn ephemeral_start() -> u16 {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START)
}

/// A connection to a server on `127.0.0.1:port` for a readiness probe, with every
/// operation bounded so a half-started server cannot stall the wait.
pub(crate) fn connect(port: u16) -> io::Result<TcpStream> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT)?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT))?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT))?;
    Ok(stream)
}
