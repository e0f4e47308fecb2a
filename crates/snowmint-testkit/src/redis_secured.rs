//! A `redis-server` in its secured form, as production runs it: one TCP port, speaking TLS
//! only, and users instead of the open default one. The lease backend's user may touch
//! only snowmint's keys and run only the commands it uses ([`LEASE_ACL`]); the kit's own
//! questions go as an admin user over a Unix socket in the server's private directory, so
//! that they work whatever certificate the server has. The default user is off but keeps
//! its rights ([`DEFAULT_USER_ACL`]): Redis replays its append-only file as that user.

use std::fs;
use std::path::{Path, PathBuf};

use crate::pki::{Pair, Pki};

/// The rights of the lease backend's Redis user, as an ACL rule list: snowmint's keys
/// (`snowmint:*`), no channels, and exactly the commands it sends, its scripts' included.
/// `docs/OPERATIONS.md` gives the same line.
pub const LEASE_ACL: &str = "resetkeys ~snowmint:* resetchannels -@all +evalsha +script|load +wait +role +select +del +exists +get +set +pexpire +pttl +hget +hset +zadd +zrangebyscore +time +info +scan";

/// The default user's rule list in a secured server: off, so no connection is the default
/// user unless it authenticates as another, yet with every right. Redis replays its
/// append-only file as the default user, and in a transaction (`MULTI` ... `EXEC`, as it
/// records a script that writes more than once: each acquisition and renewal of a lease)
/// it checks each command against that user's rights, and silently drops the
/// transactions the user may not run. A bare `user default off` takes every right away:
/// after a restart, Redis 7.0 answered `-NOPERM` to its own file and came back without a
/// lease or mark written since the file began. `docs/OPERATIONS.md` gives the same line.
pub const DEFAULT_USER_ACL: &str = "off ~* &* +@all";

/// The lease backend's user name in a secured server.
pub const LEASE_USER: &str = "snowmint";
/// The kit's own user, with every right.
pub(crate) const ADMIN: &str = "admin";

/// The users, files and socket of a secured server.
pub(crate) struct Access {
    /// The lease backend's password.
    pub(crate) password: String,
    /// The admin's password.
    pub(crate) admin: String,
    /// The Unix socket the kit asks its questions on.
    pub(crate) socket: PathBuf,
    /// The server's TLS files: `ca.pem`, `server.pem`, `server.key`.
    pub(crate) tls: PathBuf,
}

impl Access {
    /// Makes the users' passwords and writes the TLS files and the configuration into
    /// `dir`; answers the configuration file.
    pub(crate) fn new(dir: &Path, pki: &Pki, port: u16) -> (Access, PathBuf) {
        let tls = dir.join("tls");
        fs::create_dir(&tls).unwrap_or_else(|err| panic!("cannot create {}: {err}", tls.display()));
        fs::copy(pki.ca(), tls.join("ca.pem"))
            .unwrap_or_else(|err| panic!("cannot copy the CA into {}: {err}", tls.display()));
        let access = Access {
            password: secret(),
            admin: secret(),
            socket: dir.join("redis.sock"),
            tls,
        };
        access.set_certificate(&pki.server());
        let tls = &access.tls;
        let config = format!(
            "port 0\n\
             tls-port {port}\n\
             unixsocket {socket}\n\
             unixsocketperm 700\n\
             tls-cert-file {cert}\n\
             tls-key-file {key}\n\
             tls-ca-cert-file {ca}\n\
             tls-auth-clients optional\n\
             user default {DEFAULT_USER_ACL}\n\
             user {ADMIN} on >{admin} ~* &* +@all\n\
             user {LEASE_USER} on >{password} {LEASE_ACL}\n",
            socket = access.socket.display(),
            cert = tls.join("server.pem").display(),
            key = tls.join("server.key").display(),
            ca = tls.join("ca.pem").display(),
            admin = access.admin,
            password = access.password,
        );
        let file = dir.join("redis.conf");
        fs::write(&file, config)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", file.display()));
        (access, file)
    }

    /// Puts `pair` where the server reads its certificate at its next start.
    pub(crate) fn set_certificate(&self, pair: &Pair) {
        for (from, to) in [(&pair.cert, "server.pem"), (&pair.key, "server.key")] {
            fs::copy(from, self.tls.join(to)).unwrap_or_else(|err| {
                panic!(
                    "cannot copy {} into {}: {err}",
                    from.display(),
                    self.tls.display()
                )
            });
        }
    }

    /// The CA that signs the server's certificate, in the server's directory.
    pub(crate) fn ca(&self) -> PathBuf {
        self.tls.join("ca.pem")
    }

    /// A connection as the admin, on the Unix socket.
    pub(crate) fn connect(&self) -> redis::RedisResult<redis::Connection> {
        use redis::IntoConnectionInfo;
        let info = redis::ConnectionAddr::Unix(self.socket.clone())
            .into_connection_info()?
            .set_redis_settings(
                redis::RedisConnectionInfo::default()
                    .set_username(ADMIN)
                    .set_password(&self.admin),
            );
        let connection = redis::Client::open(info)?.get_connection()?;
        connection.set_read_timeout(Some(super::redis::QUERY_TIMEOUT))?;
        connection.set_write_timeout(Some(super::redis::QUERY_TIMEOUT))?;
        Ok(connection)
    }

    /// Whether the server answers the admin's `PING` on the socket (not while it loads).
    pub(crate) fn answers_ping(&self) -> bool {
        self.connect()
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok_and(|pong| pong == "PONG")
    }
}

/// A password of 24 letters and digits, new for each server.
fn secret() -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(24)
        .collect()
}
