//! The etcd lease URLs:
//!
//! ```text
//! etcd://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/][?password_file=FILE]
//! etcds://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/][?tls_ca=FILE&tls_cert=FILE&tls_key=FILE&password_file=FILE]
//! ```
//!
//! `etcds://` speaks https to every member; `etcd://` plain http. A user part (with the
//! password in it, percent-encoded, or in `password_file=FILE`) makes every request carry
//! a token of etcd's own authentication, so that the user's roles decide what it may do.

use super::DEFAULT_PORT;
use crate::registry::LeaseError;
use crate::secured::{Secured, TlsFiles, User, redact};

/// The URL's forms, as messages name them.
const FORMS: &str = "etcd[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][?PARAMETERS]";

/// What an etcd lease URL names.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// `http://host:port` or `https://host:port` for each member, in the URL's order.
    pub(super) endpoints: Vec<String>,
    /// The TLS files, for `etcds://`; `None` for `etcd://`.
    pub(super) tls: Option<TlsFiles>,
    /// The user and password of etcd's authentication, if the URL names a user.
    pub(super) user: Option<User>,
}

impl Target {
    /// The URL as it may be shown anywhere: scheme, user (no password) and members.
    pub(super) fn shown(&self) -> String {
        let scheme = if self.tls.is_some() { "etcds" } else { "etcd" };
        let user = self
            .user
            .as_ref()
            .map(|user| format!("{}@", user.name))
            .unwrap_or_default();
        let hosts: Vec<&str> = self.endpoints.iter().map(|e| host_of(e)).collect();
        format!("{scheme}://{user}{}", hosts.join(","))
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

/// `host:port` of an endpoint `http[s]://host:port`.
pub(super) fn host_of(endpoint: &str) -> &str {
    endpoint
        .split_once("://")
        .map_or(endpoint, |(_, host)| host)
}

/// Parses an `etcd://` or `etcds://` URL; reads the password file it names.
pub(super) fn parse(url: &str) -> Result<Target, LeaseError> {
    let invalid = |why: &str| {
        LeaseError::Invalid(format!(
            "lease URL {:?}: expected {FORMS} ({why})",
            redact(url)
        ))
    };
    let (https, rest) = if let Some(rest) = url.strip_prefix("etcds://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("etcd://") {
        (false, rest)
    } else {
        return Err(invalid("wrong scheme"));
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    if query.contains('#') || rest.contains('#') {
        return Err(invalid("nothing may follow the parameters"));
    }
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, rest),
    };
    let scheme = if https { "https" } else { "http" };
    let hosts: Vec<&str> = hosts.split(',').collect();
    let mut endpoints = Vec::with_capacity(hosts.len());
    for (i, host) in hosts.iter().enumerate() {
        // Only the last member may end with the `/` that closes the URL.
        if i + 1 < hosts.len() && host.contains('/') {
            return Err(invalid("nothing may follow the port"));
        }
        endpoints.push(endpoint(scheme, host).map_err(|why| invalid(&why))?);
    }
    let (secured, unknown) = Secured::take(query).map_err(|why| invalid(&why))?;
    if let Some((name, _)) = unknown.first() {
        return Err(invalid(&format!(
            "unknown parameter {}: etcd URLs take tls_ca, tls_cert, tls_key and password_file",
            crate::secured::parameter_shown(name)
        )));
    }
    if !https && secured.tls.is_some() {
        return Err(invalid("tls_ca, tls_cert and tls_key need etcds://"));
    }
    let user = secured.user(userinfo).map_err(|why| invalid(&why))?;
    let tls = https.then(|| secured.tls.unwrap_or_default());
    Ok(Target {
        endpoints,
        tls,
        user,
    })
}

/// `scheme://host:port` for one member of an etcd URL, `host[:port]` with perhaps a `/`
/// after the last; or why it is not one.
fn endpoint(scheme: &str, host: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(&format!("http://{host}")).map_err(|e| e.to_string())?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("the user part comes once, before the first host".into());
    }
    if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("nothing may follow the port".into());
    }
    let name = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or("no host")?;
    Ok(format!(
        "{scheme}://{name}:{}",
        parsed.port().unwrap_or(DEFAULT_PORT)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(url: &str) -> Result<Vec<String>, LeaseError> {
        parse(url).map(|target| target.endpoints)
    }

    #[test]
    fn members_get_their_scheme_and_port() {
        assert_eq!(
            endpoints("etcd://10.0.0.5:2381").unwrap(),
            ["http://10.0.0.5:2381"]
        );
        assert_eq!(
            endpoints("etcd://etcd.internal").unwrap(),
            ["http://etcd.internal:2379"]
        );
        assert_eq!(
            endpoints("etcd://[::1]:2379/").unwrap(),
            ["http://[::1]:2379"]
        );
        assert_eq!(
            endpoints("etcd://e1:2379,e2,[::1]:2381/").unwrap(),
            ["http://e1:2379", "http://e2:2379", "http://[::1]:2381"]
        );
        assert_eq!(
            endpoints("etcds://e1,e2:2381/?tls_ca=/ca.pem").unwrap(),
            ["https://e1:2379", "https://e2:2381"]
        );
    }

    #[test]
    fn users_passwords_and_tls_files_are_read() {
        let target =
            parse("etcds://snow%40mint:p%3Ass@e1:2379,e2:2379?tls_ca=/ca.pem&tls_cert=/c.pem&tls_key=/k.pem")
                .unwrap();
        let user = target.user.clone().unwrap();
        assert_eq!(
            (user.name.as_str(), user.password.as_str()),
            ("snow@mint", "p:ss")
        );
        let tls = target.tls.clone().unwrap();
        assert_eq!(tls.ca.unwrap().to_str(), Some("/ca.pem"));
        assert_eq!(tls.key.unwrap().to_str(), Some("/k.pem"));
        assert_eq!(target.shown(), "etcds://snow@mint@e1:2379,e2:2379");
        assert!(!format!("{target:?}{user:?}").contains("p:ss"));

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        let target = parse(&format!(
            "etcd://snowmint@h:2379?password_file={}",
            file.display()
        ))
        .unwrap();
        assert_eq!(target.user.unwrap().password, "from-file");
        assert_eq!(parse("etcds://h").unwrap().tls, Some(TlsFiles::default()));
        assert_eq!(parse("etcd://h").unwrap().tls, None);
    }

    #[test]
    fn bad_urls_say_what_is_wrong_and_show_no_password() {
        for (url, shown, why) in [
            ("etcd://", "etcd://", "empty host"),
            (
                "etcd://h:2379/v3",
                "etcd://h:2379/v3",
                "nothing may follow the port",
            ),
            ("http://h:2379", "http://h:2379", "wrong scheme"),
            ("etcd://e1:2379,", "etcd://e1:2379,", "empty host"),
            (
                "etcd://e1:2379,,e3:2379",
                "etcd://e1:2379,,e3:2379",
                "empty host",
            ),
            (
                "etcd://e1:2379/,e2:2379",
                "etcd://e1:2379/,e2:2379",
                "nothing may follow the port",
            ),
            (
                "etcd://e1:2379,e2:port",
                "etcd://e1:2379,e2:port",
                "invalid port number",
            ),
            ("etcd://:pw@h", "etcd://:***@h", "the user name is empty"),
            (
                "etcd://u@h",
                "etcd://u@h",
                "user u needs a password: USER:PASSWORD@HOST or password_file=FILE",
            ),
            (
                "etcd://h?password_file=/pw",
                "etcd://h?password_file=/pw",
                "password_file needs a user name: USER@HOST",
            ),
            (
                "etcd://h?tls_ca=/ca.pem",
                "etcd://h?tls_ca=/ca.pem",
                "tls_ca, tls_cert and tls_key need etcds://",
            ),
            (
                "etcds://u:s3cret@h?sslmode=x",
                "etcds://u:***@h?sslmode=x",
                r#"unknown parameter "sslmode": etcd URLs take tls_ca, tls_cert, tls_key and password_file"#,
            ),
            (
                "etcds://h?tls_cert=/c.pem",
                "etcds://h?tls_cert=/c.pem",
                "tls_cert needs tls_key, the certificate's key",
            ),
        ] {
            assert_eq!(
                parse(url).unwrap_err().to_string(),
                format!("lease URL {shown:?}: expected {FORMS} ({why})"),
                "{url}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "x\n").unwrap();
        let twice = format!("etcd://u:s3cret@h?password_file={}", file.display());
        let err = parse(&twice).unwrap_err().to_string();
        assert!(err.contains("the password is given twice"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
