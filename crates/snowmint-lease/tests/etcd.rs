//! The etcd registry against a real etcd: the conformance suite, then what only a real
//! server can show: it going away and coming back, a holder dying, and the keeper's fence.

use crate::conformance;

use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::error::Chain;
use snowmint::{Clock, SystemClock};
use snowmint_lease::{Claim, EtcdRegistry, Keeper, Lease, LeaseError, LeaseStatus, Registry};
use snowmint_testkit::Server;
use snowmint_testkit::{Etcd, Frozen, eventually_async};
use tokio::task::block_in_place;

use conformance::SETTINGS;

/// The longest any call may take against an etcd that is gone or frozen: the client's
/// 2 s request timeout, and some slack.
use conformance::PROMPT;

fn registry(etcd: &Etcd) -> Arc<dyn Registry> {
    Arc::new(EtcdRegistry::from_url(&etcd.url()).expect("the testkit's URL is valid"))
}

fn now_ms() -> u64 {
    snowmint::WallClock.now_ms()
}

conformance::suite!({
    let etcd = Etcd::start();
    let url = etcd.url();
    (etcd, url)
});

/// Every call fails fast with `Unavailable`, whether etcd is gone or frozen, and works
/// again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_etcd_is_unavailable_promptly_then_renewals_resume() {
    let mut etcd = Etcd::start();
    let registry = registry(&etcd);
    let claim = conformance::claim("down", "pod", 8);
    let lease = registry.acquire(&claim).await.unwrap();
    registry
        .renew(&claim, &lease, now_ms() + 2_000)
        .await
        .unwrap();

    block_in_place(|| etcd.stop());
    assert_all_unavailable(&*registry, &claim, &lease, "stopped").await;
    block_in_place(|| etcd.restart());
    // etcd gives every lease a full TTL again when it restarts: this one is still held.
    registry
        .renew(&claim, &lease, now_ms() + 2_000)
        .await
        .unwrap();

    // Frozen: connections are accepted but never answered; the request timeout ends them.
    let frozen = Frozen::stop(etcd.pid().expect("etcd runs")).unwrap();
    assert_all_unavailable(&*registry, &claim, &lease, "frozen").await;
    frozen.thaw();
    match registry.renew(&claim, &lease, now_ms() + 2_000).await {
        Ok(()) | Err(LeaseError::Lost { .. }) => {}
        Err(err) => panic!("renewal after etcd thawed: {err}"),
    }
}

/// Acquire, renew and release each fail with `Unavailable` within [`PROMPT`].
async fn assert_all_unavailable(registry: &dyn Registry, claim: &Claim, lease: &Lease, etcd: &str) {
    for call in ["acquire", "renew", "release"] {
        let start = Instant::now();
        let result = match call {
            "acquire" => registry.acquire(claim).await.map(drop),
            "renew" => registry.renew(claim, lease, now_ms()).await,
            _ => registry.release(claim, lease, now_ms()).await,
        };
        let took = start.elapsed();
        let err = result.expect_err(call);
        eprintln!("{call} with etcd {etcd}: {took:?}: {err}");
        let unavailable = matches!(
            err,
            LeaseError::Unavailable {
                backend: "etcd",
                ..
            }
        );
        assert!(unavailable, "{call} with etcd {etcd}: {err:?}");
        assert!(
            Chain(&err)
                .to_string()
                .starts_with("etcd registry is unavailable: ")
        );
        assert!(took < PROMPT, "{call} with etcd {etcd} took {took:?}");
    }
}

/// A holder that dies (its keeper dropped: no release, no more renewals) keeps its worker
/// until a TTL after its last keep-alive; its successor starts past its mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_is_not_taken_over_before_its_ttl() {
    let etcd = Etcd::start();
    let registry = registry(&etcd);
    let ttl = SETTINGS.ttl.as_millis() as u64;
    let margin = SETTINGS.safety_margin.as_millis() as u64;
    let clock = Arc::new(SystemClock::new());
    let keeper = Keeper::start(
        Arc::clone(&registry),
        conformance::claim("killed", "doomed", 1),
        SETTINGS,
        clock.clone(),
    );
    let mut status = keeper.status();
    let first = conformance::held_when(&mut status, "a first renewal", |_| true).await;
    conformance::held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > first.valid_until_ms
    })
    .await;
    drop(keeper);
    let LeaseStatus::Held(last) = status.borrow().clone() else {
        panic!("the keeper held its lease when it died");
    };
    // The last keep-alive we know of was sent then; one in flight would only move it later.
    let last_sent = last.valid_until_ms + margin - ttl;

    let successor = conformance::claim("killed", "successor", 1);
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
    assert_eq!(taken.worker, last.lease.worker);
    assert!(
        taken_by >= last_sent + ttl,
        "taken over {} ms after the last keep-alive, before the {ttl} ms TTL",
        taken_by - last_sent
    );
    assert!(
        taken.high_water_ms >= Some(last.confirmed_high_water_ms),
        "{taken:?} starts before the dead holder's mark {}",
        last.confirmed_high_water_ms
    );
    assert_ne!(taken.token, last.lease.token);
}

