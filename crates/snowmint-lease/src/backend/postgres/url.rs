//! Where the registry is, for messages: its hosts, ports and database, never its
//! credentials. (A URL itself is shown through [`crate::redact`].)

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

#[cfg(test)]
mod tests {
    use super::super::PostgresRegistry;

    #[test]
    fn a_password_file_gives_the_password_and_may_not_repeat_the_url_s() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\n").unwrap();
        let url = format!("postgres://app@db/fleet?password_file={}", file.display());
        let registry = PostgresRegistry::from_url(&url).unwrap();
        assert_eq!(registry.config.get_password(), Some(&b"s3cret"[..]));
        assert!(!format!("{registry:?}").contains("s3cret"));
        let both = format!("postgres://app:x@db/fleet?password_file={}", file.display());
        assert_eq!(
            invalid(&both),
            format!(
                r#"lease URL "postgres://app:***@db/fleet?password_file={}": give the password in the URL or in password_file=, not both"#,
                file.display()
            )
        );
    }

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
            invalid("postgres://db/fleet?sslmode=verify_full"),
            r#"lease URL "postgres://db/fleet?sslmode=verify_full": sslmode=verify_full is not a mode: disable, allow, prefer, require, verify-ca or verify-full"#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslmode=verify-ca&sslrootcert=/none/ca.pem"),
            r#"lease URL "postgres://db/fleet?sslmode=verify-ca&sslrootcert=/none/ca.pem": sslrootcert=/none/ca.pem: cannot read it: No such file or directory (os error 2)"#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslrootcert=/a.pem&tls_ca=/b.pem"),
            r#"lease URL "postgres://db/fleet?sslrootcert=/a.pem&tls_ca=/b.pem": sslrootcert and tls_ca name the same file: give one (tls_ca is every backend's name, sslrootcert libpq's)"#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslcert=/c.pem"),
            r#"lease URL "postgres://db/fleet?sslcert=/c.pem": sslcert needs a key: sslkey= or tls_key="#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslmode=disable&sslrootcert=/a.pem"),
            r#"lease URL "postgres://db/fleet?sslmode=disable&sslrootcert=/a.pem": sslmode=disable takes no certificates: drop them, or choose a mode with TLS"#
        );
        // Every mode with TLS is taken: the certificate is checked at the handshake.
        for mode in ["disable", "allow", "prefer", "require"] {
            PostgresRegistry::from_url(&format!("postgres://db/fleet?sslmode={mode}")).unwrap();
        }
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
