//! Worker-id leases on PostgreSQL: one row per worker id, taken, renewed and given back by
//! statements that compare the holder and the database's own clock, never the client's.

mod list;
mod protocol;
mod session;
mod tls;
mod url;

use std::fmt;

use snowmint::error::Chain;
use tokio::sync::Mutex;
use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use self::session::Session;
use self::url::target;
use super::CONNECT_TIMEOUT;
use crate::listing::{ListFilter, Listing};
use crate::registry::{Claim, Lease, LeaseError, Registry};
use crate::secured::redact;

/// Leases worker ids through a PostgreSQL table, created at first use if absent:
///
/// ```text
/// snowmint_workers(namespace text, datacenter bigint, worker bigint,   -- primary key
///                  holder text, identity text, expires_at timestamptz, high_water bigint,
///                  taken_at timestamptz)
/// ```
///
/// `taken_at` says when the row was last taken, for listings ([`Registry::list`]). A table
/// an earlier release made lacks it: the first server of this release to connect adds it
/// (`ALTER TABLE ... ADD COLUMN IF NOT EXISTS`, nullable, under the lock that creates the
/// table), and servers of the earlier release run on beside it, since their statements name
/// their columns. A role that may not alter the table leaves it out, and rows then show no
/// taken-at.
///
/// A row is created the first time its worker id is needed and kept for good, so its
/// high-water mark outlives every holder. A row is free when it has no holder, and
/// expired when `expires_at` is past by the database's `clock_timestamp()`. Acquiring
/// takes, in one transaction, the claim identity's row if it is free or expired, else the
/// lowest free or expired row, else creates the lowest missing worker number below
/// `workers` (or, after losing the race to create it, the first missing one from a place
/// of its own). Releasing sets the mark to the last id issued, but never below the mark the
/// lease began with.
///
/// `namespace` is the fleet's (`fleet.default`). The row of worker -1 in datacenter -1
/// records the fleet's layout (in `identity`); an acquisition with another is refused.
/// Earlier releases used the layout's name and epoch as the namespace
/// (`twitter-1288834974657`): an acquisition passes over a worker whose row is held under
/// one of the claim's [`legacy`](Claim::legacy) namespaces, and starts after the largest
/// mark left in their rows. Those of a layout that differs slightly are found once per
/// process (`namespace LIKE 'twitter-%'`, and so on for each preset and `custom`).
///
/// **Cost.** Renewing and releasing touch one row through the primary key: O(log R), R
/// being the rows of the namespace and datacenter. Acquiring walks that datacenter's part
/// of the primary-key index in worker order, stopping at the first free or expired row, or
/// when there is none at the first missing worker number: O(R) when every row is held. R
/// is about the most processes that ever held worker ids at once, not `2^worker_bits`: with
/// Baidu's 2^22 worker ids and 20,000 holders, an acquisition takes some 25 ms. Nothing is
/// looped over on the client.
///
/// **Connection.** One per registry, opened at the first call and again at the call after
/// a failure. A call takes at most 2 s, connecting included (the server's statement
/// timeout is 1.5 s, and a connection attempt 1 s unless the URL sets `connect_timeout`):
/// a registry that is down or frozen is [`LeaseError::Unavailable`] within that.
///
/// ```
/// use snowmint_lease::{PostgresRegistry, Registry};
///
/// // Nothing connects until the first acquisition.
/// let registry = PostgresRegistry::from_url("postgres://snowmint@db.internal:5432/fleet")?;
/// assert_eq!(registry.backend(), "postgres");
/// # Ok::<(), snowmint_lease::LeaseError>(())
/// ```
pub struct PostgresRegistry {
    config: Config,
    /// Hosts, ports and database, for messages: never the password.
    target: String,
    /// The TLS connector of `sslmode=`; `None` for `disable`.
    tls: Option<MakeRustlsConnect>,
    /// What the server's certificate must be signed by, for messages.
    trust: String,
    /// The open session, if any; held for the length of a call.
    session: Mutex<Option<Session>>,
    /// The namespaces of earlier releases, listed once.
    found: crate::legacy::Found,
}

impl PostgresRegistry {
    /// A registry for a `postgres://` or `postgresql://` URL, in the forms `libpq` takes
    /// (`connect_timeout`, `application_name` and the other parameters included); connects
    /// on first use.
    ///
    /// TLS is libpq's `sslmode=`, from `disable` to `verify-full` (the default `prefer`),
    /// with libpq's `sslrootcert=`, `sslcert=` and `sslkey=` or every backend's `tls_ca=`,
    /// `tls_cert=` and `tls_key=`; the password may come from a file, `password_file=`.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] for a URL that does not parse, names no host, names an
    /// unknown `sslmode`, or a file that cannot be read. The message quotes the URL with
    /// its password hidden.
    ///
    /// ```
    /// use snowmint_lease::PostgresRegistry;
    ///
    /// let err = PostgresRegistry::from_url("postgres://app:s3cret@db:port/fleet").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"lease URL "postgres://app:***@db:port/fleet": invalid connection string: invalid value for option `port`"#
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<PostgresRegistry, LeaseError> {
        let invalid =
            |problem: &str| LeaseError::Invalid(format!("lease URL {:?}: {problem}", redact(url)));
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(invalid("expected postgres://USER@HOST:PORT/DATABASE"));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let taken = tls::take(query).map_err(|problem| invalid(&one_line(&problem)))?;
        // The driver reads the rest: its own parameters, as written (re-encoding would
        // turn `options=-c%20...` into `-c+...`, which it does not decode).
        let rest: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let key = form_urlencoded::parse(pair.as_bytes()).next();
                key.is_some_and(|(key, _)| !tls::PARAMETERS.contains(&&*key))
            })
            .collect();
        let driver_url = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config: Config = driver_url
            .parse()
            .map_err(|err| invalid(&one_line(&Chain(&err).to_string())))?;
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            return Err(invalid(
                "no host; expected postgres://USER@HOST:PORT/DATABASE",
            ));
        }
        if let Some(password) = taken.password {
            if config.get_password().is_some() {
                return Err(invalid(
                    "give the password in the URL or in password_file=, not both",
                ));
            }
            config.password(password);
        }
        config.ssl_mode(taken.tls.mode.driver());
        let tls = taken
            .tls
            .client_config()
            .map_err(|problem| invalid(&one_line(&problem)))?
            .map(MakeRustlsConnect::new);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            // So operators can tell the registry's sessions apart in pg_stat_activity.
            config.application_name("snowmint");
        }
        Ok(PostgresRegistry {
            target: target(&config),
            trust: taken.tls.trust(),
            tls,
            config,
            session: Mutex::new(None),
            found: crate::legacy::Found::default(),
        })
    }
}

/// `text` with its control characters escaped: the driver quotes parts of the URL as
/// given, and an error is one line.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[async_trait::async_trait]
impl Registry for PostgresRegistry {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        self.on_session(async |s| {
            let claim = &self
                .found
                .widen(claim, || self.earlier_namespaces(s))
                .await?;
            self.acquire_on(s, claim).await
        })
        .await
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.on_session(async |s| self.renew_on(s, claim, lease, high_water_ms).await)
            .await
    }

    async fn give_back(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        self.on_session(async |s| self.release_on(s, claim, lease, mark_ms).await)
            .await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        self.list_rows(filter).await
    }
}

impl fmt::Debug for PostgresRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRegistry")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}