/// etcd gives every lease a full TTL again when it restarts, so the same lease goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeper_fence_freezes_while_etcd_is_down_and_moves_once_it_is_back() {
    let mut etcd = Etcd::start();
    conformance::keeper_fence_freezes_while_the_registry_is_down(
        &mut etcd,
        "etcd registry is unavailable: ",
    )
    .await;
}

/// The conformance suite's many workers, more worker keys than one listing page holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_are_found_across_listing_pages() {
    let etcd = Etcd::start();
    conformance::many_workers_then_a_huge_field(registry(&etcd), 300).await;
}

/// A mark in the registry is input too: one that is not a plain count of milliseconds is
/// refused, naming its key and what it holds, never read as zero or as no mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_mark_is_refused_naming_its_key_and_what_it_holds() {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as BASE64;

    let etcd = Etcd::start();
    let registry = registry(&etcd);
    let http = reqwest::Client::new();
    for (i, stored) in ["soon", "+1763780112345", ""].into_iter().enumerate() {
        let ns = format!("corrupt{i}");
        let key = format!("/snowmint/{ns}/dc1/w0/hwm");
        let put = serde_json::json!({ "key": BASE64.encode(&key), "value": BASE64.encode(stored) });
        let answer = http
            .post(format!("{}/v3/kv/put", etcd.endpoint()))
            .json(&put)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{answer:?}");
        let found = if stored.is_empty() {
            "nothing".to_string()
        } else {
            format!("{stored:?}")
        };
        let claim = Claim::new(&ns, 1, 1, "pod-0", conformance::TTL);
        let err = registry.acquire(&claim).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "etcd registry is unavailable: {key} is corrupt: found {found}, expected milliseconds since the Unix epoch"
            )
        );
    }
}

/// Found by attacking the product: an etcd restored from an old copy of its data forgot a
/// live holder, and a newcomer issued its ids again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restore_floors_a_new_lease() {
    let mut etcd = snowmint_testkit::Etcd::start();
    conformance::a_restore_floors_a_new_lease(&mut etcd, "restore").await;
}

/// etcd in its production form ([`Etcd::start_secured`]): https only, client certificates
/// required, etcd's users and roles, snowmint's role limited to `/snowmint/`.
mod secured {
    use std::path::Path;

    use snowmint_lease::{LeaseSettings, registry_from_url};
    use snowmint_testkit::{ExpiringCertificate, Pair, Pki, SNOWMINT_USER, ServesCertificate};

    use super::*;

    conformance::suite!({
        let pki = Pki::new();
        let etcd = Etcd::start_secured(&pki);
        let url = etcd.url();
        ((pki, etcd), url)
    });

    /// The one line an acquisition with `url` fails with.
    async fn refusal(url: &str) -> String {
        let registry = registry_from_url(url).unwrap();
        let claim = conformance::claim("refused", "pod", 4);
        let err = registry.acquire(&claim).await.unwrap_err();
        assert!(
            matches!(
                err,
                LeaseError::Unavailable {
                    backend: "etcd",
                    ..
                }
            ),
            "{err:?}"
        );
        let said = Chain(&err).to_string();
        assert!(!said.contains('\n'), "{said}");
        said
    }

    fn url(etcd: &Etcd, ca: &Path, client: Option<&Pair>, user: Option<(&str, &Path)>) -> String {
        Etcd::secured_url_for(etcd.port(), ca, client, user)
    }

    /// Each wrong setup is refused in one line naming the registry, the member and the
    /// check that failed, and never the password.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_wrong_setup_is_refused_naming_the_check() {
        let pki = Pki::new();
        let etcd = Etcd::start_secured(&pki);
        let at = format!("etcd registry is unavailable: 127.0.0.1:{}", etcd.port());
        let (ca, client, password) = (etcd.ca(), etcd.client(), etcd.password_file());
        let user = Some((SNOWMINT_USER, password.as_path()));
        let secret = std::fs::read_to_string(&password).unwrap();

        let said = refusal(&url(&etcd, pki.foreign_ca(), Some(&client), user)).await;
        let expected = format!(
            "{at}: TLS refused: the server's certificate is not signed by tls_ca={} (UnknownIssuer): ",
            pki.foreign_ca().display()
        );
        assert!(said.starts_with(&expected), "{said}");

        let said = refusal(&url(&etcd, &ca, None, user)).await;
        let expected = format!(
            "{at}: TLS refused: the server refused our client certificate: it asks for one: give tls_cert=FILE and tls_key=FILE"
        );
        assert!(said.starts_with(&expected), "{said}");

        let foreign = pki.foreign_client("");
        let said = refusal(&url(&etcd, &ca, Some(&foreign), user)).await;
        let expected = format!(
            "{at}: TLS refused: the server refused our client certificate: tls_cert={} is not one it trusts",
            foreign.cert.display()
        );
        assert!(said.starts_with(&expected), "{said}");

