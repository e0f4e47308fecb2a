//! Where a process's name in a registry comes from: the host name, or an IP address of the
//! host, so that the same datacenter and address get their old worker id back.

use std::fmt;
use std::net::IpAddr;

/// Where the identity comes from when none is given: what `--identity-from` selects.
///
/// # Examples
///
/// ```
/// use snowmint_lease::IdentitySource;
///
/// assert_eq!("ip".parse::<IdentitySource>()?, IdentitySource::Ip { interface: None });
/// assert_eq!(
///     "ip:eth0".parse::<IdentitySource>()?,
///     IdentitySource::Ip { interface: Some("eth0".into()) }
/// );
/// assert_eq!(
///     "mac".parse::<IdentitySource>().unwrap_err(),
///     "is not an identity source: expected hostname, ip or ip:IFACE"
/// );
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IdentitySource {
    /// The host name.
    #[default]
    Hostname,
    /// An IP address of the host: the primary one (see [`primary_ip`]), or the one of a
    /// named interface.
    Ip {
        /// The interface, if one is named.
        interface: Option<String>,
    },
}

impl std::str::FromStr for IdentitySource {
    type Err = String;

    fn from_str(text: &str) -> Result<IdentitySource, String> {
        match text {
            "hostname" => Ok(IdentitySource::Hostname),
            "ip" => Ok(IdentitySource::Ip { interface: None }),
            _ => match text.strip_prefix("ip:") {
                Some(name) if !name.is_empty() => Ok(IdentitySource::Ip {
                    interface: Some(name.to_string()),
                }),
                _ => Err("is not an identity source: expected hostname, ip or ip:IFACE".into()),
            },
        }
    }
}

impl fmt::Display for IdentitySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentitySource::Hostname => f.write_str("hostname"),
            IdentitySource::Ip { interface: None } => f.write_str("ip"),
            IdentitySource::Ip {
                interface: Some(name),
            } => write!(f, "ip:{name}"),
        }
    }
}

impl IdentitySource {
    /// The identity: the host name, or the address as text (`10.0.4.17`).
    ///
    /// # Errors
    ///
    /// The interfaces cannot be listed, the named interface does not exist or has no
    /// address, or the host has no address but loopback ones. The message names the
    /// interfaces there are.
    pub fn identity(&self) -> Result<String, String> {
        match self {
            IdentitySource::Hostname => Ok(crate::hostname()),
            IdentitySource::Ip { interface } => {
                primary_ip(interface.as_deref()).map(|ip| ip.to_string())
            }
        }
    }
}

/// The host's primary address: of `interface` if one is named, else of the interface that
/// holds the IPv4 default route, else of the first interface that is not loopback. IPv4 is
/// preferred to IPv6 on an interface, and link-local IPv6 addresses are never chosen, as
/// they are not unique across hosts.
///
/// # Errors
///
/// As [`IdentitySource::identity`].
pub fn primary_ip(interface: Option<&str>) -> Result<IpAddr, String> {
    let all = if_addrs::get_if_addrs().map_err(|e| format!("cannot list interfaces: {e}"))?;
    let usable = |name: &str| {
        let mut addrs: Vec<IpAddr> = all
            .iter()
            .filter(|i| i.name == name && !i.is_loopback() && !i.is_link_local())
            .map(if_addrs::Interface::ip)
            .collect();
        addrs.sort_by_key(IpAddr::is_ipv6);
        addrs.first().copied()
    };
    // Each interface once, in the system's order (it lists one entry per address).
    let mut names: Vec<&str> = Vec::new();
    for interface in &all {
        if !names.contains(&interface.name.as_str()) {
            names.push(&interface.name);
        }
    }
    let listed = names.join(", ");
    if let Some(name) = interface {
        if !names.contains(&name) {
            return Err(format!(
                "there is no interface {name} (interfaces: {listed})"
            ));
        }
        return usable(name).ok_or_else(|| {
            format!("interface {name} has no address but loopback or link-local ones")
        });
    }
    let route = default_route_interface();
    route
        .as_deref()
        .and_then(usable)
        .or_else(|| names.iter().find_map(|name| usable(name)))
        .ok_or_else(|| {
            format!(
                "this host has no address but loopback or link-local ones (interfaces: {listed})"
            )
        })
}

/// The interface of the IPv4 default route, from `/proc/net/route` (Linux).
fn default_route_interface() -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    table.lines().skip(1).find_map(|line| {
        let mut fields = line.split_whitespace();
        let (name, destination) = (fields.next()?, fields.next()?);
        (destination == "00000000").then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_and_the_missing() {
        let err = primary_ip(Some("no-such-if0")).unwrap_err();
        assert!(
            err.starts_with("there is no interface no-such-if0 (interfaces: lo"),
            "{err}"
        );
        let err = primary_ip(Some("lo")).unwrap_err();
        assert_eq!(
            err,
            "interface lo has no address but loopback or link-local ones"
        );
        assert_eq!(
            IdentitySource::Ip {
                interface: Some("eth1".into())
            }
            .to_string(),
            "ip:eth1"
        );
        assert_eq!(
            "ip:".parse::<IdentitySource>().unwrap_err(),
            "is not an identity source: expected hostname, ip or ip:IFACE"
        );
    }
}
