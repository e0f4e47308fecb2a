//! The ZooKeeper lease URLs: the ensemble, the root of the registry's nodes, and how to
//! reach them:
//!
//! ```text
//! zookeeper://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/PATH[?password_file=FILE]
//! zookeepers://[USER[:PASSWORD]@]HOST[:PORT][,...]/PATH[?tls_ca=FILE&tls_cert=FILE&tls_key=FILE&password_file=FILE]
//! ```
//!
//! `zookeepers://` speaks TLS to every server (its secure client port); a user part
//! authenticates the session with ZooKeeper's `digest` scheme, and the nodes the registry
//! makes then carry an ACL that lets only that user change them.

use zookeeper_client as zk;

use crate::registry::LeaseError;
use crate::secured::{Secured, TlsFiles, User, redact};

/// The URL's forms, as messages name them.
const FORMS: &str = "zookeeper[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/PATH[?PARAMETERS]";

/// ZooKeeper's client port, when a host names none.
const DEFAULT_PORT: u16 = 2181;

/// What a lease URL names.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// `host:port,host:port`, the connect string the client takes (no root: paths are
    /// written in full, so the root need not exist before the first acquisition).
    pub(super) hosts: String,
    /// The root of every node, such as `/snowmint`.
    pub(super) root: String,
    /// The TLS files of a `zookeepers://` URL; `None` for `zookeeper://`.
    pub(super) tls: Option<TlsFiles>,
    /// The `digest` user and its password, if the URL names a user.
    pub(super) user: Option<User>,
}

/// What `addauth digest` takes for `user`: `user:password`.
pub(super) fn digest_auth(user: &User) -> Vec<u8> {
    format!("{}:{}", user.name, user.password).into_bytes()
}

/// The identity ZooKeeper gives a session that authenticated as `user`, as ACLs name it:
/// `digest`, `user:base64(SHA-1(user:password))`.
pub(super) fn digest_id(user: &User) -> zk::AuthId {
    use base64::Engine;
    let sha1 = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
        &digest_auth(user),
    );
    let hashed = base64::engine::general_purpose::STANDARD.encode(sha1.as_ref());
    zk::AuthId::new("digest", &format!("{}:{hashed}", user.name))
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl Target {
    /// The URL as it is shown in messages: the user without its password, every host with
    /// its port.
    pub(super) fn shown(&self) -> String {
        let scheme = if self.tls.is_some() {
            "zookeepers"
        } else {
            "zookeeper"
        };
        let user = self
            .user
            .as_ref()
            .map(|user| format!("{}@", user.name))
            .unwrap_or_default();
        format!("{scheme}://{user}{}{}", self.hosts, self.root)
    }
}

/// Parses a `zookeeper://` or `zookeepers://` URL; reads the password file it names.
pub(super) fn parse(url: &str) -> Result<Target, LeaseError> {
    let invalid = |why: &str| {
        LeaseError::Invalid(format!(
            "lease URL {:?}: expected {FORMS} ({why})",
            redact(url)
        ))
    };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("zookeepers://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("zookeeper://") {
        (false, rest)
    } else {
        return Err(invalid("wrong scheme"));
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    if rest.contains('#') || query.contains('#') {
        return Err(invalid("nothing may follow the parameters"));
    }
    let Some(slash) = rest.find('/') else {
        return Err(invalid(
            "no path: name the registry's root, such as /snowmint",
        ));
    };
    let (authority, root) = rest.split_at(slash);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let (secured, unknown) = Secured::take(query).map_err(|why| invalid(&why))?;
    if let Some((name, _)) = unknown.first() {
        return Err(invalid(&format!(
            "unknown parameter {}: zookeeper URLs take tls_ca, tls_cert, tls_key and password_file",
            crate::secured::parameter_shown(name)
        )));
    }
    if !tls && secured.tls.is_some() {
        return Err(invalid("tls_ca, tls_cert and tls_key need zookeepers://"));
    }
    let user = secured.user(userinfo).map_err(|why| invalid(&why))?;
    if user.as_ref().is_some_and(|user| user.name.contains(':')) {
        // `digest` reads `user:password` up to the first colon.
        return Err(invalid("a digest user name cannot hold ':'"));
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
        tls: tls.then(|| secured.tls.unwrap_or_default()),
        user,
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
    fn users_and_tls_files_are_read_and_the_password_never_shown() {
        let target =
            parse("zookeepers://snow%40mint:p%40ss:x@zk1:2281/snowmint?tls_ca=/ca.pem").unwrap();
        let user = target.user.clone().unwrap();
        assert_eq!(digest_auth(&user), b"snow@mint:p@ss:x");
        assert_eq!(
            target.tls.clone().unwrap().ca.unwrap().to_str(),
            Some("/ca.pem")
        );
        assert_eq!(target.shown(), "zookeepers://snow@mint@zk1:2281/snowmint");
        assert!(!format!("{target:?}{user:?}").contains("p@ss:x"));
        // The superuser digest of ZooKeeper's administrator guide, for "super:admin".
        let known = User {
            name: "super".into(),
            password: "admin".into(),
        };
        assert_eq!(digest_id(&known).id(), "super:xQJmxLMiHGwaqBvst5y6rkB6HQs=");
        let err = parse("zookeeper://u:s3cret@h:port/s")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "lease URL \"zookeeper://u:***@h:port/s\": expected {FORMS} (\"port\" is not a port number)"
            )
        );
        assert_eq!(parse("zookeeper://h/s").unwrap().tls, None);
        assert_eq!(
            parse("zookeepers://h/s").unwrap().tls,
            Some(TlsFiles::default())
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
            (
                "zookeeper://h:2181/s?x=1",
                r#"unknown parameter "x": zookeeper URLs take tls_ca, tls_cert, tls_key and password_file"#,
            ),
            (
                "zookeeper://u@h:2181/s",
                "user u needs a password: USER:PASSWORD@HOST or password_file=FILE",
            ),
            (
                "zookeeper://h:2181/s?tls_ca=/ca.pem",
                "tls_ca, tls_cert and tls_key need zookeepers://",
            ),
            (
                "zookeeper://h:2181/s?password_file=/pw",
                "password_file needs a user name: USER@HOST",
            ),
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
                format!("lease URL {url:?}: expected {FORMS} ({why})"),
                "{url}"
            );
        }
    }
}