        let wrong = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(wrong.path(), "not-the-password\n").unwrap();
        let said = refusal(&url(
            &etcd,
            &ca,
            Some(&client),
            Some((SNOWMINT_USER, wrong.path())),
        ))
        .await;
        assert_eq!(
            said,
            format!("{at}: authentication failed: wrong user name or password (user snowmint)")
        );
        let inline = format!(
            "etcds://snowmint:{}@127.0.0.1:{}?tls_ca={}&tls_cert={}&tls_key={}",
            "s3cret-in-url",
            etcd.port(),
            ca.display(),
            client.cert.display(),
            client.key.display()
        );
        let said = refusal(&inline).await;
        assert!(!said.contains("s3cret-in-url"), "{said}");
        assert!(said.contains("authentication failed"), "{said}");

        let said = refusal(&url(&etcd, &ca, Some(&client), None)).await;
        assert_eq!(
            said,
            format!(
                "{at}: etcd's authentication is enabled and the URL names no user: give USER@HOST with password_file=FILE"
            )
        );

        // A user whose role covers another prefix only.
        etcd.add_user("intruder", "intruder-pw", "/other/");
        let other = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(other.path(), "intruder-pw\n").unwrap();
        let said = refusal(&url(
            &etcd,
            &ca,
            Some(&client),
            Some(("intruder", other.path())),
        ))
        .await;
        assert_eq!(
            said,
            format!(
                "{at}: user intruder may not read and write the keys under /snowmint/: permission denied (its role needs readwrite on the prefix /snowmint/)"
            )
        );

        // A client certificate with a name: the gateway would not pass it on.
        let named = pki.client("snowmint");
        let said = refusal(&url(&etcd, &ca, Some(&named), user)).await;
        assert_eq!(
            said,
            format!(
                "{at}: the gateway refuses a client certificate with a common name (CN): give tls_cert= a certificate without one; the URL's user is whom etcd's roles see"
            )
        );

        // Plain text to the https port.
        let said = refusal(&format!("etcd://127.0.0.1:{}", etcd.port())).await;
        let expected = format!(
            "{at} closed the connection without an answer: plain text to a TLS port? (a member that speaks https needs etcds://): "
        );
        assert!(said.starts_with(&expected), "{said}");
        assert!(!said.contains(secret.trim()));
    }

    /// A server certificate that has expired, or names another host, is refused at the
    /// handshake, naming the check.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_or_misnamed_server_certificate_is_refused() {
        let pki = Pki::new();
        let mut etcd = Etcd::start_secured(&pki);
        let at = format!("etcd registry is unavailable: 127.0.0.1:{}", etcd.port());
        for (pair, check) in [
            (pki.expired_server(), "the server's certificate has expired"),
            (
                pki.server_for(&["other.invalid"]),
                "the server's certificate is for other.invalid, not 127.0.0.1 (NotValidForName)",
            ),
        ] {
            etcd.use_server_certificate(&pair);
            block_in_place(|| etcd.restart());
            let said = refusal(&etcd.url()).await;
            assert!(
                said.starts_with(&format!("{at}: TLS refused: {check}: ")),
                "{said}"
            );
        }
    }

    /// The registry's certificate expires while a keeper holds a lease: once a new
    /// connection meets it (etcd restarted with it), renewals fail naming the expiry, and
    /// the fence stays where the last renewal put it until the clock passes it; with a
    /// valid certificate back, renewals resume.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_certificate_that_expires_while_serving_stops_renewals_at_the_fence() {
        let pki = Pki::new();
        let etcd = Etcd::start_secured(&pki);
        let prefix = format!(
            "etcd registry is unavailable: 127.0.0.1:{}: TLS refused: the server's certificate has expired: ",
            etcd.port()
        );
        let mut expiring = ExpiringCertificate {
            valid: pki.server_also_client(),
            expired: pki.expired_server(),
            server: etcd,
        };
        conformance::keeper_fence_freezes_while_the_registry_is_down(&mut expiring, &prefix).await;
    }

    /// etcd's tokens expire unused (`--auth-token-ttl`, 1 s here): a keeper renewing less
    /// often than that authenticates again each time, within the renewal, and never misses
    /// one. (A restart, which forgets every token, is met in the test of an expiring
    /// certificate: renewals resume after it.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_keeper_renews_past_many_token_lifetimes() {
        let pki = Pki::new();
        let etcd = Etcd::start_secured_with_token_ttl(&pki, Duration::from_secs(1));
        let registry = registry_from_url(&etcd.url()).unwrap();
        let settings = LeaseSettings {
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_millis(2_500),
            safety_margin: Duration::from_secs(1),
        };
        let claim = Claim::new("tokens", 1, 4, "pod", settings.ttl).with_reach(Duration::ZERO);
        let keeper = Keeper::start(registry, claim, settings, Arc::new(SystemClock::new()));
        let mut status = keeper.status();
        let mut last = conformance::held_when(&mut status, "a first renewal", |_| true).await;
        for _ in 0..4 {
            let before = last.valid_until_ms;
            last = conformance::held_when(&mut status, "a renewal with a fresh token", |h| {
                h.valid_until_ms > before
            })
            .await;
            assert!(last.last_error.is_none(), "{:?}", last.last_error);
        }
        let failures = keeper
            .counters()
            .renew_failures
            .load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(failures, 0, "renewals failed");
    }
}
