//! The forms of a Redis lease URL: `redis://` names one server, `redis+sentinel://` the
//! sentinels that name the primary, and `rediss://` and `rediss+sentinel://` the same over
//! TLS (to the sentinels and to the primary alike). Each may ask that replicas acknowledge
//! every acquisition and renewal (`?wait=N`), and takes the parameters every backend
//! takes ([`Secured`]): the password from a file, and with TLS the CA, client certificate
//! and key. Nothing here connects.

use redis::{
    Client, ClientTlsConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo,
    TlsCertificates,
};

use crate::refusal;
use crate::registry::LeaseError;
use crate::secured::Secured;

/// The scheme of a URL that names one server.
pub(super) const DIRECT: &str = "redis://";
/// The scheme of a URL that names one server, reached over TLS.
pub(super) const DIRECT_TLS: &str = "rediss://";
/// The scheme of a URL that names sentinels.
pub(super) const SENTINEL: &str = "redis+sentinel://";
/// The scheme of a URL that names sentinels, reached (as the primary) over TLS.
pub(super) const SENTINEL_TLS: &str = "rediss+sentinel://";
const DIRECT_FORM: &str = "redis[s]://[USER:PASSWORD@]HOST[:PORT][/DB][?wait=N&password_file=FILE&tls_ca=FILE&tls_cert=FILE&tls_key=FILE]";
const SENTINEL_FORM: &str = "redis[s]+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/NAME[/DB][?wait=N&password_file=FILE&tls_ca=FILE&tls_cert=FILE&tls_key=FILE]";
/// Sentinel's own port, for a sentinel named without one.
const SENTINEL_PORT: u16 = 26_379;

/// A lease URL, checked.
#[derive(Debug)]
pub(super) struct Target {
    /// Where the primary is.
    pub(super) route: Route,
    /// The URL without credentials or parameters, for messages.
    pub(super) shown: String,
    /// How many replicas must acknowledge an acquisition or a renewal; 0: none.
    pub(super) replicas: u32,
    /// With TLS, what the servers' certificates must be signed by, for messages.
    pub(super) trust: Option<String>,
}

/// How the primary is found.
#[derive(Debug)]
pub(super) enum Route {
    /// At the one address the URL names.
    Direct(Client),
    /// By asking the sentinels for the primary they know as `name`.
    Sentinel {
        /// The sentinels, in the URL's order.
        sentinels: Vec<Client>,
        /// The name the sentinels monitor the primary under.
        name: String,
        /// The credentials and database for the primary (and its replicas); the sentinels
        /// themselves are asked without credentials.
        node: RedisConnectionInfo,
        /// The TLS files for the primary, as for the sentinels; `None` without TLS.
        tls: Option<TlsCertificates>,
    },
}

/// A client for `addr`, over TLS with `tls` if it is given.
pub(super) fn client(
    addr: ConnectionAddr,
    settings: Option<RedisConnectionInfo>,
    tls: Option<&TlsCertificates>,
) -> Result<Client, redis::RedisError> {
    let addr = match (addr, tls) {
        (ConnectionAddr::Tcp(host, port), Some(_)) => ConnectionAddr::TcpTls {
            host,
            port,
            insecure: false,
            tls_params: None,
        },
        (addr, _) => addr,
    };
    let mut info = addr.into_connection_info()?;
    if let Some(settings) = settings {
        info = info.set_redis_settings(settings);
    }
    match tls {
        Some(tls) => Client::build_with_tls(info, tls.clone()),
        None => Client::open(info),
    }
}

/// Checks `url`, of any form.
pub(super) fn parse(url: &str) -> Result<Target, LeaseError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let sentinels = url.starts_with(SENTINEL) || url.starts_with(SENTINEL_TLS);
    let form = if sentinels {
        SENTINEL_FORM
    } else {
        DIRECT_FORM
    };
    let invalid = |why: &str| {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!("{why}; ")
        };
        LeaseError::Invalid(format!(
            "lease URL {:?}: {why}expected {form}",
            redacted(url)
        ))
    };
    let (secured, rest) = Secured::take(query).map_err(|why| invalid(&why))?;
    let replicas = replicas(&rest).map_err(|why| invalid(&why))?;
    let tls = base.starts_with(DIRECT_TLS) || base.starts_with(SENTINEL_TLS);
    if base.contains('#') {
        return Err(invalid(
            "a fragment (#insecure) is not taken: name the CA that signs the server's certificate with tls_ca=FILE",
        ));
    }
    let certificates = match (&secured.tls, tls) {
        (Some(_), false) => {
            let scheme = if sentinels { SENTINEL_TLS } else { DIRECT_TLS };
            return Err(invalid(&format!(
                "tls_ca=, tls_cert= and tls_key= need TLS: write {scheme}"
            )));
        }
        (files, true) => {
            Some(tls_certificates(&secured, files.is_some()).map_err(|why| invalid(&why))?)
        }
        (None, false) => None,
    };
    let password = secured.password().map_err(|why| invalid(&why))?;
    let (route, shown) = if let Some(rest) = base
        .strip_prefix(SENTINEL)
        .or_else(|| base.strip_prefix(SENTINEL_TLS))
    {
        let scheme = if tls { SENTINEL_TLS } else { SENTINEL };
        sentinel(scheme, rest, password, certificates).map_err(|why| invalid(&why))?
    } else if base.starts_with(DIRECT) || base.starts_with(DIRECT_TLS) {
        direct(base, password, certificates).map_err(|why| invalid(&why))?
    } else {
        return Err(invalid(""));
    };
    let trust = tls.then(|| {
        let ca = secured.tls.as_ref().and_then(|files| files.ca.as_deref());
        refusal::trust("tls_ca", ca)
    });
    Ok(Target {
        route,
        shown,
        replicas,
        trust,
    })
}

