//! The two forms of a Redis lease URL: `redis://` names one server, `redis+sentinel://` the
//! sentinels that name the primary. Both may ask that replicas acknowledge every
//! acquisition and renewal (`?wait=N`). Nothing here connects.

use redis::{Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::registry::LeaseError;

/// The scheme of a URL that names one server.
pub(super) const DIRECT: &str = "redis://";
/// The scheme of a URL that names sentinels.
pub(super) const SENTINEL: &str = "redis+sentinel://";
const DIRECT_FORM: &str = "redis://[USER:PASSWORD@]HOST[:PORT][/DB][?wait=N]";
const SENTINEL_FORM: &str =
    "redis+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/NAME[/DB][?wait=N]";
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
}

/// How the primary is found.
#[derive(Debug)]
pub(super) enum Route {
    /// At the one address the URL names.
    Direct(Client),
    /// By asking the sentinels for the primary they know as `name`.
    Sentinel {
        /// The sentinels, in the URL's order.
        sentinels: Vec<ConnectionInfo>,
        /// The name the sentinels monitor the primary under.
        name: String,
        /// The credentials and database for the primary (and its replicas); the sentinels
        /// themselves are asked without credentials.
        node: RedisConnectionInfo,
    },
}

/// Checks `url`, of either form.
pub(super) fn parse(url: &str) -> Result<Target, LeaseError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let form = if url.starts_with(SENTINEL) {
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
    let replicas = replicas(query).map_err(|why| invalid(&why))?;
    let (route, shown) = if let Some(rest) = base.strip_prefix(SENTINEL) {
        sentinel(rest).map_err(|why| invalid(&why))?
    } else if base.starts_with(DIRECT) {
        direct(base).map_err(|why| invalid(&why))?
    } else {
        return Err(invalid(""));
    };
    Ok(Target {
        route,
        shown,
        replicas,
    })
}

/// The `wait` parameter: how many replicas must acknowledge; 0 when absent.
fn replicas(query: &str) -> Result<u32, String> {
    let mut replicas = 0;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=') {
            Some(("wait", n)) => {
                replicas = n.parse().map_err(|_| {
                    format!("wait={n} is not a number of replicas (a whole number, 0 for none)")
                })?;
            }
            _ => {
                let key = pair.split('=').next().unwrap_or_default();
                return Err(format!("unknown parameter {key:?}, the only one is wait"));
            }
        }
    }
    Ok(replicas)
}

/// `redis://...`, without its parameters.
fn direct(base: &str) -> Result<(Route, String), String> {
    let client = Client::open(base).map_err(|e| crate_says(&e))?;
    let info = client.get_connection_info();
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return Err(String::new());
    };
    let shown = format!(
        "{DIRECT}{}:{port}/{}",
        bracketed(host),
        info.redis_settings().db()
    );
    Ok((Route::Direct(client), shown))
}

/// What follows `redis+sentinel://`, without its parameters.
fn sentinel(rest: &str) -> Result<(Route, String), String> {
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
        let info = ConnectionAddr::Tcp(host.clone(), port)
            .into_connection_info()
            .map_err(|e| crate_says(&e))?;
        sentinels.push(info);
        shown.push(format!("{}:{port}", bracketed(&host)));
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
    let shown = format!("{SENTINEL}{}/{name}/{db}", shown.join(","));
    let route = Route::Sentinel {
        sentinels,
        name: name.to_string(),
        node,
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
        } = target.route
        else {
            panic!("not a sentinel route")
        };
        assert_eq!(name, "main-1");
        assert_eq!(
            (node.username(), node.password(), node.db()),
            (Some("app"), Some("p@ss"), 2)
        );
        let addresses: Vec<String> = sentinels.iter().map(|s| s.addr().to_string()).collect();
        assert_eq!(addresses, ["s1:26380", "s2:26379", "::1:7"]);
        let target = parse("redis+sentinel://s1/main").unwrap();
        assert_eq!(target.shown, "redis+sentinel://s1:26379/main/0");
        assert_eq!(target.replicas, 0);
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let direct = "expected redis://[USER:PASSWORD@]HOST[:PORT][/DB][?wait=N]";
        let sentinel = "expected redis+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/NAME[/DB][?wait=N]";
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
                    "lease URL \"redis://h?wiat=1\": unknown parameter \"wiat\", the only one is wait; {direct}"
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
