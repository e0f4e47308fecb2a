//! `snowmint fleet` against real Redis, PostgreSQL, ZooKeeper, etcd servers and a `file:`
//! directory: one registry holding what operators must see, listed by the real binary as
//! a table and as JSON. A full pool; a second fleet issuing in the same datacenter, listed
//! under both names with the datacenter named as shared; a lease whose holder stopped
//! renewing; a record an earlier release left under its layout's name. Then what a listing
//! must not show (another application's keys), what has nothing to list (`static:3`), and
//! a registry reached over TLS by a user who may only read.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snowmint::{Bits, Layout};
use snowmint_lease::{Claim, Lease, Registry, registry_from_url};
use snowmint_testkit::{Etcd, Postgres, Redis, ZooKeeper, eventually};

use crate::support::{Snowmint, printed};

/// Twitter's layout with one worker bit: two worker ids a datacenter, so two holders fill
/// a pool.
fn two_workers() -> Layout {
    let bits = Bits {
        timestamp: 41,
        datacenter: 5,
        worker: 1,
        sequence: 16,
    };
    Layout::new(bits, 1, Layout::TWITTER.epoch_ms()).unwrap()
}

/// A claim of `namespace`'s pool of two in `datacenter`, recording [`two_workers`] and no
/// earlier release's namespace (which would add records of its own).
fn claim(namespace: &str, datacenter: u64, identity: &str, ttl: Duration) -> Claim {
    Claim {
        layout: two_workers().canonical().to_string(),
        ..Claim::new(namespace, datacenter, 2, identity, ttl)
    }
}

/// How a holder that stops renewing shows once its lease is over.
#[derive(Clone, Copy)]
enum Stopped {
    /// Its record stays, expired, until someone takes the worker id (Redis, PostgreSQL).
    Expired,
    /// Its record goes with its session or its process: the worker id shows free.
    Gone,
}

/// Holders kept alive while `snowmint fleet` lists them: the runtime their sessions and
/// locks live on, and their registries.
struct Holders {
    runtime: tokio::runtime::Runtime,
    registries: Vec<Arc<dyn Registry>>,
}

impl Holders {
    fn new() -> Holders {
        Holders {
            runtime: tokio::runtime::Runtime::new().unwrap(),
            registries: Vec::new(),
        }
    }

    /// Takes a worker id for `claim` through a registry of its own, as a process would.
    fn take(&mut self, url: &str, claim: &Claim) -> (Arc<dyn Registry>, Lease) {
        let registry = registry_from_url(url).unwrap();
        let lease = self.runtime.block_on(registry.acquire(claim)).unwrap();
        self.registries.push(Arc::clone(&registry));
        (registry, lease)
    }
}

/// `snowmint fleet --json` with `args`, parsed.
fn listed(url: &str, args: &[&str]) -> Value {
    let mut all = vec!["fleet", "--lease", url, "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&Snowmint::new().ok(&all)).expect("one JSON object")
}

/// The records of `namespace` in `datacenter`.
fn records<'a>(listing: &'a Value, namespace: &str, datacenter: u64) -> Vec<&'a Value> {
    listing["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["namespace"] == namespace && r["datacenter"] == datacenter)
        .collect()
}

