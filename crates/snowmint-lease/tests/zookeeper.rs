//! The ZooKeeper registry against a real ZooKeeper server: the conformance suite, then what
//! only a real ensemble shows: the session timeout it grants, a holder whose process dies
//! without a word, the server going away and coming back, and a stale holder fenced out.
//!
//! Leases here are sessions: they expire on the server's clock, so these tests wait real
//! seconds (the conformance TTL, 2 s, which the test server grants as asked).

use crate::conformance;

use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::{Clock, SystemClock};
use snowmint_lease::{Claim, Keeper, LeaseError, LeaseSettings, Registry, ZooKeeperRegistry};
use snowmint_testkit::{Frozen, Server, ZooKeeper, eventually_async};
use tokio::task::block_in_place;
use zookeeper_client as zk;

use conformance::{SETTINGS, TTL, claim};

fn registry(zookeeper: &ZooKeeper) -> Arc<dyn Registry> {
    Arc::new(ZooKeeperRegistry::from_url(&zookeeper.url()).expect("the testkit's URL is valid"))
}

fn now_ms() -> u64 {
    snowmint::WallClock.now_ms()
}

/// A plain client of the server, for looking at the nodes and touching them by hand.
async fn client(zookeeper: &ZooKeeper) -> zk::Client {
    zk::Client::connect(&format!("127.0.0.1:{}", zookeeper.port()))
        .await
        .expect("a session with the test server")
}

conformance::suite!({
    let zookeeper = ZooKeeper::start();
    let url = zookeeper.url();
    (zookeeper, url)
});

/// The lease lasts as long as the session timeout the server grants, which it clamps to
/// 2-20 ticks; the keeper counts the fence and the marks from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_lasts_the_session_timeout_the_server_grants() {
    let zookeeper = ZooKeeper::start();
    let registry = registry(&zookeeper);
    let tick = zookeeper.tick();
    for (asked, granted) in [
        (Duration::from_secs(120), tick * 20),
        (Duration::from_millis(100), tick * 2),
        (TTL, TTL),
    ] {
        let claim = Claim::new("granted", 1, 8, "pod", asked);
        let lease = registry.acquire(&claim).await.unwrap();
        assert_eq!(
            registry.granted_ttl(&lease),
            Some(granted),
            "asked for {asked:?}"
        );
        registry.release(&claim, &lease, 0).await.unwrap();
        assert_eq!(registry.granted_ttl(&lease), None, "released");
    }

    // A keeper asking for 10 s gets 4 s, and keeps the lease with a share of it.
    let asked = LeaseSettings {
        ttl: Duration::from_secs(10),
        renew_every: Duration::from_millis(2_000),
        safety_margin: Duration::from_millis(1_000),
    };
    let clock = Arc::new(SystemClock::new());
    let keeper = Keeper::start(
        Arc::clone(&registry),
        Claim::new("granted", 1, 8, "keeper", asked.ttl),
        asked,
        clock.clone(),
    );
    let mut status = keeper.status();
    let before = clock.now_ms();
    let held = conformance::held_when(&mut status, "a lease", |_| true).await;
    let after = clock.now_ms();
    assert_eq!(held.ttl_ms, 4_000);
    // Sent between `before` and `after`: the mark 4 s on, the fence 400 ms short of it.
    assert!(
        (before + 4_000..=after + 4_000).contains(&held.confirmed_high_water_ms),
        "{held:?}"
    );
    assert_eq!(held.confirmed_high_water_ms - held.valid_until_ms, 400);
    let renewed = conformance::held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > held.valid_until_ms
    })
    .await;
    let gap = renewed.valid_until_ms - held.valid_until_ms;
    eprintln!(
        "asked for 10000 ms, granted {} ms; fence {} ms before the mark; renewed {gap} ms later",
        held.ttl_ms,
        held.confirmed_high_water_ms - held.valid_until_ms
    );
    // Every 800 ms (2 s of 10 scaled to 4), not every 2 s.
    assert!((800..1_600).contains(&gap), "renewed {gap} ms later");
    keeper.release(clock.now_ms()).await.unwrap();
}

