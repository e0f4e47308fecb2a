//! Renewing and releasing: one `multi` on the lease's own session that checks the worker
//! node and writes the mark at the version the holder last wrote.

use zookeeper_client as zk;

use super::nodes::Nodes;
use super::session::{self, Mark, Session};
use super::{RAISE_TRIES, ZooKeeperRegistry};
use crate::registry::{Claim, Lease, LeaseError};

/// Renewing and releasing, each run within [`CALL_TIMEOUT`](super::CALL_TIMEOUT) by the
/// [`Registry`](crate::Registry) impl.
impl ZooKeeperRegistry {
    pub(super) async fn renew_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let lost = |reason: String| LeaseError::lost(lease, reason);
        let Some(session) = session::find(&self.sessions, lease) else {
            return Err(lost(format!(
                "zookeeper session {:#x} is closed",
                lease.token
            )));
        };
        let session = session.call();
        let nodes = Nodes::new(&self.target.root, claim);
        let worker = nodes.worker(lease.worker);
        match self
            .write_mark(&session, &nodes, lease.worker, Write::Raise(high_water_ms))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => {
                session::close(&self.sessions, session.id());
                Err(lost(format!(
                    "{worker} is not held by zookeeper session {:#x}",
                    session.id()
                )))
            }
            Err(Written::Expired) => {
                session::close(&self.sessions, session.id());
                Err(lost(format!(
                    "zookeeper session {:#x} has expired",
                    session.id()
                )))
            }
            Err(Written::Disconnected) => Err(self.disconnected(&session).await),
            Err(Written::Corrupt(problem)) => Err(self.unavailable(&problem)),
            Err(Written::Failed(err)) => Err(self.failed(&format!("cannot renew {worker}"), err)),
        }
    }

    pub(super) async fn release_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        let Some(session) = session::find(&self.sessions, lease) else {
            return Ok(());
        };
        let session = session.call();
        let nodes = Nodes::new(&self.target.root, claim);
        match self
            .write_mark(&session, &nodes, lease.worker, Write::Release(mark_ms))
            .await
        {
            // Released, or held no longer: the session has nothing more to do either way.
            Ok(_) | Err(Written::Expired) => {
                session::close(&self.sessions, session.id());
                Ok(())
            }
            Err(Written::Disconnected) => Err(self.disconnected(&session).await),
            Err(Written::Corrupt(problem)) => Err(self.unavailable(&problem)),
            Err(Written::Failed(err)) => Err(self.failed(
                &format!("cannot release {}", nodes.worker(lease.worker)),
                err,
            )),
        }
    }

    /// Writes `worker`'s mark at the version the holder knows, if the worker node still
    /// exists, and deletes the worker node too for a release: one `multi`. `Ok(false)`
    /// when the worker is no longer this session's.
    async fn write_mark(
        &self,
        session: &Session,
        nodes: &Nodes,
        worker: u64,
        write: Write,
    ) -> Result<bool, Written> {
        let (client, worker, node) = (&session.client, nodes.worker(worker), nodes.mark(worker));
        match client.state() {
            // A request would wait for the client to reconnect, past the fence perhaps: say
            // so now, and let the keeper try again while the client reconnects.
            zk::SessionState::Disconnected => return Err(Written::Disconnected),
            state if state.is_terminated() => return Err(Written::Expired),
            _ => {}
        }
        let mut mark = session.mark.lock().await;
        for _ in 0..RAISE_TRIES {
            let ms = match write {
                Write::Raise(ms) => mark.value.map_or(ms, |known| known.max(ms)),
                Write::Release(ms) => ms,
            };
            let mut multi = client.new_multi_writer();
            // The ephemeral node is never written: version 0 while it exists.
            multi.add_check_version(&worker, 0)?;
            multi.add_set_data(
                &node,
                crate::mark::encode(ms).as_bytes(),
                Some(mark.version),
            )?;
            if matches!(write, Write::Release(_)) {
                multi.add_delete(&worker, None)?;
            }
            match multi.commit().await {
                Ok(results) => {
                    if let Some(zk::MultiWriteResult::SetData { stat }) = results.get(1) {
                        *mark = Mark {
                            value: Some(ms),
                            version: stat.version,
                        };
                    }
                    return Ok(true);
                }
                Err(zk::MultiWriteError::OperationFailed {
                    index: 0,
                    source: zk::Error::NoNode | zk::Error::BadVersion,
                }) => return Ok(false),
                Err(zk::MultiWriteError::OperationFailed {
                    index: 1,
                    source: zk::Error::BadVersion,
                }) => {
                    // Someone wrote the mark: this holder, if a write's answer was lost
                    // and the session still owns the worker; then read it and go on.
                    match client.check_stat(&worker).await? {
                        Some(stat) if stat.ephemeral_owner == session.id() => {}
                        _ => return Ok(false),
                    }
                    *mark = read_mark(client, &node).await?.unwrap_or(Mark::NONE);
                }
                Err(err) => return Err(zk::Error::from(err).into()),
            }
        }
        Err(Written::Corrupt(format!(
            "{node} changed under each of {RAISE_TRIES} attempts to set it"
        )))
    }
}

/// What a call writes to a worker's mark.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// A renewal: at least this, never lower than the mark.
    Raise(u64),
    /// A release: exactly this, and the worker node goes.
    Release(u64),
}

/// Why a mark could not be written.
pub(super) enum Written {
    /// The session has ended: its worker is free, or soon will be.
    Expired,
    /// The session's client is away from the ensemble, and reconnecting.
    Disconnected,
    /// The mark node holds something else than a mark, or keeps changing.
    Corrupt(String),
    /// The client or the ensemble failed; the lease may still be held.
    Failed(zk::Error),
}

impl From<zk::Error> for Written {
    fn from(err: zk::Error) -> Written {
        match err {
            zk::Error::SessionExpired | zk::Error::ClientClosed => Written::Expired,
            err => Written::Failed(err),
        }
    }
}

/// The mark node's value and version, or `None` if there is no mark node.
pub(super) async fn read_mark(client: &zk::Client, node: &str) -> Result<Option<Mark>, Written> {
    match client.get_data(node).await {
        Ok((data, stat)) => Ok(Some(Mark {
            value: parse_mark(node, &data)?,
            version: stat.version,
        })),
        Err(zk::Error::NoNode) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// A mark as stored ([`mark::decode`](crate::mark::decode)), or nothing: a mark node is
/// created empty. Anything else is an error, never read as zero.
fn parse_mark(node: &str, data: &[u8]) -> Result<Option<u64>, Written> {
    if data.is_empty() {
        return Ok(None);
    }
    crate::mark::decode(data)
        .map(Some)
        .map_err(|corrupt| Written::Corrupt(format!("{node} is corrupt: {corrupt}")))
}
