//! `zookeeper://HOST[:PORT][,HOST[:PORT]...]/PATH`: the ensemble and the root of the
//! registry's nodes.

use crate::registry::LeaseError;

/// ZooKeeper's client port, when a host names none.
const DEFAULT_PORT: u16 = 2181;

/// What a lease URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// `host:port,host:port`, the connect string the client takes (no root: paths are
    /// written in full, so the root need not exist before the first acquisition).
    pub(super) hosts: String,
    /// The root of every node, such as `/snowmint`.
    pub(super) root: String,
}

impl Target {
    /// The URL as it is shown in messages: every host with its port.
    pub(super) fn shown(&self) -> String {
        format!("zookeeper://{}{}", self.hosts, self.root)
    }
}

/// Parses a `zookeeper://` URL.
pub(super) fn parse(url: &str) -> Result<Target, LeaseError> {
    let invalid = |why: &str| {
        LeaseError::Invalid(format!(
            "lease URL {url:?}: expected zookeeper://HOST:PORT[,HOST:PORT...]/PATH ({why})"
        ))
    };
    let rest = url
        .strip_prefix("zookeeper://")
        .ok_or_else(|| invalid("wrong scheme"))?;
    if rest.contains(['?', '#']) {
        return Err(invalid("nothing may follow the path"));
    }
    let Some(slash) = rest.find('/') else {
        return Err(invalid(
            "no path: name the registry's root, such as /snowmint",
        ));
    };
    let (hosts, root) = rest.split_at(slash);
    if hosts.contains('@') {
        return Err(invalid("user names are not supported"));
    }
    let hosts = hosts
        .split(',')
        .map(|host| address(host).map_err(|why| invalid(&why)))
        .collect::<Result<Vec<_>, _>>()?
        .join(",");
    check_root(root).map_err(|why| invalid(&why))?;
    Ok(Target {
        hosts,
        root: root.to_string(),
    })
}

/// `host:port` from `host[:port]` or `[v6]:port`, the port defaulting to 2181.
fn address(host: &str) -> Result<String, String> {
    let (name, port) = if let Some(bracketed) = host.strip_prefix('[') {
        let (name, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{host:?} opens a bracket it does not close"))?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':').ok_or_else(|| {
                format!("{host:?} has something other than a port after its bracket")
            })?),
        };
        (format!("[{name}]"), port)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name.to_string(), Some(port)),
            None => (host.to_string(), None),
        }
    };
    if name.is_empty() || name == "[]" {
        return Err("a host is empty".into());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse()
            .ok()
            .filter(|port| *port > 0)
            .ok_or_else(|| format!("{port:?} is not a port number"))?,
    };
    Ok(format!("{name}:{port}"))
}

/// A root ZooKeeper accepts as a node path, other than `/` itself and `/zookeeper`, which
/// the server keeps for its own nodes.
fn check_root(root: &str) -> Result<(), String> {
    let segments: Vec<&str> = root[1..].split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(format!("path {root:?} has an empty segment"));
    }
    if let Some(bad) = segments.iter().find(|s| **s == "." || **s == "..") {
        return Err(format!("path {root:?} has a {bad:?} segment"));
    }
    if root.chars().any(char::is_control) {
        return Err(format!("path {root:?} has a control character"));
    }
    if segments[0] == "zookeeper" {
        return Err("the server keeps /zookeeper for itself".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_get_their_ports_and_the_root_is_kept() {
        let target =
            parse("zookeeper://10.0.0.5:2182,zk2,[::1]:2183,[fe80::1]/snowmint/prod").unwrap();
        assert_eq!(
            target.hosts,
            "10.0.0.5:2182,zk2:2181,[::1]:2183,[fe80::1]:2181"
        );
        assert_eq!(target.root, "/snowmint/prod");
        assert_eq!(
            target.shown(),
            "zookeeper://10.0.0.5:2182,zk2:2181,[::1]:2183,[fe80::1]:2181/snowmint/prod"
        );
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, why) in [
            ("zk://h:2181/s", "wrong scheme"),
            (
                "zookeeper://h:2181",
                "no path: name the registry's root, such as /snowmint",
            ),
            ("zookeeper://h:2181/", r#"path "/" has an empty segment"#),
            (
                "zookeeper://h:2181/a//b",
                r#"path "/a//b" has an empty segment"#,
            ),
            (
                "zookeeper://h:2181/a/",
                r#"path "/a/" has an empty segment"#,
            ),
            (
                "zookeeper://h:2181/a/../b",
                r#"path "/a/../b" has a ".." segment"#,
            ),
            (
                "zookeeper://h:2181/zookeeper/x",
                "the server keeps /zookeeper for itself",
            ),
            ("zookeeper://h:2181/s?x=1", "nothing may follow the path"),
            ("zookeeper://u:p@h:2181/s", "user names are not supported"),
            ("zookeeper://h:port/s", r#""port" is not a port number"#),
            ("zookeeper://h:0/s", r#""0" is not a port number"#),
            ("zookeeper://h:2181,/s", "a host is empty"),
            ("zookeeper:///s", "a host is empty"),
            (
                "zookeeper://[::1/s",
                r#""[::1" opens a bracket it does not close"#,
            ),
            (
                "zookeeper://[::1]x/s",
                r#""[::1]x" has something other than a port after its bracket"#,
            ),
        ] {
            assert_eq!(
                parse(url).unwrap_err().to_string(),
                format!(
                    "lease URL {url:?}: expected zookeeper://HOST:PORT[,HOST:PORT...]/PATH ({why})"
                ),
                "{url}"
            );
        }
    }
}
