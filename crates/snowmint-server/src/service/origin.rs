//! Who a request counts against in the fair shares of the budget of ids in flight: see
//! [`Origin`]; and who asks, as a request carries it ([`Caller`]).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;
use std::sync::Arc;

use axum::http::HeaderMap;
use tokio::sync::Semaphore;

/// Who a request counts against in the fair shares of the budget of ids in flight.
///
/// A client is the address a request comes from: an IPv4 address, or an IPv6 /64 prefix
/// (one host is commonly given a whole /64, and picks a new address in it at will). Not a
/// connection, since opening more connections costs an attacker nothing; not a token or a
/// header the client chooses, since it could choose a new one for every request. So a
/// thousand connections from one address hold one share, and the clients behind one NAT
/// share one. Behind a reverse proxy every request comes from the proxy's address, which
/// is many clients, so the proxies are named ([`TrustedProxies`], `trusted_proxies`) and
/// for a request from one of them the client is the address it reports: the last address
/// of `X-Forwarded-For` that is not itself a trusted proxy (each proxy appends the address
/// it heard from, so that is the nearest one the server's own proxies vouch for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin(IpAddr);

impl Origin {
    /// The client a peer address stands for.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::Origin;
    ///
    /// let a = Origin::of("2001:db8::1".parse().unwrap());
    /// assert_eq!(a, Origin::of("2001:db8::ffff:2".parse().unwrap()));
    /// assert_eq!(Origin::of("::ffff:10.0.0.1".parse().unwrap()).to_string(), "10.0.0.1");
    /// ```
    #[must_use]
    pub fn of(addr: IpAddr) -> Origin {
        match addr {
            IpAddr::V4(v4) => Origin(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Origin(IpAddr::V4(v4)),
                None => Origin(IpAddr::V6(Ipv6Addr::from_bits(
                    v6.to_bits() & !u128::from(u64::MAX),
                ))),
            },
        }
    }

    /// The client of a request that came from `peer` with `headers`: the address a trusted
    /// proxy reports, else the peer's.
    ///
    /// # Examples
    ///
    /// ```
    /// use axum::http::HeaderMap;
    /// use snowmint_server::{Origin, TrustedProxies};
    ///
    /// let proxies: TrustedProxies = "10.0.0.1".parse()?;
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-forwarded-for", "203.0.113.9".parse()?);
    /// let client = Origin::of_request("10.0.0.1".parse()?, &headers, &proxies);
    /// assert_eq!(client.to_string(), "203.0.113.9");
    /// // From a peer that is no trusted proxy, the header is ignored.
    /// let client = Origin::of_request("10.0.0.2".parse()?, &headers, &proxies);
    /// assert_eq!(client.to_string(), "10.0.0.2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn of_request(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> Origin {
        if !trusted.contains(peer) {
            return Origin::of(peer);
        }
        // Each proxy appends the address it heard from; read from the nearest back.
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in forwarded.iter().rev() {
            match hop.parse::<IpAddr>() {
                Ok(addr) if trusted.contains(addr) => {}
                Ok(addr) => return Origin::of(addr),
                // A hop the proxy could not name: the proxy's own address is all we know.
                Err(_) => break,
            }
        }
        Origin::of(peer)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
            v4 => write!(f, "{v4}"),
        }
    }
}

/// Addresses and networks whose `X-Forwarded-For` is believed, such as
/// `10.0.0.0/8, 192.168.1.7`. Empty by default: a header any client can send names no one.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TryFrom<String> for TrustedProxies {
    type Error = String;

    fn try_from(text: String) -> Result<TrustedProxies, String> {
        text.parse()
    }
}