/// The TLS files as the client library takes them, checked first by the shared reader so
/// that a bad file is named with its parameter. `named` is false when the URL names none:
/// the system's CAs, and no client certificate.
fn tls_certificates(secured: &Secured, named: bool) -> Result<TlsCertificates, String> {
    let Some(files) = secured.tls.as_ref().filter(|_| named) else {
        return Ok(TlsCertificates {
            client_tls: None,
            root_cert: None,
        });
    };
    files.client_config(&[])?;
    let read = |parameter: &str, path: &std::path::Path| {
        crate::secured::read_small_file(path)
            .map_err(|e| format!("{parameter}={}: cannot read it: {e}", path.display()))
    };
    let root_cert = files
        .ca
        .as_deref()
        .map(|ca| read("tls_ca", ca))
        .transpose()?;
    let client_tls = match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => Some(ClientTlsConfig {
            client_cert: read("tls_cert", cert)?,
            client_key: read("tls_key", key)?,
        }),
        _ => None,
    };
    Ok(TlsCertificates {
        client_tls,
        root_cert,
    })
}

/// The `wait` parameter, among what the shared parameters left: how many replicas must
/// acknowledge; 0 when absent.
fn replicas(rest: &[(String, String)]) -> Result<u32, String> {
    let mut replicas = 0;
    for (key, n) in rest {
        if key != "wait" {
            return Err(format!(
                "unknown parameter {}: the parameters are wait, password_file, tls_ca, tls_cert and tls_key",
                crate::secured::parameter_shown(key)
            ));
        }
        replicas = n.parse().map_err(|_| {
            // Quoted only if it is a word: it may be the end of a password with a `?`.
            let shown = if n.chars().all(|c| c.is_ascii_alphanumeric()) && n.len() <= 40 {
                n.as_str()
            } else {
                "(not shown)"
            };
            format!("wait={shown} is not a number of replicas (a whole number, 0 for none)")
        })?;
    }
    Ok(replicas)
}

/// The credentials of a URL's user part with the password from `password_file=`, if any:
/// one or the other, not both.
fn with_password(
    settings: RedisConnectionInfo,
    password: Option<String>,
) -> Result<RedisConnectionInfo, String> {
    match password {
        None => Ok(settings),
        Some(_) if settings.password().is_some() => {
            Err("give the password in the URL or in password_file=, not both".to_string())
        }
        Some(password) => Ok(settings.set_password(password)),
    }
}

/// `redis://...` or `rediss://...`, without its parameters.
fn direct(
    base: &str,
    password: Option<String>,
    tls: Option<TlsCertificates>,
) -> Result<(Route, String), String> {
    let info = base.into_connection_info().map_err(|e| crate_says(&e))?;
    let (host, port) = match info.addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            (host.clone(), *port)
        }
        _ => return Err(String::new()),
    };
    let settings = with_password(info.redis_settings().clone(), password)?;
    let scheme = if tls.is_some() { DIRECT_TLS } else { DIRECT };
    let shown = format!("{scheme}{}:{port}/{}", bracketed(&host), settings.db());
    let client = client(
        ConnectionAddr::Tcp(host, port),
        Some(settings),
        tls.as_ref(),
    )
    .map_err(|e| crate_says(&e))?;
    Ok((Route::Direct(client), shown))
}

