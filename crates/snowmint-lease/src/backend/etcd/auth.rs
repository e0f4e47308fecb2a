//! etcd's own users and roles, through the gateway: `/v3/auth/authenticate` answers a
//! token for a user and its password, and every request carries it in its
//! `Authorization` header; the user's roles decide which keys it may read and write.
//!
//! A token expires: a simple token (etcd's default) after `--auth-token-ttl` without use
//! (5 min by default) and with its member's restart, a JWT after its own TTL. etcd 3.4
//! cannot refresh one, so the registry authenticates again: before a token is
//! [`TOKEN_AGE`] old, and at once, for one more try of the same request, when a member
//! answers that the token is invalid (it expired, or another member issued it) or that
//! the auth store changed since. Both happen within the call's deadline.
//!
//! Over https with client certificates, the member checks snowmint's certificate when it
//! connects; the gateway then passes the request on to the member's gRPC server over a
//! connection of its own, made with the member's own certificate. So a role given to
//! snowmint's certificate name would never apply: the user in the URL is what the roles
//! see.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::EtcdRegistry;
use super::gateway::{Answer, etcd_message, unavailable};
use super::url::host_of;
use crate::registry::LeaseError;
use crate::secured::User;

/// A token older than this is replaced before it is used: less than the 5 minutes that
/// both kinds of token live by default.
const TOKEN_AGE: Duration = Duration::from_secs(240);

/// Answers that say a token is no longer good: it expired, its member restarted or never
/// issued it, or the users or roles changed since it was issued.
const STALE_TOKEN: [&str; 2] = ["invalid auth token", "revision of auth store is old"];

/// A user of etcd's authentication and its current token.
pub(super) struct Auth {
    user: User,
    token: Mutex<Option<Token>>,
}

struct Token {
    /// `None` when the cluster has no authentication enabled: requests go without one.
    value: Option<String>,
    since: Instant,
}

impl Auth {
    pub(super) fn new(user: User) -> Auth {
        Auth {
            user,
            token: Mutex::new(None),
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.user.name
    }
}

/// Whether a member's answer says the token it was sent is no longer good.
pub(super) fn stale_token(answer: &Answer) -> bool {
    // A stream's answer (keep-alive) says its error with status 200.
    let failed = answer.status != 200 || answer.body.starts_with(br#"{"error""#);
    let message = etcd_message(&answer.body);
    failed && STALE_TOKEN.iter().any(|sign| message.contains(sign))
}

impl EtcdRegistry {
    /// The token to send, authenticating if there is none yet or it is old; `None` when
    /// the URL names no user, or the cluster has no authentication enabled.
    pub(super) async fn token(&self) -> Result<Option<String>, LeaseError> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        let mut token = auth.token.lock().await;
        if let Some(current) = &*token
            && current.since.elapsed() < TOKEN_AGE
        {
            return Ok(current.value.clone());
        }
        let value = self.authenticate(&auth.user).await?;
        *token = Some(Token {
            value: value.clone(),
            since: Instant::now(),
        });
        Ok(value)
    }

    /// Forgets `stale`, so that the next request authenticates again; a token another
    /// request has already replaced is kept.
    pub(super) async fn forget_token(&self, stale: &str) {
        if let Some(auth) = &self.auth {
            let mut token = auth.token.lock().await;
            if token
                .as_ref()
                .is_some_and(|t| t.value.as_deref() == Some(stale))
            {
                *token = None;
            }
        }
    }

    /// Asks the member in use for a token for `user`.
    async fn authenticate(&self, user: &User) -> Result<Option<String>, LeaseError> {
        #[derive(Deserialize)]
        struct Authenticated {
            token: String,
        }
        let body = json!({ "name": user.name, "password": user.password });
        let answer = self.send("/v3/auth/authenticate", &body, None).await?;
        let message = etcd_message(&answer.body);
        if answer.status == 200 {
            return serde_json::from_slice::<Authenticated>(&answer.body)
                .map(|authenticated| Some(authenticated.token))
                .map_err(|_| {
                    unavailable(format!(
                        "{}: authentication answered no token",
                        host_of(&answer.url)
                    ))
                });
        }
        if message.contains("authentication is not enabled") {
            tracing::debug!(user = %user.name, "etcd has no authentication enabled; requests go without a token");
            return Ok(None);
        }
        Err(self.refused(&answer))
    }

    /// A member's error answer, said for an operator: an authentication or permission
    /// failure names the user and what to give it; anything else quotes etcd.
    pub(super) fn refused(&self, answer: &Answer) -> LeaseError {
        let message = etcd_message(&answer.body);
        let host = host_of(&answer.url);
        let host = host.split_once('/').map_or(host, |(host, _)| host);
        let user = self.auth.as_ref().map(Auth::name);
        let said = if message.contains("authentication failed") {
            format!(
                "{host}: authentication failed: wrong user name or password (user {})",
                user.unwrap_or("?")
            )
        } else if message.contains("permission denied") {
            match user {
                Some(user) => format!(
                    "{host}: user {user} may not read and write the keys under /snowmint/: permission denied (its role needs readwrite on the prefix /snowmint/)"
                ),
                None => format!(
                    "{host}: permission denied: etcd checks users here; name one in the URL (USER@HOST with password_file=FILE)"
                ),
            }
        } else if message.contains("user name is empty") {
            format!(
                "{host}: etcd's authentication is enabled and the URL names no user: give USER@HOST with password_file=FILE"
            )
        } else if message.contains("CommonName of client sending a request against gateway") {
            format!(
                "{host}: the gateway refuses a client certificate with a common name (CN): give tls_cert= a certificate without one; the URL's user is whom etcd's roles see"
            )
        } else if message.contains("Client sent an HTTP request to an HTTPS server") {
            format!("{host}: plain text to a TLS port: the member speaks https, use etcds://")
        } else {
            format!("{} answered {}: {message}", answer.url, answer.status)
        };
        unavailable(said)
    }
}
