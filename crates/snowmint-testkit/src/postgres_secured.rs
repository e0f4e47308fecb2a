//! A PostgreSQL server in its secured form, as production runs it: `ssl = on`, TCP
//! connections over TLS only (`hostssl`), passwords checked with SCRAM, and the lease
//! backend's role `snowmint`, not a superuser, owning the database (and so its `public`
//! schema) it creates its table in. A second role, `snowmint_cert`, logs in with a client
//! certificate instead of a password. The kit's own statements go as the superuser over
//! the Unix socket in the server's private directory.

use std::fs;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pki::{Pair, Pki};
use crate::postgres::{Account, DATABASE, SUPERUSER};

/// The lease backend's role, and the database it owns.
pub const LEASE_ROLE: &str = "snowmint";
/// A role that logs in with a client certificate whose common name is its name, and owns
/// a database of the same name.
pub const CERT_ROLE: &str = "snowmint_cert";

/// Who may connect: the superuser on the private socket; over TCP, TLS only, the
/// certificate role by its certificate and everyone else by password.
fn pg_hba() -> String {
    format!(
        "local all all trust\n\
         hostssl all {CERT_ROLE} 127.0.0.1/32 cert\n\
         hostssl all all 127.0.0.1/32 scram-sha-256\n"
    )
}

/// The users and files of a secured server.
pub(crate) struct Access {
    /// The lease role's password.
    pub(crate) password: String,
    /// The server's TLS files: `ca.pem`, `server.pem`, `server.key`.
    pub(crate) tls: PathBuf,
    /// Who owns them: the server's user.
    account: Option<Account>,
}

impl Access {
    /// Writes the TLS files, `pg_hba.conf` and the TLS settings into the cluster made in
    /// `dir` (its data in `dir/data`).
    pub(crate) fn new(dir: &Path, pki: &Pki, account: Option<Account>) -> Access {
        let tls = dir.join("tls");
        fs::create_dir(&tls).unwrap_or_else(|err| panic!("cannot create {}: {err}", tls.display()));
        let access = Access {
            password: std::iter::repeat_with(fastrand::alphanumeric)
                .take(24)
                .collect(),
            tls,
            account,
        };
        access.copy(pki.ca(), "ca.pem");
        access.set_certificate(&pki.server());
        let data = dir.join("data");
        let hba = data.join("pg_hba.conf");
        fs::write(&hba, pg_hba())
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", hba.display()));
        let conf = data.join("postgresql.conf");
        let mut settings = fs::read_to_string(&conf)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", conf.display()));
        settings.push_str(&format!(
            "\n# snowmint-testkit: the secured form\n\
             ssl = on\n\
             ssl_cert_file = '{}'\n\
             ssl_key_file = '{}'\n\
             ssl_ca_file = '{}'\n\
             password_encryption = 'scram-sha-256'\n",
            access.tls.join("server.pem").display(),
            access.tls.join("server.key").display(),
            access.tls.join("ca.pem").display(),
        ));
        fs::write(&conf, settings)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", conf.display()));
        access
    }

    /// Puts `pair` where the server reads its certificate at its next start.
    pub(crate) fn set_certificate(&self, pair: &Pair) {
        self.copy(&pair.cert, "server.pem");
        self.copy(&pair.key, "server.key");
    }

    /// Copies `from` into the TLS directory as `name`, owned by the server's user and
    /// readable by it alone, as PostgreSQL wants a key to be.
    fn copy(&self, from: &Path, name: &str) {
        let to = self.tls.join(name);
        fs::copy(from, &to).unwrap_or_else(|err| {
            panic!("cannot copy {} to {}: {err}", from.display(), to.display())
        });
        fs::set_permissions(&to, fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|err| panic!("cannot restrict {}: {err}", to.display()));
        if let Some(Account { uid, gid }) = self.account {
            for path in [&self.tls, &to] {
                chown(path, Some(uid), Some(gid)).unwrap_or_else(|err| {
                    panic!("cannot give {} to the postgres user: {err}", path.display())
                });
            }
        }
    }

    /// The CA that signs the server's certificate, in the server's directory.
    pub(crate) fn ca(&self) -> PathBuf {
        self.tls.join("ca.pem")
    }

    /// Makes the roles and their databases, as the superuser on the socket in `dir`.
    pub(crate) fn create_roles(&self, bin: &Path, dir: &Path, port: u16) {
        let statements = [
            format!(
                "CREATE ROLE {LEASE_ROLE} LOGIN PASSWORD '{}'",
                self.password
            ),
            format!("CREATE DATABASE {LEASE_ROLE} OWNER {LEASE_ROLE}"),
            format!("CREATE ROLE {CERT_ROLE} LOGIN"),
            format!("CREATE DATABASE {CERT_ROLE} OWNER {CERT_ROLE}"),
        ];
        for statement in statements {
            if let Err(err) = sql(bin, dir, port, &statement) {
                panic!("{statement:?} failed on the secured postgres on port {port}: {err}");
            }
        }
    }
}

/// Runs `statement` as the superuser on the socket in `dir`, with `psql`; answers what it
/// prints, unaligned and without headers, or why it failed.
pub(crate) fn sql(bin: &Path, dir: &Path, port: u16, statement: &str) -> Result<String, String> {
    let output = Command::new(bin.join("psql"))
        .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(dir)
        .args(["-p", &port.to_string(), "-U", SUPERUSER, "-d", DATABASE])
        .args(["-c", statement])
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .map_err(|err| format!("could not run psql: {err}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}