/// The scene every registry lists, and what `snowmint fleet` says of it.
fn a_registry_shows_its_fleet(url: &str, stopped: Stopped) {
    let mut holders = Holders::new();
    let long = Duration::from_secs(60);
    for identity in ["web-1", "web-2"] {
        holders.take(url, &claim("fleet.default", 0, identity, long));
    }
    holders.take(url, &claim("fleet.payments", 0, "pay-1", long));
    // An earlier release's record: taken and given back under the layout's old name.
    let old = Claim::new("twitter-1288834974657", 0, 32, "old-1", long);
    let (registry, lease) = holders.take(url, &old);
    let old_mark = crate::support::now_ms() + 3_600_000;
    holders
        .runtime
        .block_on(registry.release(&old, &lease, old_mark))
        .unwrap();
    // A holder that stops renewing: its lease ends with its TTL, or with its process.
    let short = claim("fleet.default", 1, "gone", Duration::from_secs(2));
    let (gone, _) = holders.take(url, &short);
    if matches!(stopped, Stopped::Gone) {
        holders.registries.retain(|r| !Arc::ptr_eq(r, &gone));
    }
    drop(gone);

    let listing = eventually(Duration::from_secs(20), "the stopped lease's end", || {
        let listing = listed(url, &[]);
        match (records(&listing, "fleet.default", 1).first(), stopped) {
            (Some(record), _) if record["state"] != "held" => Ok(listing),
            // etcd keeps no record of a worker id that was taken and never renewed.
            (None, Stopped::Gone) => Ok(listing),
            (other, _) => Err(format!("{other:?}")),
        }
    });
    let full = records(&listing, "fleet.default", 0);
    assert_eq!(full.len(), 2, "{listing:#}");
    assert!(full.iter().all(|r| r["state"] == "held"), "{listing:#}");
    if url.starts_with("file:") {
        // The directory keeps no holder name: the lock's process is the holder.
        let pid = format!("pid {}", std::process::id());
        assert!(full.iter().all(|r| r["holder"] == *pid), "{listing:#}");
    } else {
        let mut identities: Vec<&str> = full
            .iter()
            .map(|r| r["identity"].as_str().unwrap())
            .collect();
        identities.sort_unstable();
        assert_eq!(identities, ["web-1", "web-2"], "{listing:#}");
        // identity/pid/nonce: this process's, one nonce per acquisition.
        let pid = format!("/{}/", std::process::id());
        let holders: std::collections::HashSet<&str> =
            full.iter().map(|r| r["holder"].as_str().unwrap()).collect();
        assert_eq!(holders.len(), 2, "{listing:#}");
        assert!(
            full.iter().all(|r| {
                let holder = r["holder"].as_str().unwrap();
                holder.starts_with(r["identity"].as_str().unwrap()) && holder.contains(&pid)
            }),
            "{listing:#}"
        );
    }
    let pools = listing["pools"].as_array().unwrap();
    let pool = |namespace: &str, datacenter: u64| {
        pools
            .iter()
            .find(|p| p["namespace"] == namespace && p["datacenter"] == datacenter)
            .unwrap_or_else(|| panic!("no pool {namespace} {datacenter}: {listing:#}"))
    };
    let default = pool("fleet.default", 0);
    assert_eq!(
        (&default["workers"], &default["held"], &default["free"]),
        (&2.into(), &2.into(), &0.into()),
        "{listing:#}"
    );
    assert_eq!(pool("fleet.payments", 0)["free"], 1, "{listing:#}");
    let shared = &listing["shared"][0];
    assert_eq!(shared["datacenter"], 0, "{listing:#}");
    let names: Vec<&str> = shared["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["fleet.default", "fleet.payments", "twitter-1288834974657"]
    );

    let ended = records(&listing, "fleet.default", 1);
    let state = ended.first().map(|r| r["state"].as_str().unwrap());
    match stopped {
        Stopped::Expired => assert_eq!(state, Some("expired"), "{listing:#}"),
        Stopped::Gone => assert!(matches!(state, None | Some("free")), "{listing:#}"),
    }

    let old = records(&listing, "twitter-1288834974657", 0);
    assert_eq!(old.len(), 1, "{listing:#}");
    assert_eq!(
        (
            &old[0]["earlier_release"],
            &old[0]["fleet"],
            &old[0]["high_water_ms"]
        ),
        (&true.into(), &Value::Null, &old_mark.into()),
        "{listing:#}"
    );
    assert_eq!(old[0]["lacks"][0], "fleet", "{listing:#}");

    // The same, for a person.
    let out = Snowmint::new().run(&["fleet", "--lease", url]);
    let table = printed(&out);
    assert!(out.status.success(), "{table}");
    for line in [
        "fleet default has no free worker id in datacenter 0",
        "datacenter 0 is shared by default, payments and twitter-1288834974657 (earlier release)",
        "Free worker ids",
    ] {
        assert!(table.contains(line), "{line:?} is missing from:\n{table}");
    }
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("FLEET"), "{table}");
    println!("{table}");

    // One fleet, one datacenter: the shared datacenter is still named.
    let only = listed(url, &["--fleet", "payments", "--datacenter", "0"]);
    assert_eq!(only["records"].as_array().unwrap().len(), 1, "{only:#}");
    assert_eq!(only["shared"][0]["datacenter"], 0, "{only:#}");
    drop(holders);
}

macro_rules! listing_tests {
    ($module:ident, $server:ident, $stopped:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn the_fleet_shows_its_full_pool_a_second_fleet_an_ended_lease_and_an_earlier_release()
            {
                let server = $server::start();
                a_registry_shows_its_fleet(&server.url(), $stopped);
            }
        }
    };
}

listing_tests!(redis, Redis, Stopped::Expired);
listing_tests!(postgres, Postgres, Stopped::Expired);
listing_tests!(zookeeper, ZooKeeper, Stopped::Gone);
listing_tests!(etcd, Etcd, Stopped::Gone);