/// A holder whose process dies (its runtime gone: no release, no closed session) keeps its
/// worker until the server expires the session, a TTL after the last heartbeat it heard,
/// which was no earlier than the last renewal; the successor starts past its mark.
#[test]
fn a_dead_holders_worker_waits_for_its_session_to_expire() {
    let zookeeper = ZooKeeper::start();
    let url = zookeeper.url();
    let ttl = snowmint::whole_ms(SETTINGS.ttl);
    let margin = snowmint::whole_ms(SETTINGS.safety_margin);
    let clock = SystemClock::new();

    // The holder lives on a runtime of its own, which dies as its process would.
    let doomed = tokio::runtime::Runtime::new().unwrap();
    let last = doomed.block_on(async {
        let registry = snowmint_lease::registry_from_url(&url).unwrap();
        let keeper = Keeper::start(
            registry,
            claim("dead", "doomed", 1),
            SETTINGS,
            Arc::new(clock),
        );
        let mut status = keeper.status();
        let first = conformance::held_when(&mut status, "a first renewal", |_| true).await;
        let last = conformance::held_when(&mut status, "a second renewal", |h| {
            h.valid_until_ms > first.valid_until_ms
        })
        .await;
        // Leaked with the runtime: a keeper dropped here would end, not die.
        std::mem::forget(keeper);
        last
    });
    doomed.shutdown_background();
    // The last renewal we know of was sent then; one in flight would only move it later.
    let last_sent = last.valid_until_ms + margin - ttl;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let registry = snowmint_lease::registry_from_url(&url).unwrap();
        let successor = claim("dead", "successor", 1);
        let taken = eventually_async(
            Duration::from_secs(10),
            "the successor taking over",
            async || match registry.acquire(&successor).await {
                Err(err @ LeaseError::Exhausted { .. }) => Err(err),
                Err(err) => panic!("the successor could not take over: {err}"),
                Ok(lease) => Ok(lease),
            },
        )
        .await;
        let taken_by = clock.now_ms();
        eprintln!(
            "taken over {} ms after the last renewal was sent",
            taken_by - last_sent
        );
        assert_eq!(taken.worker, last.lease.worker);
        assert!(
            taken_by >= last_sent + ttl,
            "taken over {} ms after the last renewal, before the {ttl} ms session timeout",
            taken_by - last_sent
        );
        assert!(
            taken.high_water_ms >= Some(last.confirmed_high_water_ms),
            "{taken:?} starts before the dead holder's mark {}",
            last.confirmed_high_water_ms
        );
        assert_ne!(taken.token, last.lease.token, "a session of its own");
        registry
            .release(&successor, &taken, now_ms())
            .await
            .unwrap();
    });
}

/// With the server stopped every call fails fast as unavailable; back within the session
/// timeout, the session goes on and so does the lease. Frozen (SIGSTOP), calls fail as
/// fast; thawed, the lease is renewed or found lost, never held twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_unavailable_promptly_and_the_session_survives_a_restart() {
    let mut zookeeper = ZooKeeper::start();
    let registry = registry(&zookeeper);
    let prefix = format!(
        "zookeeper registry is unavailable: zookeeper://127.0.0.1:{}/snowmint: ",
        zookeeper.port()
    );
    // The longest session the server grants, so a restart fits in it.
    let holder = Claim::new("down", 1, 8, "pod", zookeeper.tick() * 20);
    let lease = registry.acquire(&holder).await.unwrap();
    registry
        .renew(&holder, &lease, now_ms() + 1_000)
        .await
        .unwrap();

    block_in_place(|| zookeeper.stop());
    let other = Claim::new("down", 1, 8, "other", TTL);
    conformance::unavailable_promptly("zookeeper", "acquire", &prefix, registry.acquire(&other))
        .await;
    conformance::unavailable_promptly(
        "zookeeper",
        "renew",
        &prefix,
        registry.renew(&holder, &lease, now_ms()),
    )
    .await;
    block_in_place(|| zookeeper.restart());
    let back = Instant::now();
    renew_once_reconnected(&*registry, &holder, &lease)
        .await
        .expect("the session outlives the restart");
    eprintln!(
        "renewed {:?} after the restart, on the same session",
        back.elapsed()
    );

    // Frozen: connections are accepted but never answered; the call timeout ends them.
    let stopped = Frozen::stop(zookeeper.pid().expect("the server runs")).unwrap();
    let frozen = |what| format!("{what} while frozen");
    conformance::unavailable_promptly(
        "zookeeper",
        &frozen("acquire"),
        &prefix,
        registry.acquire(&other),
    )
    .await;
    let renew = registry.renew(&holder, &lease, now_ms());
    conformance::unavailable_promptly("zookeeper", &frozen("renew"), &prefix, renew).await;
    let release = registry.release(&holder, &lease, now_ms());
    conformance::unavailable_promptly("zookeeper", &frozen("release"), &prefix, release).await;
    stopped.thaw();
    // The release may have gone through once the server thawed, or the session expired.
    match renew_once_reconnected(&*registry, &holder, &lease).await {
        Ok(()) | Err(LeaseError::Lost { .. }) => {}
        Err(err) => panic!("renewal after the server thawed: {err}"),
    }
}

