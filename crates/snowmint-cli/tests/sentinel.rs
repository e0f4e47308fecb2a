//! `snowmint serve --lease redis+sentinel://...` against a real Redis primary, its replica
//! and three real sentinels: the primary dies, the sentinels promote the replica, and the
//! server follows them without losing its worker id; a newcomer after the failover starts
//! past everything a holder the promoted replica may have missed could have issued.

use crate::fleet;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use snowmint_testkit::{Redis, Sentinels, Server, eventually};

use crate::support::{LeaseTimes, Serve, layout_lease, now_ms, serve_leased, twitter_ms};

/// A TTL that outlasts a failover (about two seconds), renewed every second.
const TIMES: LeaseTimes = LeaseTimes::FAILOVER;
const TTL_MS: u64 = TIMES.ttl_ms;
const MARGIN_MS: u64 = TIMES.margin_ms;

fn serve(state: &std::path::Path, url: &str, identity: &str) -> Serve {
    serve_leased(state, url, identity, TIMES, &[])
}

/// What `/v1/layout` says of the server's lease, and its worker id.
fn lease(server: &Serve) -> (serde_json::Value, u64) {
    let (lease, worker) = layout_lease(server);
    (lease, worker.expect("a worker id"))
}

#[test]
fn a_server_keeps_its_worker_id_across_a_failover_and_a_newcomer_waits_for_the_floor() {
    let mut primary = Redis::start();
    let replica = Redis::start_replica(&primary);
    let sentinels = Sentinels::start(&primary);
    let url = sentinels.url();
    let state = tempfile::tempdir().unwrap();

    let mut holder = serve(&state.path().join("holder"), &url, "holder");
    holder.wait_ready(Duration::from_secs(20));
    let (_, held) = lease(&holder);
    let mut issued = Vec::new();
    for _ in 0..5 {
        issued.extend(fleet::pull(&holder, 10_000).expect("ids before the failover"));
    }

    // Everything the primary took is on the replica; then the primary dies.
    primary.wait_for(&replica);
    let killed_ms = now_ms();
    let killed = Instant::now();
    primary.kill();
    // The holder issues on inside its fence, while the sentinels fail over.
    while killed.elapsed() < Duration::from_secs(1) {
        if let Some(ids) = fleet::pull(&holder, 10_000) {
            issued.extend(ids);
        }
    }
    let promoted = sentinels.wait_for_failover(primary.port());
    assert_eq!(promoted, replica.port());
    eprintln!("promoted {:?} after the kill", killed.elapsed());

    // The holder's renewals reach the promoted replica, which kept its lease: one
    // succeeds (the old primary is dead), on a connection to the promoted replica.
    let (before, _) = lease(&holder);
    let connected = format!("primary=127.0.0.1:{promoted}");
    eventually(
        Duration::from_secs(10),
        "a renewal on the promoted replica",
        || {
            let (now, worker) = lease(&holder);
            assert_eq!(
                (&now["state"], worker),
                (&"held".into(), held),
                "the holder lost its worker id: {now}\n{}",
                holder.logged()
            );
            if now["error"].is_null()
                && now["renewals"].as_u64() > before["renewals"].as_u64()
                && holder.logged().contains(&connected)
            {
                Ok(())
            } else {
                Err(format!("{now}\n{}", holder.logged()))
            }
        },
    );
    eprintln!(
        "renewed on the promoted replica {:?} after the kill",
        killed.elapsed()
    );
    holder.wait_ready(Duration::from_secs(10));
    let after = fleet::pull(&holder, 10_000).expect("ids after the failover");
    assert!(after[0] > *issued.last().unwrap(), "the holder went back");
    issued.extend(after);
    let logged = holder.logged();
    let acquired = logged.matches("acquired worker id").count();
    assert_eq!(acquired, 1, "the holder acquired again:\n{logged}");

    // A newcomer takes another worker id from the promoted replica, which vouches for
    // its records only since it was promoted: not ready until past the floor.
    let newcomer = serve(&state.path().join("newcomer"), &url, "newcomer");
    let started = Instant::now();
    let mut waited = None;
    eventually(
        Duration::from_secs(30),
        "the newcomer ready",
        || match newcomer.get("/readyz") {
            (200, _) => Ok(()),
            (_, body) => {
                if body.contains("behind the high-water mark") {
                    waited = Some(body.clone());
                }
                Err(body)
            }
        },
    );
    let first = fleet::pull(&newcomer, 10_000).expect("ids from the newcomer");
    eprintln!(
        "the newcomer was ready {:?} after it started",
        started.elapsed()
    );
    assert!(waited.is_some(), "the newcomer never waited for the floor");
    assert_ne!(lease(&newcomer).1, held);
    let first_ms = twitter_ms(first[0]);
    let reach_ms = TTL_MS + MARGIN_MS;
    assert!(
        first_ms > killed_ms + reach_ms,
        "the newcomer's first id is at {first_ms}, within a holder's reach of {reach_ms} ms past the kill at {killed_ms}"
    );

    let mut by = HashMap::new();
    by.insert("holder".to_string(), issued);
    by.insert("newcomer".to_string(), first);
    fleet::assert_unique_and_increasing(&by);
}