/// What follows `redis+sentinel://` or `rediss+sentinel://`, without its parameters.
fn sentinel(
    scheme: &str,
    rest: &str,
    password: Option<String>,
    tls: Option<TlsCertificates>,
) -> Result<(Route, String), String> {
    // Master names hold only letters, digits and `.-_`, so the last `@` ends the
    // credentials, whatever they hold.
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let Some((hosts, path)) = rest.split_once('/') else {
        return Err("give the primary's name after the sentinels".to_string());
    };
    let (name, db) = path.split_once('/').unwrap_or((path, ""));
    if name.is_empty() {
        return Err("give the primary's name after the sentinels".to_string());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c))
    {
        return Err(format!(
            "the primary's name {name:?} may hold only letters, digits, '.', '-' and '_'"
        ));
    }
    let db: i64 = match db {
        "" => 0,
        db => db
            .parse()
            .map_err(|_| "invalid database number".to_string())?,
    };
    let mut sentinels = Vec::new();
    let mut shown = Vec::new();
    for address in hosts.split(',') {
        let (host, port) = host_port(address)?;
        shown.push(format!("{}:{port}", bracketed(&host)));
        let sentinel = client(ConnectionAddr::Tcp(host, port), None, tls.as_ref())
            .map_err(|e| crate_says(&e))?;
        sentinels.push(sentinel);
    }
    // The crate decodes credentials as it does for `redis://`: percent-encoded.
    let node = match userinfo {
        Some(userinfo) => format!("{DIRECT}{userinfo}@localhost")
            .into_connection_info()
            .map_err(|_| "the user name or password did not parse".to_string())?
            .redis_settings()
            .clone(),
        None => RedisConnectionInfo::default(),
    }
    .set_db(db);
    let node = with_password(node, password)?;
    let shown = format!("{scheme}{}/{name}/{db}", shown.join(","));
    let route = Route::Sentinel {
        sentinels,
        name: name.to_string(),
        node,
        tls,
    };
    Ok((route, shown))
}

/// A sentinel's `HOST[:PORT]` or `[IPV6][:PORT]`.
fn host_port(address: &str) -> Result<(String, u16), String> {
    let missing = || "a sentinel's host is missing".to_string();
    let (host, port) = if let Some(v6) = address.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(missing)?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':').ok_or_else(missing)?),
        };
        (host, port)
    } else {
        match address.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        }
    };
    if host.is_empty() {
        return Err(missing());
    }
    let port = match port {
        None => SENTINEL_PORT,
        Some(port) => match port.parse() {
            Ok(port) if port > 0 => port,
            _ => return Err(format!("sentinel {address:?} has no valid port")),
        },
    };
    Ok((host.to_string(), port))
}

fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// The crate's message, lowercased, without its error kind: it says "Missing hostname -
/// InvalidClientConfig".
fn crate_says(err: &redis::RedisError) -> String {
    let said = err.to_string();
    let said = said.split(" - ").next().unwrap_or_default();
    let mut chars = said.chars();
    let first = chars.next().map(|c| c.to_lowercase().to_string());
    format!("{}{}", first.unwrap_or_default(), chars.as_str())
}

