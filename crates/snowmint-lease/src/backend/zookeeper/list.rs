//! Listing a ZooKeeper registry: the children of every namespace's datacenter nodes, read
//! on a session of the listing's own, which makes no node. Every node the registry makes
//! lets anyone read it (`world:anyone`), so any session can list.
//!
//! A worker node is ephemeral: it exists exactly while the session that took it lives,
//! and its creation time (`ctime`, the ensemble's clock) is when it was taken. A holder that
//! died keeps its node until the ensemble expires its session, one session timeout after
//! the last heartbeat: until then it shows as held, and nothing is ever expired-but-untaken.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::try_join_all;
use zookeeper_client as zk;

use super::ZooKeeperRegistry;
use super::nodes::worker_of;
use crate::listing::{Lasts, ListFilter, Listing, Record, now_ms};
use crate::mark;
use crate::registry::LeaseError;

/// The session timeout a listing asks for: it holds nothing, so any the ensemble grants
/// will do; this one outlasts a listing of a big tree.
const LIST_SESSION: Duration = Duration::from_secs(10);
/// How long a whole listing may take: one round trip per namespace and datacenter, then
/// the worker and mark nodes of each datacenter read at once.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

impl ZooKeeperRegistry {
    pub(super) async fn list_nodes(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let late = || {
            let ms = LIST_TIMEOUT.as_millis();
            self.unavailable(&format!("listing took over {ms} ms"))
        };
        super::super::within(LIST_TIMEOUT, self.read_nodes(filter), late).await
    }

    async fn read_nodes(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let client = self.connect(LIST_SESSION).await?;
        let root = &self.target.root;
        let read_at_ms = now_ms();
        let mut records = Vec::new();
        let mut layouts = BTreeMap::new();
        // Besides namespaces, the root holds `incarnations`, which holds no namespace's
        // datacenter; the children of any node that is not one are passed over below.
        for namespace in self.children(&client, root).await? {
            let ns_node = format!("{root}/{namespace}");
            for child in self.children(&client, &ns_node).await? {
                if child == "layout" {
                    if let Some((data, _)) =
                        self.data(&client, &format!("{ns_node}/layout")).await?
                    {
                        layouts.insert(
                            namespace.clone(),
                            String::from_utf8_lossy(&data).into_owned(),
                        );
                    }
                    continue;
                }
                let Some(dc) = child.strip_prefix("dc").and_then(|d| d.parse::<u64>().ok()) else {
                    continue;
                };
                let dc_node = format!("{ns_node}/{child}");
                let nodes = self.children(&client, &dc_node).await?;
                records.extend(
                    self.datacenter(&client, &namespace, dc, &dc_node, &nodes)
                        .await?,
                );
            }
        }
        Ok(Listing::new(
            "zookeeper",
            read_at_ms,
            records,
            &layouts,
            filter,
        ))
    }

    /// The records of one datacenter whose children are `nodes`: its worker nodes and
    /// marks, read at once.
    async fn datacenter(
        &self,
        client: &zk::Client,
        namespace: &str,
        dc: u64,
        dc_node: &str,
        nodes: &[String],
    ) -> Result<Vec<Record>, LeaseError> {
        let workers: Vec<u64> = nodes.iter().filter_map(|n| worker_of(n)).collect();
        let marked: Vec<u64> = nodes
            .iter()
            .filter_map(|n| worker_of(n.strip_suffix(".mark")?))
            .collect();
        let worker_nodes: Vec<String> = workers.iter().map(|w| format!("{dc_node}/w{w}")).collect();
        let mark_nodes: Vec<String> = marked
            .iter()
            .map(|w| format!("{dc_node}/w{w}.mark"))
            .collect();
        let held = try_join_all(worker_nodes.iter().map(|node| self.data(client, node)));
        let marks = try_join_all(mark_nodes.iter().map(|node| self.data(client, node)));
        let (held, marks) = tokio::try_join!(held, marks)?;
        let mut by_worker: BTreeMap<u64, Record> = BTreeMap::new();
        for (worker, data) in marked.into_iter().zip(marks) {
            let record = Record::new(namespace, dc, worker, Lasts::Session);
            let stored = data.map(|(data, _)| data).unwrap_or_default();
            // An empty mark node: the worker was taken, and no id issued with it yet.
            let high_water_ms = match stored.as_slice() {
                b"" => None,
                stored => Some(mark::decode(stored).map_err(|corrupt| {
                    self.unavailable(&format!("{dc_node}/w{worker}.mark is corrupt: {corrupt}"))
                })?),
            };
            by_worker.insert(
                worker,
                Record {
                    high_water_ms,
                    ..record
                },
            );
        }
        for (worker, data) in workers.into_iter().zip(held) {
            // Gone since the listing of its datacenter: its session ended.
            let Some((holder, stat)) = data else { continue };
            let record = by_worker
                .remove(&worker)
                .unwrap_or_else(|| Record::new(namespace, dc, worker, Lasts::Session));
            let record = Record {
                taken_at_ms: u64::try_from(stat.ctime).ok(),
                ..record
            };
            by_worker.insert(worker, record.held_by(&String::from_utf8_lossy(&holder)));
        }
        Ok(by_worker.into_values().collect())
    }

    /// The children of `node`; none when it is gone.
    async fn children(&self, client: &zk::Client, node: &str) -> Result<Vec<String>, LeaseError> {
        match client.list_children(node).await {
            Ok(children) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(err) => Err(self.failed(&format!("cannot list {node}"), err)),
        }
    }

    /// The data and stat of `node`; `None` when it is gone.
    async fn data(
        &self,
        client: &zk::Client,
        node: &str,
    ) -> Result<Option<(Vec<u8>, zk::Stat)>, LeaseError> {
        match client.get_data(node).await {
            Ok(read) => Ok(Some(read)),
            Err(zk::Error::NoNode) => Ok(None),
            Err(err) => Err(self.failed(&format!("cannot read {node}"), err)),
        }
    }
}