/// Renews `lease` once its session's client has reconnected, which it does by itself;
/// until then renewals say so at once. Gives up after the lease's TTL.
async fn renew_once_reconnected(
    registry: &dyn Registry,
    claim: &Claim,
    lease: &snowmint_lease::Lease,
) -> Result<(), LeaseError> {
    let started = Instant::now();
    loop {
        match registry.renew(claim, lease, now_ms() + 1_000).await {
            Err(err @ LeaseError::Unavailable { .. }) if started.elapsed() < claim.ttl => {
                let said = err.to_string();
                assert!(
                    said.ends_with("is disconnected; its client is reconnecting"),
                    "{said}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            result => return result,
        }
    }
}

/// A stale holder, whose worker node was deleted by hand and taken by another, is fenced
/// out by the mark's version once the new holder has renewed; the mark never goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_holder_is_fenced_out_by_the_marks_version() {
    let zookeeper = ZooKeeper::start();
    let registry = registry(&zookeeper);
    let stale = claim("stale", "stale", 1);
    let lease = registry.acquire(&stale).await.unwrap();
    let first = now_ms() + 1_000;
    registry.renew(&stale, &lease, first).await.unwrap();

    let by_hand = client(&zookeeper).await;
    let worker = format!("/snowmint/stale/dc1/w{}", lease.worker);
    by_hand.delete(&worker, None).await.unwrap();
    let fresh = claim("stale", "fresh", 1);
    let taken = registry.acquire(&fresh).await.unwrap();
    assert_eq!(
        (taken.worker, taken.high_water_ms),
        (lease.worker, Some(first))
    );
    let second = first + 1_000;
    registry.renew(&fresh, &taken, second).await.unwrap();

    let err = registry
        .renew(&stale, &lease, second + 5_000)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "lease on datacenter 1 worker 0 is lost: {worker} is not held by zookeeper session {:#x}",
            lease.token
        )
    );
    let (mark, _) = by_hand.get_data(&format!("{worker}.mark")).await.unwrap();
    assert_eq!(String::from_utf8(mark).unwrap(), second.to_string());
    // The new holder goes on, and the stale one's release changes nothing.
    registry.release(&stale, &lease, 0).await.unwrap();
    registry.renew(&fresh, &taken, second).await.unwrap();
    registry.release(&fresh, &taken, second).await.unwrap();
}

/// The conformance suite's many workers, past w99, the last in key order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_are_found_and_a_huge_field_is_as_quick() {
    let zookeeper = ZooKeeper::start();
    conformance::many_workers_then_a_huge_field(registry(&zookeeper), 100).await;
}

/// The keeper's fence freezes while the server is down; once it is back the keeper holds
/// a lease again (a new session, if the old one expired while the server was away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeper_fence_freezes_while_zookeeper_is_down_and_moves_once_it_is_back() {
    let mut zookeeper = ZooKeeper::start();
    conformance::keeper_fence_freezes_while_the_registry_is_down(
        &mut zookeeper,
        "zookeeper registry is unavailable: ",
    )
    .await;
}

/// A mark in the registry is input too: one that is not a plain count of milliseconds is
/// refused, naming its node and what it holds, never read as zero or as no mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_mark_is_refused_naming_its_node_and_what_it_holds() {
    let zookeeper = ZooKeeper::start();
    let registry = registry(&zookeeper);
    let by_hand = client(&zookeeper).await;
    for (i, stored) in ["soon", "+1763780112345"].into_iter().enumerate() {
        let ns = format!("corrupt{i}");
        let holder = claim(&ns, "pod-0", 1);
        let lease = registry.acquire(&holder).await.unwrap();
        registry.release(&holder, &lease, now_ms()).await.unwrap();
        let node = format!("/snowmint/{ns}/dc1/w0.mark");
        by_hand
            .set_data(&node, stored.as_bytes(), None)
            .await
            .unwrap();
        let err = registry.acquire(&holder).await.unwrap_err().to_string();
        let problem = format!(
            "{node} is corrupt: found {stored:?}, expected milliseconds since the Unix epoch"
        );
        assert!(
            err.starts_with("zookeeper registry is unavailable: ") && err.ends_with(&problem),
            "{err}"
        );
    }
}

