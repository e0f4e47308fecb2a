//! Taking a worker for a new lease: the sticky one first, then free ones, each with one
//! `multi` on the lease's own session.

use std::collections::HashSet;

use zookeeper_client as zk;

use super::nodes::{self, Nodes};
use super::renew::{Written, read_mark};
use super::session::{self, Mark, Session};
use super::{RAISE_TRIES, ZooKeeperRegistry};
use crate::registry::{Claim, Lease, LeaseError};

/// Take `multi`s per acquisition beyond the sticky one; losing more means a storm of
/// acquirers, and the keeper retries after a backoff.
const MAX_TAKES: u32 = 16;

/// How one attempt to take a worker ended.
enum Take {
    Taken(Mark),
    /// Another session holds it.
    Held,
}

impl ZooKeeperRegistry {
    pub(super) async fn acquire_within(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if claim.workers == 0 {
            return Err(LeaseError::exhausted(claim));
        }
        // A session of its own: if anything below fails, dropping it closes it, and the
        // ensemble deletes whatever it took, even by a `multi` whose answer was lost.
        let client = self.connect(claim.ttl).await?;
        let claim = &self
            .found
            .widen(claim, || self.earlier_namespaces(&client))
            .await?;
        let since = self.vouched_since(&client).await?;
        // The reach counts the TTL asked for; a longer timeout granted reaches further.
        let granted = client.session_timeout();
        let claim = &claim
            .clone()
            .with_reach(claim.reach + granted.saturating_sub(claim.ttl));
        let lease = self.take_any(&client, claim).await?;
        // Recorded before the holder issues: the keeper hands the lease over on return.
        let reach = self.fleet_reach(&client, claim).await?;
        Ok(Lease {
            high_water_ms: claim.clone().reaching(reach).start_after(
                crate::legacy::after_leads(claim, lease.high_water_ms),
                since,
                lease.worker,
            ),
            ..lease
        })
    }

    /// The namespaces below the root, those of earlier releases among them: one listing
    /// of the root's children. None before the first acquisition made the root.
    async fn earlier_namespaces(&self, client: &zk::Client) -> Result<Vec<String>, LeaseError> {
        let root = &self.target.root;
        match client.list_children(root).await {
            Ok(children) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(err) => Err(self.failed(&format!("cannot list {root}"), err)),
        }
    }

