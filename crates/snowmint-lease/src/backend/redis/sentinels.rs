//! Which server is the primary, as the sentinels say: asked before every operation, of
//! every sentinel at once, and answered by the newest configuration among a majority.
//!
//! Asking every time follows a switchover at once: the sentinels promote a replica at
//! once but demote the old primary, which goes on taking writes, only seconds later (and a
//! primary cut off from the sentinels is never demoted while the cut lasts), and what it
//! takes meanwhile is thrown away. A majority, because a sentinel cut off from the others
//! may still name the old primary; the newest configuration (the highest `config-epoch`),
//! because the sentinels that took part in the last failover know it first.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisError};

use crate::backend::CONNECT_TIMEOUT;

/// How long one sentinel may take to answer: it answers from memory, in microseconds,
/// and a silent one must leave the operation time to go on without it.
const SENTINEL_TIMEOUT: Duration = Duration::from_millis(500);

/// The sentinels of one URL, each with a connection of its own, kept between operations.
pub(super) struct SentinelLookup {
    /// The name the sentinels know the primary by.
    pub(super) name: String,
    sentinels: Vec<(Client, Mutex<Option<MultiplexedConnection>>)>,
}

/// Why the sentinels named no primary.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoPrimary {
    /// Fewer than a majority named one; the cause is the last error met.
    #[error("{named} of {asked} sentinels named a primary, fewer than a majority")]
    TooFew {
        named: usize,
        asked: usize,
        #[source]
        source: Option<RedisError>,
    },
    /// The answer could not be read.
    #[error("a sentinel answered without the primary's address: {0:?}")]
    Unreadable(HashMap<String, String>),
}

impl SentinelLookup {
    /// A lookup of the primary named `name` through the clients of `sentinels`.
    pub(super) fn new(name: String, sentinels: Vec<Client>) -> Self {
        let sentinels = sentinels
            .into_iter()
            .map(|client| (client, Mutex::new(None)))
            .collect();
        SentinelLookup { name, sentinels }
    }

    /// The address (host, port) of the primary, as the newest configuration among the
    /// sentinels that answer names it, when a majority of them answer.
    pub(super) async fn primary(&self) -> Result<(String, u16), NoPrimary> {
        let asked = self.sentinels.len();
        let answers = futures_util::future::join_all(
            self.sentinels
                .iter()
                .map(|(client, link)| self.ask(client, link)),
        )
        .await;
        let mut newest: Option<(u64, HashMap<String, String>)> = None;
        let mut named = 0;
        let mut last_error = None;
        for answer in answers {
            match answer {
                Ok(master) => {
                    named += 1;
                    let epoch = master
                        .get("config-epoch")
                        .and_then(|e| e.parse().ok())
                        .unwrap_or(0);
                    if newest.as_ref().is_none_or(|(e, _)| epoch > *e) {
                        newest = Some((epoch, master));
                    }
                }
                Err(err) => last_error = Some(err),
            }
        }
        let Some((_, master)) = newest.filter(|_| named > asked / 2) else {
            return Err(NoPrimary::TooFew {
                named,
                asked,
                source: last_error,
            });
        };
        let port = master.get("port").and_then(|p| p.parse().ok());
        match (master.get("ip"), port) {
            (Some(ip), Some(port)) => Ok((ip.clone(), port)),
            _ => Err(NoPrimary::Unreadable(master)),
        }
    }

    /// What one sentinel says of the primary (`SENTINEL MASTER`), on its kept connection,
    /// made again when it fails.
    async fn ask(
        &self,
        client: &Client,
        link: &Mutex<Option<MultiplexedConnection>>,
    ) -> Result<HashMap<String, String>, RedisError> {
        let cached = link.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut connection = match cached {
            Some(connection) => connection,
            None => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT.min(SENTINEL_TIMEOUT)))
                    .set_response_timeout(Some(SENTINEL_TIMEOUT));
                let connection = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                *link.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection.clone());
                connection
            }
        };
        let answer = redis::cmd("SENTINEL")
            .arg("MASTER")
            .arg(&self.name)
            .query_async(&mut connection)
            .await;
        if let Err(err) = &answer
            && (err.is_io_error() || err.is_timeout() || err.is_unrecoverable_error())
        {
            *link.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
        answer
    }
}