/// Found by attacking the product: a ZooKeeper restored from an old copy of its data
/// forgot a live holder, and a newcomer issued its ids again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restore_floors_a_new_lease() {
    let mut zookeeper = snowmint_testkit::ZooKeeper::start();
    conformance::a_restore_floors_a_new_lease(&mut zookeeper, "restore").await;
}

/// ZooKeeper in its production form ([`ZooKeeper::start_secured`]): TLS with client
/// certificates, and a digest user whose nodes no one else may change.
mod secured {
    use std::path::Path;

    use snowmint::error::Chain;
    use snowmint_lease::registry_from_url;
    use snowmint_testkit::{ExpiringCertificate, Pair, Pki, ServesCertificate, ZOOKEEPER_USER};

    use super::*;

    conformance::suite!({
        let pki = Pki::new();
        let zookeeper = ZooKeeper::start_secured(&pki);
        let url = zookeeper.url();
        ((pki, zookeeper), url)
    });

    /// The one line an acquisition with `url` fails with.
    async fn refusal(url: &str, namespace: &str) -> String {
        let registry = registry_from_url(url).unwrap();
        let err = registry
            .acquire(&claim(namespace, "pod", 4))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                LeaseError::Unavailable {
                    backend: "zookeeper",
                    ..
                }
            ),
            "{err:?}"
        );
        let said = Chain(&err).to_string();
        assert!(!said.contains('\n'), "{said}");
        said
    }

    fn url(
        zookeeper: &ZooKeeper,
        ca: &Path,
        client: Option<&Pair>,
        user: Option<(&str, &Path)>,
    ) -> String {
        ZooKeeper::secured_url_for(zookeeper.secure_port(), ca, client, user)
    }

    fn password_file(password: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("{password}\n")).unwrap();
        file
    }

    /// Each wrong TLS setup is refused in one line naming the registry, the server and
    /// the check that failed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_wrong_tls_setup_is_refused_naming_the_check() {
        let pki = Pki::new();
        let mut zookeeper = ZooKeeper::start_secured(&pki);
        let port = zookeeper.secure_port();
        let at = format!(
            "zookeeper registry is unavailable: zookeepers://snowmint@127.0.0.1:{port}/snowmint: cannot open a session: 127.0.0.1:{port}"
        );
        let (ca, client, password) = (
            zookeeper.tls_ca(),
            zookeeper.tls_client(),
            zookeeper.password_file(),
        );
        let user = Some((ZOOKEEPER_USER, password.as_path()));

        let said = refusal(
            &url(&zookeeper, pki.foreign_ca(), Some(&client), user),
            "ca",
        )
        .await;
        let expected = format!(
            "{at}: TLS refused: the server's certificate is not signed by tls_ca={} (UnknownIssuer): ",
            pki.foreign_ca().display()
        );
        assert!(said.starts_with(&expected), "{said}");

        let said = refusal(&url(&zookeeper, &ca, None, user), "anonymous").await;
        let expected = format!(
            "{at}: TLS refused: the server refused our client certificate: it asks for one: give tls_cert=FILE and tls_key=FILE"
        );
        assert!(said.starts_with(&expected), "{said}");

        let foreign = pki.foreign_client("snowmint");
        let said = refusal(&url(&zookeeper, &ca, Some(&foreign), user), "foreign").await;
        let expected = format!(
            "{at}: TLS refused: the server refused our client certificate: tls_cert={} is not one it trusts",
            foreign.cert.display()
        );
        assert!(said.starts_with(&expected), "{said}");

        let plain = format!("zookeeper://127.0.0.1:{port}/snowmint");
        let said = refusal(&plain, "plain").await;
        let expected = format!(
            "zookeeper registry is unavailable: zookeeper://127.0.0.1:{port}/snowmint: cannot open a session: 127.0.0.1:{port} closed the connection without an answer: plain text to a TLS port? (a secure client port needs zookeepers://): "
        );
        assert!(said.starts_with(&expected), "{said}");

        for (pair, check) in [
            (pki.expired_server(), "the server's certificate has expired"),
            (
                pki.server_for(&["other.invalid"]),
                "the server's certificate is for other.invalid, not 127.0.0.1 (NotValidForName)",
            ),
        ] {
            zookeeper.use_server_certificate(&pair);
            block_in_place(|| zookeeper.restart());
            // A server just restarted may take longer than a call over its first
            // handshakes, which then says only that it took too long.
            let expected = format!("{at}: TLS refused: {check}: ");
            eventually_async(Duration::from_secs(10), check, async || {
                let said = refusal(&zookeeper.url(), "server").await;
                if said.starts_with(&expected) {
                    Ok(())
                } else {
                    Err(said)
                }
            })
            .await;
        }
    }

    /// The server's certificate expires while a keeper holds a lease: once the session's
    /// client must connect again (the server restarted with it), renewals fail naming the
    /// expiry, and the fence stays where the last renewal put it until the clock passes
    /// it; with a valid certificate back, renewals resume.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_certificate_that_expires_while_serving_stops_renewals_at_the_fence() {
        let pki = Pki::new();
        let zookeeper = ZooKeeper::start_secured(&pki);
        let mut expiring = ExpiringCertificate {
            valid: pki.server(),
            expired: pki.expired_server(),
            server: zookeeper,
        };
        conformance::keeper_fence_freezes_while_the_registry_is_down(
            &mut expiring,
            "TLS refused: the server's certificate has expired",
        )
        .await;
    }

    /// The nodes snowmint makes carry its digest user's ACL: another digest user, or a
    /// session without one, may read them but neither change nor delete them, and a
    /// registry of another user (or of the right user with a wrong password) is refused
    /// with `NoAuth` in plain words, never showing the password.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn other_users_can_neither_change_nor_delete_snowmints_nodes() {
        let pki = Pki::new();
        let zookeeper = ZooKeeper::start_secured(&pki);
        let registry = registry_from_url(&zookeeper.url()).unwrap();
        let held = registry.acquire(&claim("acl", "pod", 4)).await.unwrap();
        let worker = format!("/snowmint/acl/dc1/w{}", held.worker);
        let mark = format!("{worker}.mark");

        let (ca, client) = (zookeeper.tls_ca(), zookeeper.tls_client());
        let options = zk::TlsOptions::new()
            .with_pem_ca(&std::fs::read_to_string(&ca).unwrap())
            .unwrap()
            .with_pem_identity(
                &std::fs::read_to_string(&client.cert).unwrap(),
                &std::fs::read_to_string(&client.key).unwrap(),
            )
            .unwrap();
        let hosts = format!("127.0.0.1:{}", zookeeper.secure_port());
        for auth in [Some(b"intruder:guess".as_slice()), None] {
            let mut connector = zk::Client::connector().with_tls(options.clone());
            if let Some(auth) = auth {
                connector = connector.with_auth("digest", auth);
            }
            let other = connector.secure_connect(&hosts).await.unwrap();
            let (data, stat) = other.get_data(&mark).await.unwrap();
            assert!(data.len() < 32, "anyone may read the mark");
            assert_eq!(
                other.set_data(&mark, b"0", None).await.unwrap_err(),
                zk::Error::NoAuth
            );
            assert_eq!(
                other.delete(&mark, Some(stat.version)).await.unwrap_err(),
                zk::Error::NoAuth
            );
            assert_eq!(
                other.delete(&worker, None).await.unwrap_err(),
                zk::Error::NoAuth
            );
            let child = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            assert_eq!(
                other
                    .create("/snowmint/acl/dc1/w99", b"", &child)
                    .await
                    .unwrap_err(),
                zk::Error::NoAuth
            );
        }

        let at = format!(
            "zookeeper registry is unavailable: zookeepers://{{user}}@127.0.0.1:{}/snowmint: cannot make /snowmint/acl/dc1/sticky: not allowed by its ACL (NoAuth): digest user {{user}} has no right to it, or its password is wrong: not authorized",
            zookeeper.secure_port()
        );
        let intruder = password_file("intruder-pw");
        let said = refusal(
            &url(
                &zookeeper,
                &ca,
                Some(&client),
                Some(("intruder", intruder.path())),
            ),
            "acl",
        )
        .await;
        assert_eq!(said, at.replace("{user}", "intruder"));
        let wrong = password_file("s3cret-but-wrong");
        let said = refusal(
            &url(
                &zookeeper,
                &ca,
                Some(&client),
                Some((ZOOKEEPER_USER, wrong.path())),
            ),
            "acl",
        )
        .await;
        assert_eq!(said, at.replace("{user}", ZOOKEEPER_USER));
        assert!(!said.contains("s3cret"));
        registry
            .release(&claim("acl", "pod", 4), &held, now_ms())
            .await
            .unwrap();
    }
}