/// The URL with everything between its scheme and its last `@` (credentials, whatever they
/// hold) replaced by `***`.
pub(super) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(url: &str) -> String {
        parse(url).unwrap_err().to_string()
    }

    #[test]
    fn a_direct_url_names_its_server_and_may_ask_for_replicas() {
        let target = parse("redis://u:pw@10.0.0.1:6380/3?wait=2").unwrap();
        assert_eq!(
            (target.shown.as_str(), target.replicas),
            ("redis://10.0.0.1:6380/3", 2)
        );
        assert!(matches!(target.route, Route::Direct(_)));
        assert_eq!(parse("redis://h").unwrap().shown, "redis://h:6379/0");
        assert_eq!(
            parse("redis://[::1]:7000").unwrap().shown,
            "redis://[::1]:7000/0"
        );
        assert_eq!(parse("redis://h?wait=0").unwrap().replicas, 0);
    }

    #[test]
    fn a_sentinel_url_names_the_sentinels_the_primary_and_its_database() {
        let target =
            parse("redis+sentinel://app:p%40ss@s1:26380,s2,[::1]:7/main-1/2?wait=1").unwrap();
        assert_eq!(
            target.shown,
            "redis+sentinel://s1:26380,s2:26379,[::1]:7/main-1/2"
        );
        assert_eq!(target.replicas, 1);
        let Route::Sentinel {
            sentinels,
            name,
            node,
            ..
        } = target.route
        else {
            panic!("not a sentinel route")
        };
        assert_eq!(name, "main-1");
        assert_eq!(
            (node.username(), node.password(), node.db()),
            (Some("app"), Some("p@ss"), 2)
        );
        let addresses: Vec<String> = sentinels
            .iter()
            .map(|s| s.get_connection_info().addr().to_string())
            .collect();
        assert_eq!(addresses, ["s1:26380", "s2:26379", "::1:7"]);
        let target = parse("redis+sentinel://s1/main").unwrap();
        assert_eq!(target.shown, "redis+sentinel://s1:26379/main/0");
        assert_eq!(target.replicas, 0);
    }

    #[test]
    fn a_tls_url_names_its_scheme_and_takes_a_password_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\n").unwrap();
        let url = format!(
            "rediss://snowmint@h:6380/2?password_file={}",
            file.display()
        );
        let target = parse(&url).unwrap();
        assert_eq!(target.shown, "rediss://h:6380/2");
        assert_eq!(target.trust.as_deref(), Some("a CA the system trusts"));
        let Route::Direct(client) = &target.route else {
            panic!("not a direct route")
        };
        let settings = client.get_connection_info().redis_settings();
        assert_eq!(
            (settings.username(), settings.password()),
            (Some("snowmint"), Some("s3cret"))
        );
        assert!(!format!("{target:?}").contains("s3cret"));
        let both = format!("redis://u:x@h?password_file={}", file.display());
        assert_eq!(
            message(&both),
            format!(
                "lease URL \"redis://***@h?password_file={}\": give the password in the URL or in password_file=, not both; expected {DIRECT_FORM}",
                file.display()
            )
        );
        let sentinel = format!(
            "rediss+sentinel://app@s1,s2/main?password_file={}",
            file.display()
        );
        let target = parse(&sentinel).unwrap();
        assert_eq!(target.shown, "rediss+sentinel://s1:26379,s2:26379/main/0");
        let Route::Sentinel { node, tls, .. } = target.route else {
            panic!("not a sentinel route")
        };
        assert_eq!(node.password(), Some("s3cret"));
        assert!(tls.is_some());
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let direct = format!("expected {DIRECT_FORM}");
        let sentinel = format!("expected {SENTINEL_FORM}");
        for (url, said) in [
            (
                "redis://",
                format!("lease URL \"redis://\": missing hostname; {direct}"),
            ),
            (
                "redis://:pw@h:x",
                format!("lease URL \"redis://***@h:x\": redis URL did not parse; {direct}"),
            ),
            (
                "unix:///tmp/r.sock",
                format!("lease URL \"unix:///tmp/r.sock\": {direct}"),
            ),
            (
                "redis://:pw@h?wait=two",
                format!(
                    "lease URL \"redis://***@h?wait=two\": wait=two is not a number of replicas (a whole number, 0 for none); {direct}"
                ),
            ),
            (
                "redis://h?wiat=1",
                format!(
                    "lease URL \"redis://h?wiat=1\": unknown parameter \"wiat\": the parameters are wait, password_file, tls_ca, tls_cert and tls_key; {direct}"
                ),
            ),
            (
                "redis+sentinel://u:s/cr@t@s1,s2",
                format!(
                    "lease URL \"redis+sentinel://***@s1,s2\": give the primary's name after the sentinels; {sentinel}"
                ),
            ),
            (
                "redis+sentinel://:pw@s1/",
                format!(
                    "lease URL \"redis+sentinel://***@s1/\": give the primary's name after the sentinels; {sentinel}"
                ),
            ),
            (
                "redis+sentinel://s1/my master",
                format!(
                    "lease URL \"redis+sentinel://s1/my master\": the primary's name \"my master\" may hold only letters, digits, '.', '-' and '_'; {sentinel}"
                ),
            ),
            (
                "redis+sentinel://s1,:26379/m",
                format!(
                    "lease URL \"redis+sentinel://s1,:26379/m\": a sentinel's host is missing; {sentinel}"
                ),
            ),
            (
                "redis+sentinel://s1:0/m",
                format!(
                    "lease URL \"redis+sentinel://s1:0/m\": sentinel \"s1:0\" has no valid port; {sentinel}"
                ),
            ),
            (
                "redis://:pw@h?tls_ca=/ca.pem",
                format!(
                    "lease URL \"redis://***@h?tls_ca=/ca.pem\": tls_ca=, tls_cert= and tls_key= need TLS: write rediss://; {direct}"
                ),
            ),
            (
                "rediss://h?tls_ca=/none/ca.pem",
                format!(
                    "lease URL \"rediss://h?tls_ca=/none/ca.pem\": tls_ca=/none/ca.pem: cannot read it: No such file or directory (os error 2); {direct}"
                ),
            ),
            (
                "rediss://h/#insecure",
                format!(
                    "lease URL \"rediss://h/#insecure\": a fragment (#insecure) is not taken: name the CA that signs the server's certificate with tls_ca=FILE; {direct}"
                ),
            ),
            (
                "rediss+sentinel://s1/m?tls_cert=/c.pem",
                format!(
                    "lease URL \"rediss+sentinel://s1/m?tls_cert=/c.pem\": tls_cert needs tls_key, the certificate's key; {sentinel}"
                ),
            ),
            (
                "redis+sentinel://:pw@s1/m/x",
                format!(
                    "lease URL \"redis+sentinel://***@s1/m/x\": invalid database number; {sentinel}"
                ),
            ),
        ] {
            assert_eq!(message(url), said);
        }
    }
}