/// A `file:` directory: the holders' locks, found without taking one; a holder whose
/// process ended (its registry dropped here) leaves its worker id free.
#[test]
fn a_file_registry_shows_its_fleet() {
    let dir = tempfile::tempdir().unwrap();
    a_registry_shows_its_fleet(&format!("file:{}", dir.path().display()), Stopped::Gone);
}

/// A Redis shared with another application: a listing reads snowmint's keys only.
#[test]
fn a_redis_with_other_keys_lists_only_snowmints() {
    let redis = Redis::start();
    for key in [
        "app:dc0:w1",
        "snowmint",
        "snowmintx:fleet.default:dc0:w1",
        "user:1",
    ] {
        let _: () = redis
            .command(::redis::cmd("SET").arg(key).arg("x"))
            .unwrap();
    }
    let _: () = redis
        .command(
            ::redis::cmd("HSET")
                .arg("other:fleet.default:dc0:hwm")
                .arg("1")
                .arg("1"),
        )
        .unwrap();
    let mut holders = Holders::new();
    holders.take(
        &redis.url(),
        &claim("fleet.default", 0, "web-1", Duration::from_secs(60)),
    );
    let listing = listed(&redis.url(), &[]);
    let records = listing["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{listing:#}");
    assert_eq!(records[0]["namespace"], "fleet.default", "{listing:#}");
    let table = Snowmint::new().ok(&["fleet", "--lease", &redis.url()]);
    for other in ["app", "user", "snowmintx", "other"] {
        assert!(!table.contains(other), "{other} is listed:\n{table}");
    }
}

/// `static:W` and `hostname` hand out worker ids without a registry: nothing to list,
/// said as such, as bad input; a URL of no backend and a registry that is down, named.
#[test]
fn what_cannot_be_listed_is_named() {
    let snowmint = Snowmint::new();
    let out = snowmint.run(&["fleet", "--lease", "static:3"]);
    assert_eq!(out.status.code(), Some(2), "{}", printed(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: lease URL static:3 names no registry: there is nothing to list\n"
    );
    let out = snowmint.run(&["fleet", "--lease", "consul://h:8500"]);
    assert_eq!(out.status.code(), Some(2), "{}", printed(&out));
    assert!(
        printed(&out).starts_with("error: unknown lease URL \"consul://h:8500\""),
        "{}",
        printed(&out)
    );
    let port = snowmint_testkit::free_port();
    let out = snowmint.run(&["fleet", "--lease", &format!("redis://127.0.0.1:{port}")]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(
        printed(&out).starts_with(&format!(
            "error: cannot list the redis registry: redis registry is unavailable: redis://127.0.0.1:{port}/0"
        )),
        "{}",
        printed(&out)
    );
}

/// The read-only rights docs/OPERATIONS.md gives a Redis user that lists: snowmint's keys
/// to read, the commands a listing sends, no script and no write.
const READER_ACL: &str =
    "resetkeys %R~snowmint:* resetchannels -@all +select +scan +get +pttl +hgetall +zrange +time";

/// Redis over TLS with its users: a user who may only read lists what the lease user
/// holds.
#[test]
fn a_secured_redis_lists_for_a_user_who_may_only_read() {
    let pki = snowmint_testkit::Pki::new();
    let redis = Redis::start_secured(&pki);
    let mut holders = Holders::new();
    holders.take(
        &redis.url(),
        &claim("fleet.default", 0, "web-1", Duration::from_secs(60)),
    );
    let password = "r3ad-0nly";
    let rules: Vec<&str> = READER_ACL.split(' ').collect();
    let _: () = redis
        .command(
            ::redis::cmd("ACL")
                .arg("SETUSER")
                .arg("reader")
                .arg("on")
                .arg(format!(">{password}"))
                .arg(rules.as_slice()),
        )
        .unwrap();
    let reader = format!(
        "rediss://reader:{password}@127.0.0.1:{}/0?tls_ca={}",
        redis.port(),
        redis.ca().display()
    );
    let listing = listed(&reader, &[]);
    let records = listing["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{listing:#}");
    assert_eq!(records[0]["identity"], "web-1", "{listing:#}");
    // It could not have taken one.
    let err = holders
        .runtime
        .block_on(registry_from_url(&reader).unwrap().acquire(&claim(
            "fleet.default",
            0,
            "x",
            Duration::from_secs(9),
        )))
        .unwrap_err();
    assert!(err.to_string().contains("lacks the rights"), "{err}");
}