    /// The largest reach of the fleet's servers, raised to the claim's.
    async fn fleet_reach(&self, client: &zk::Client, claim: &Claim) -> Result<u64, LeaseError> {
        let node = Nodes::new(&self.target.root, claim).reach;
        let own = claim.reach_ms();
        let failed = |what: &str, err| self.failed(&format!("cannot {what} {node}"), err);
        for _ in 0..super::RAISE_TRIES {
            let (recorded, version) = match client.get_data(&node).await {
                Ok((data, stat)) => (
                    std::str::from_utf8(&data)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0),
                    Some(stat.version),
                ),
                Err(zk::Error::NoNode) => (0, None),
                Err(err) => return Err(failed("read", err)),
            };
            if recorded >= own {
                return Ok(recorded);
            }
            let written = match version {
                Some(version) => client
                    .set_data(&node, own.to_string().as_bytes(), Some(version))
                    .await
                    .map(drop),
                None => client
                    .create(&node, own.to_string().as_bytes(), &self.persistent())
                    .await
                    .map(drop),
            };
            match written {
                Ok(()) => return Ok(own),
                Err(zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode) => {}
                Err(err) => return Err(failed("write", err)),
            }
        }
        Err(self.unavailable(&format!(
            "{node} changed under each of {} attempts to raise it",
            super::RAISE_TRIES
        )))
    }

    /// Since when the server that made `client`'s session vouches for its nodes (ms since
    /// the Unix epoch, on the ensemble's clock): when its present run was first seen.
    ///
    /// A server restored from an old snapshot and log forgets what holders wrote after
    /// them, and a restore restarts it. Every run of a server makes session ids from its
    /// own number and the monotonic clock's reading when it started (`myid << 56 |
    /// started_ms << 16`, counting up), so the id's top 40 bits name the run; the first
    /// acquisition that sees a run makes `{root}/incarnations/{run}`, whose creation time
    /// is that instant. What the server forgot was written before it started, earlier
    /// still.
    ///
    /// An ensemble's member starts such a run each time it starts to lead or to follow,
    /// after every election: a failover moves every member to a new run, and a member that
    /// rejoins (restarted, or reconnected to its peers) to one of its own, so the first
    /// lease taken there after it waits the reach, although a quorum lost no write. That is
    /// the price, not a hole: an ensemble that forgets (a quorum restored from backups)
    /// does so only through an election too. A holder keeps its session, and its lease,
    /// across those runs: only an acquisition asks.
    async fn vouched_since(&self, client: &zk::Client) -> Result<u64, LeaseError> {
        let dir = format!("{}/incarnations", self.target.root);
        // Bits 24.. : the server, and its start to 256 ms; the count of sessions since
        // reaches them only after 2^24 sessions, and then only moves the instant later.
        let run = (client.session_id().0 as u64) >> 24;
        let node = format!("{dir}/{run:010x}");
        let read = |err| self.failed(&format!("cannot read {node}"), err);
        // One round trip once the run is known, as it is to every acquisition but the first.
        if let Some(stat) = client.check_stat(&node).await.map_err(read)? {
            return Ok(u64::try_from(stat.ctime).unwrap_or(0));
        }
        client
            .mkdir(&dir, &self.persistent())
            .await
            .map_err(|err| self.failed(&format!("cannot make {dir}"), err))?;
        let stat = match client.create(&node, b"", &self.persistent()).await {
            Ok((stat, _)) => stat,
            Err(zk::Error::NodeExists) => match client.check_stat(&node).await.map_err(read)? {
                Some(stat) => stat,
                None => return Err(self.unavailable(&format!("{node} vanished as it was read"))),
            },
            Err(err) => return Err(self.failed(&format!("cannot make {node}"), err)),
        };
        Ok(u64::try_from(stat.ctime).unwrap_or(0))
    }

    /// Takes the sticky worker if free, else a free one, tried in an order of this
    /// acquisition's own, on `client`'s session.
    async fn take_any(&self, client: &zk::Client, claim: &Claim) -> Result<Lease, LeaseError> {
        let nodes = Nodes::new(&self.target.root, claim);
        let failed = |what: &str, err| self.failed(what, err);
        client
            .mkdir(&nodes.sticky_dir, &self.persistent())
            .await
            .map_err(|err| failed(&format!("cannot make {}", nodes.sticky_dir), err))?;
        let sticky = match client.get_data(&nodes.sticky).await {
            Ok((data, _)) => std::str::from_utf8(&data)
                .ok()
                .and_then(|w| w.parse::<u64>().ok())
                .filter(|w| *w < claim.workers),
            Err(zk::Error::NoNode) => {
                // Made empty now, so that every take can set it.
                match client.create(&nodes.sticky, b"", &self.persistent()).await {
                    Ok(_) | Err(zk::Error::NodeExists) => None,
                    Err(err) => return Err(failed(&format!("cannot make {}", nodes.sticky), err)),
                }
            }
            Err(err) => return Err(failed(&format!("cannot read {}", nodes.sticky), err)),
        };
        self.check_layout(client, claim, &nodes).await?;
        // The datacenters that earlier releases used for this layout, made if missing: the
        // worker is taken in them too, so a server of such a release started during an
        // upgrade finds it held.
        for dc in &nodes.legacy {
            client
                .mkdir(dc, &self.persistent())
                .await
                .map_err(|err| failed(&format!("cannot make {dc}"), err))?;
        }
        let children = client
            .list_children(&nodes.datacenter)
            .await
            .map_err(|err| failed(&format!("cannot list {}", nodes.datacenter), err))?;
        let mut held: HashSet<u64> = children
            .iter()
            .filter_map(|c| nodes::worker_of(c))
            .collect();
        for dc in &nodes.legacy {
            let children = client
                .list_children(dc)
                .await
                .map_err(|err| failed(&format!("cannot list {dc}"), err))?;
            held.extend(children.iter().filter_map(|c| nodes::worker_of(c)));
        }

        if let Some(worker) = sticky.filter(|w| !held.contains(w))
            && let Some(lease) = self.take(client, claim, &nodes, worker).await?
        {
            return Ok(lease);
        }
        let mut free = (0..claim.workers).filter(|w| !held.contains(w) && Some(*w) != sticky);
        let mut takes = 0;
        loop {
            let batch: Vec<u64> = free.by_ref().take(crate::backend::SPREAD).collect();
            if batch.is_empty() {
                return Err(LeaseError::exhausted(claim));
            }
            for worker in crate::backend::spread(batch) {
                if takes == MAX_TAKES {
                    return Err(self.unavailable(&format!(
                        "{MAX_TAKES} free worker ids of datacenter {} were taken by other processes first",
                        claim.datacenter
                    )));
                }
                takes += 1;
                if let Some(lease) = self.take(client, claim, &nodes, worker).await? {
                    return Ok(lease);
                }
            }
        }
    }

    /// Records the claim's layout as its fleet's unless one is recorded; then refuses a
    /// claim of another layout.
    async fn check_layout(
        &self,
        client: &zk::Client,
        claim: &Claim,
        nodes: &Nodes,
    ) -> Result<(), LeaseError> {
        let failed = |what: &str, err| self.failed(&format!("cannot {what} {}", nodes.layout), err);
        match client
            .create(&nodes.layout, claim.layout.as_bytes(), &self.persistent())
            .await
        {
            Ok(_) => return Ok(()),
            Err(zk::Error::NodeExists) => {}
            Err(err) => return Err(failed("make", err)),
        }
        let (recorded, _) = client
            .get_data(&nodes.layout)
            .await
            .map_err(|err| failed("read", err))?;
        match claim.other_layout(&String::from_utf8_lossy(&recorded)) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The largest mark that earlier releases left for `worker`, and how many left one.
    async fn left_mark(
        &self,
        client: &zk::Client,
        nodes: &Nodes,
        worker: u64,
    ) -> Result<(Option<u64>, usize), LeaseError> {
        let mut largest = None;
        let mut holding = 0;
        for dc in &nodes.legacy {
            let node = format!("{dc}/w{worker}.mark");
            match read_mark(client, &node).await {
                Ok(Some(Mark {
                    value: Some(ms), ..
                })) => {
                    holding += 1;
                    largest = largest.max(Some(ms));
                }
                Ok(_) => {}
                Err(Written::Corrupt(problem)) => return Err(self.unavailable(&problem)),
                Err(Written::Expired) => {
                    return Err(
                        self.failed(&format!("cannot read {node}"), zk::Error::SessionExpired)
                    );
                }
                Err(Written::Disconnected) => {
                    return Err(
                        self.failed(&format!("cannot read {node}"), zk::Error::ConnectionLoss)
                    );
                }
                Err(Written::Failed(err)) => {
                    return Err(self.failed(&format!("cannot read {node}"), err));
                }
            }
        }
        Ok((largest, holding))
    }

    /// Tries to take `worker` for the session of `client`; `None` if another holds it.
    /// On success the session is kept for the lease.
    async fn take(
        &self,
        client: &zk::Client,
        claim: &Claim,
        nodes: &Nodes,
        worker: u64,
    ) -> Result<Option<Lease>, LeaseError> {
        let (node, mark_node) = (nodes.worker(worker), nodes.mark(worker));
        let cannot = |err| self.failed(&format!("cannot take {node}"), err);
        for _ in 0..RAISE_TRIES {
            let mark = match read_mark(client, &mark_node).await {
                Ok(mark) => mark,
                Err(Written::Corrupt(problem)) => return Err(self.unavailable(&problem)),
                Err(Written::Expired) => return Err(cannot(zk::Error::SessionExpired)),
                Err(Written::Disconnected) => return Err(cannot(zk::Error::ConnectionLoss)),
                Err(Written::Failed(err)) => return Err(cannot(err)),
            };
            match self.take_once(client, claim, nodes, worker, mark).await {
                Ok(Some(Take::Taken(mark))) => {
                    // Read after the take, whose ephemeral nodes keep earlier releases out.
                    let (left, holding) = self.left_mark(client, nodes, worker).await?;
                    if holding > 1 {
                        tracing::warn!(
                            worker,
                            namespaces = ?claim.legacy,
                            "marks of this worker id were left under {holding} namespaces of earlier releases; starting after the largest"
                        );
                    }
                    let session = session::keep(
                        &self.sessions,
                        Session::new(client.clone(), claim.ttl, mark),
                    );
                    return Ok(Some(Lease {
                        datacenter: claim.datacenter,
                        worker,
                        high_water_ms: mark.value.max(left),
                        token: session.id(),
                    }));
                }
                Ok(Some(Take::Held)) => return Ok(None),
                // The mark changed between the read and the take: read it again.
                Ok(None) => {}
                Err(err) => return Err(cannot(err)),
            }
        }
        Err(self.unavailable(&format!(
            "{mark_node} changed under each of {RAISE_TRIES} attempts to take {node}"
        )))
    }

    /// One `multi`: the worker node, the mark as read (or a new empty one), the sticky
    /// node, and the worker's node in each datacenter an earlier release used, so that a
    /// server of that release sees the worker held too, and one that holds it makes the
    /// take fail. `Ok(None)` when the mark changed since it was read.
    async fn take_once(
        &self,
        client: &zk::Client,
        claim: &Claim,
        nodes: &Nodes,
        worker: u64,
        mark: Option<Mark>,
    ) -> Result<Option<Take>, zk::Error> {
        let (node, mark_node) = (nodes.worker(worker), nodes.mark(worker));
        let mut multi = client.new_multi_writer();
        multi.add_create(&node, claim.holder.as_bytes(), &self.ephemeral())?;
        match mark {
            Some(mark) => multi.add_check_version(&mark_node, mark.version)?,
            None => multi.add_create(&mark_node, b"", &self.persistent())?,
        }
        multi.add_set_data(&nodes.sticky, worker.to_string().as_bytes(), None)?;
        for dc in &nodes.legacy {
            multi.add_create(
                &format!("{dc}/w{worker}"),
                claim.holder.as_bytes(),
                &self.ephemeral(),
            )?;
        }
        match multi.commit().await {
            Ok(_) => Ok(Some(Take::Taken(mark.unwrap_or(Mark::NONE)))),
            Err(zk::MultiWriteError::OperationFailed {
                index,
                source: zk::Error::NodeExists,
            }) if index == 0 || index >= 3 => Ok(Some(Take::Held)),
            Err(zk::MultiWriteError::OperationFailed {
                index: 1,
                source: zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode,
            }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }
}