impl TrustedProxies {
    /// Whether `addr` is one of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::TrustedProxies;
    ///
    /// let proxies: TrustedProxies = "10.0.0.0/8, 2001:db8::7".parse()?;
    /// assert!(proxies.contains("10.20.30.40".parse()?));
    /// assert!(proxies.contains("::ffff:10.0.0.1".parse()?));
    /// assert!(!proxies.contains("2001:db8::8".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        self.0.iter().any(|&(net, bits)| match (net, addr) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                prefix(net.to_bits().into(), a.to_bits().into(), 32, bits)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => prefix(net.to_bits(), a.to_bits(), 128, bits),
            _ => false,
        })
    }

    /// Whether none is named.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether the first `bits` of the `width`-bit values `a` and `b` agree.
fn prefix(a: u128, b: u128, width: u32, bits: u8) -> bool {
    let shift = width - u32::from(bits);
    bits == 0 || (a >> shift) == (b >> shift)
}

impl FromStr for TrustedProxies {
    type Err = String;

    /// Comma-separated addresses, each with an optional `/bits`.
    fn from_str(text: &str) -> Result<TrustedProxies, String> {
        let mut nets = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (addr, bits) = item.split_once('/').unwrap_or((item, ""));
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| format!("{item:?} is not an IP address or network"))?;
            let width = if addr.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                "" => width,
                bits => bits
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= width)
                    .ok_or_else(|| {
                        format!("{item:?} has a prefix length out of range 0..={width}")
                    })?,
            };
            nets.push((addr, bits));
        }
        Ok(TrustedProxies(nets))
    }
}

impl fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self.0.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        f.write_str(&items.join(", "))
    }
}

/// Who asks for ids: a connection's share of the budget, and the [`Origin`] the request
/// counts against in the server's fair shares. The accept loop puts one in the extensions
/// of every request it reads; a request without one (a router called in tests) counts
/// against an unnamed client and no connection.
#[derive(Debug, Clone)]
pub struct Caller {
    pub(super) connection: Arc<Semaphore>,
    pub(super) peer: IpAddr,
    pub(super) trusted: Arc<TrustedProxies>,
    pub(super) origin: Origin,
}

impl Caller {
    /// The caller of one request on this connection: the client a trusted proxy names in
    /// its headers, or the connection's peer.
    #[must_use]
    pub fn for_request(&self, headers: &HeaderMap) -> Caller {
        if self.trusted.is_empty() {
            return self.clone();
        }
        Caller {
            origin: Origin::of_request(self.peer, headers, &self.trusted),
            ..self.clone()
        }
    }

    /// The client it counts against.
    #[must_use]
    pub fn origin(&self) -> Origin {
        self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().unwrap());
        h
    }

    #[test]
    fn a_trusted_proxy_names_the_client_and_others_cannot() {
        let trusted: TrustedProxies = "10.0.0.0/8, 192.168.1.7".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let origin = |peer, xff| Origin::of_request(ip(peer), &headers(xff), &trusted);
        assert_eq!(
            origin("10.1.2.3", "203.0.113.9"),
            Origin::of(ip("203.0.113.9"))
        );
        // Through two proxies, the nearest untrusted hop is the client; what it says of
        // hops before it is its own word.
        assert_eq!(
            origin("192.168.1.7", "1.1.1.1, 203.0.113.9, 10.9.9.9"),
            Origin::of(ip("203.0.113.9"))
        );
        // From anyone else the header is ignored.
        assert_eq!(
            origin("203.0.113.5", "1.1.1.1"),
            Origin::of(ip("203.0.113.5"))
        );
        assert_eq!(origin("10.1.2.3", "unknown"), Origin::of(ip("10.1.2.3")));
        assert!(!trusted.contains(ip("11.0.0.1")));
        assert!(trusted.contains(ip("::ffff:10.0.0.1")));
    }

    #[test]
    fn bad_networks_are_named() {
        assert_eq!(
            "10.0.0.0/33".parse::<TrustedProxies>().unwrap_err(),
            "\"10.0.0.0/33\" has a prefix length out of range 0..=32"
        );
        assert_eq!(
            "proxy".parse::<TrustedProxies>().unwrap_err(),
            "\"proxy\" is not an IP address or network"
        );
        assert!("".parse::<TrustedProxies>().unwrap().is_empty());
    }
}
