//! Where the registry is, for messages: its hosts, ports and database, and its URL with
//! the password hidden.

use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// PostgreSQL's port when the URL names none.
const DEFAULT_PORT: u16 = 5432;

/// `host:port,host:port/database`: where the registry is, without credentials.
pub(super) fn target(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| {
        ports
            .get(i)
            .or(ports.first())
            .copied()
            .unwrap_or(DEFAULT_PORT)
    };
    let hosts: Vec<String> = if config.get_hosts().is_empty() {
        let addrs = config.get_hostaddrs().iter();
        addrs
            .enumerate()
            .map(|(i, a)| format!("{a}:{}", port(i)))
            .collect()
    } else {
        let hosts = config.get_hosts().iter().enumerate();
        hosts
            .map(|(i, host)| match host {
                Host::Tcp(name) => format!("{name}:{}", port(i)),
                Host::Unix(dir) => format!("{}:{}", dir.display(), port(i)),
            })
            .collect()
    };
    format!("{}/{}", hosts.join(","), config.get_dbname().unwrap_or(""))
}

/// The URL with its password, in the user part or as a parameter, replaced by `***`.
pub(super) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{hosts}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<&str> = query
                .split('&')
                .map(|p| {
                    if p.starts_with("password=") {
                        "password=***"
                    } else {
                        p
                    }
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::super::PostgresRegistry;

    fn invalid(url: &str) -> String {
        PostgresRegistry::from_url(url).unwrap_err().to_string()
    }

    #[test]
    fn urls_are_checked_without_connecting_and_passwords_never_shown() {
        let registry =
            PostgresRegistry::from_url("postgresql://app:s3cret@db1:5433,db2/fleet?sslmode=prefer")
                .unwrap();
        let debug = format!("{registry:?}");
        assert_eq!(
            debug,
            r#"PostgresRegistry { target: "db1:5433,db2:5432/fleet", .. }"#
        );
        assert_eq!(
            invalid("postgres://app:s3cret@db:x/fleet?password=s3cret&sslmode=disable"),
            r#"lease URL "postgres://app:***@db:x/fleet?password=***&sslmode=disable": invalid connection string: invalid value for option `port`"#
        );
        assert_eq!(
            invalid("postgres:///fleet"),
            r#"lease URL "postgres:///fleet": no host; expected postgres://USER@HOST:PORT/DATABASE"#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslmode=require"),
            r#"lease URL "postgres://db/fleet?sslmode=require": sslmode=require needs TLS, which the postgres lease backend does not support; use sslmode=prefer or sslmode=disable"#
        );
        assert_eq!(
            invalid("host=db user=app"),
            r#"lease URL "host=db user=app": expected postgres://USER@HOST:PORT/DATABASE"#
        );
    }

    /// The driver quotes an unknown option as given, control characters included: the
    /// error must stay one line (found by the `lease_url` fuzz target).
    #[test]
    fn an_error_is_one_line_whatever_the_url_holds() {
        assert_eq!(
            invalid("postgres://db/fleet?a\nb\u{19}=1"),
            r#"lease URL "postgres://db/fleet?a\nb\u{19}=1": invalid connection string: unknown option `a\nb\u{19}`"#
        );
    }
}
