//! The Redis registry against a real `redis-server` in its secured form: a port that
//! speaks TLS only, the open default user off, and a lease user allowed only snowmint's
//! keys and the commands it uses. The conformance suite runs over it; then each wrong
//! setup is refused in one line that names the registry, where it is and which check
//! failed, and a certificate that expires while a lease is held stops renewals.

use crate::conformance;

use std::sync::Arc;

use snowmint_lease::{Claim, LeaseError, RedisRegistry, Registry};
use snowmint_testkit::{DEFAULT_USER_ACL, LEASE_ACL, Pki, Redis, Server};

fn secured() -> (Pki, Redis) {
    let pki = Pki::new();
    let redis = Redis::start_secured(&pki);
    (pki, redis)
}

mod secured {
    use super::*;

    conformance::suite!({
        let (pki, redis) = secured();
        let url = redis.url();
        ((pki, redis), url)
    });
}

/// The one-line refusal `url` meets at its first acquisition.
async fn refusal(url: &str) -> String {
    let registry = RedisRegistry::from_url(url).expect("a valid URL");
    let claim = Claim::new("refused", 0, 4, "pod", conformance::TTL);
    let err = registry.acquire(&claim).await.expect_err("refused");
    assert!(
        matches!(
            err,
            LeaseError::Unavailable {
                backend: "redis",
                ..
            }
        ),
        "{err:?}"
    );
    let said = snowmint::error::Chain(&err).to_string();
    assert!(!said.contains('\n'), "one line: {said}");
    said
}

fn at(redis: &Redis) -> String {
    format!(
        "redis registry is unavailable: rediss://127.0.0.1:{}/0",
        redis.port()
    )
}

/// An attack turned the lease user off and killed its connections, then turned it on
/// again: the connection's reconnection had been refused, and the registry answered that
/// refusal to every later call, for good, without connecting again, so the server stayed
/// fenced until restarted. Now the next call after a refusal connects afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_turned_off_and_on_again_is_connected_again() {
    let (_pki, redis) = secured();
    let registry: Arc<dyn Registry> = Arc::new(RedisRegistry::from_url(&redis.url()).unwrap());
    let claim = conformance::claim("off-and-on", "pod", 4);
    let lease = registry.acquire(&claim).await.unwrap();
    let admin = |args: &[&str]| {
        let mut command = redis::cmd(args[0]);
        for arg in &args[1..] {
            command.arg(*arg);
        }
        redis.command::<redis::Value>(&command).unwrap();
    };
    admin(&["ACL", "SETUSER", "snowmint", "off"]);
    admin(&["CLIENT", "KILL", "USER", "snowmint"]);
    let mut refused = 0;
    for _ in 0..3 {
        if let Err(err) = registry.renew(&claim, &lease, 1).await {
            assert!(err.to_string().contains("AUTH"), "{err}");
            refused += 1;
        }
    }
    assert!(refused >= 2, "renewals went on with the user off");
    admin(&["ACL", "SETUSER", "snowmint", "on"]);
    registry
        .renew(&claim, &lease, 1)
        .await
        .expect("a renewal once the user is on again");
    registry.release(&claim, &lease, 1).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_user_with_exactly_its_rights_acquires_renews_and_releases() {
    let (_pki, redis) = secured();
    let registry: Arc<dyn Registry> = Arc::new(RedisRegistry::from_url(&redis.url()).unwrap());
    let claim = conformance::claim("rights", "pod", 4);
    let lease = registry.acquire(&claim).await.unwrap();
    registry.renew(&claim, &lease, 1).await.unwrap();
    registry.release(&claim, &lease, 1).await.unwrap();
    // The rule list the docs give is the one the server runs with.
    let operations = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/OPERATIONS.md"
    ))
    .unwrap();
    assert!(
        operations.contains(&format!("user snowmint on >PASSWORD {LEASE_ACL}")),
        "docs/OPERATIONS.md gives the ACL line"
    );
    assert!(
        operations.contains(&format!("user default {DEFAULT_USER_ACL}\n")),
        "docs/OPERATIONS.md gives the default user's line"
    );
}

/// A lease and its mark outlive a crash of the secured server: Redis replays the
/// acquisition's and renewals' transactions from its append-only file as the default
/// user, which must keep its rights (a bare `user default off` lost them all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lease_outlives_a_kill_of_the_secured_server() {
    let (_pki, mut redis) = secured();
    let registry: Arc<dyn Registry> = Arc::new(RedisRegistry::from_url(&redis.url()).unwrap());
    let claim = conformance::claim("crash", "pod", 4);
    let lease = registry.acquire(&claim).await.unwrap();
    registry.renew(&claim, &lease, 1).await.unwrap();
    tokio::task::block_in_place(|| {
        redis.kill();
        redis.restart();
    });
    let renewed = registry.renew(&claim, &lease, 2).await;
    assert!(renewed.is_ok(), "renewed after the restart: {renewed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_from_a_file_is_taken_and_never_shown() {
    let (_pki, redis) = secured();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{}\n", redis.password())).unwrap();
    let url = format!(
        "rediss://snowmint@127.0.0.1:{}/0?tls_ca={}&password_file={}",
        redis.port(),
        redis.ca().display(),
        file.display()
    );
    let registry = RedisRegistry::from_url(&url).unwrap();
    let claim = conformance::claim("file", "pod", 4);
    let lease = registry.acquire(&claim).await.unwrap();
    registry.release(&claim, &lease, 1).await.unwrap();
    assert!(!format!("{registry:?}").contains(redis.password()));
    // A wrong one is refused, and not shown either.
    std::fs::write(&file, "wrong-password\n").unwrap();
    let said = refusal(&url).await;
    assert_eq!(
        said,
        format!(
            "{}: wrong user name or password (the server refused AUTH)",
            at(&redis)
        )
    );
    assert!(!said.contains("wrong-password"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_wrong_setup_is_refused_naming_the_check() {
    let (pki, redis) = secured();
    let port = redis.port();
    let password = redis.password().to_string();
    let ca = redis.ca();

    // A CA that did not sign the server's certificate.
    let foreign = pki.foreign_ca().display().to_string();
    let url = format!("rediss://snowmint:{password}@127.0.0.1:{port}/0?tls_ca={foreign}");
    assert_eq!(
        refusal(&url).await,
        format!(
            "{}: TLS refused: the server's certificate is not signed by tls_ca={foreign} (UnknownIssuer)",
            at(&redis)
        )
    );

    // A wrong password, shown nowhere.
    let url = format!(
        "rediss://snowmint:not-it@127.0.0.1:{port}/0?tls_ca={}",
        ca.display()
    );
    let said = refusal(&url).await;
    assert_eq!(
        said,
        format!(
            "{}: wrong user name or password (the server refused AUTH)",
            at(&redis)
        )
    );
    assert!(!said.contains("not-it"));

    // A user without the rights: the commands, not the keys.
    let _: String = redis
        .command(
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg("reader")
                .arg("on")
                .arg(">reader-pw")
                .arg("~snowmint:*")
                .arg("-@all")
                .arg("+get"),
        )
        .unwrap();
    let url = format!(
        "rediss://reader:reader-pw@127.0.0.1:{port}/0?tls_ca={}",
        ca.display()
    );
    assert_eq!(
        refusal(&url).await,
        format!(
            "{}: user reader lacks the rights: this user has no permissions to run the 'evalsha' command (NOPERM)",
            at(&redis)
        )
    );
    // ... and a user whose keys are not snowmint's.
    let _: String = redis
        .command(
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg("elsewhere")
                .arg("on")
                .arg(">elsewhere-pw")
                .arg("~other:*")
                .arg("+@all"),
        )
        .unwrap();
    let url = format!(
        "rediss://elsewhere:elsewhere-pw@127.0.0.1:{port}/0?tls_ca={}",
        ca.display()
    );
    let said = refusal(&url).await;
    assert!(
        said.starts_with(&format!(
            "{}: user elsewhere lacks the rights: ",
            at(&redis)
        )) && said.ends_with(" (NOPERM)"),
        "{said}"
    );

    // Plain text to the TLS port.
    let url = format!("redis://snowmint:{password}@127.0.0.1:{port}/0");
    let said = refusal(&url).await;
    assert_eq!(
        said,
        format!(
            "redis registry is unavailable: redis://127.0.0.1:{port}/0: the server closed the connection unanswered: plain text to a TLS port? (write rediss://)"
        )
    );
    assert!(!said.contains(&password));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_a_plain_port_is_refused() {
    let pki = Pki::new();
    let plain = Redis::start();
    let url = format!(
        "rediss://127.0.0.1:{}/0?tls_ca={}",
        plain.port(),
        pki.ca().display()
    );
    // A plain Redis reads the handshake as the start of an inline command: it answers
    // with an error if the handshake's random bytes hold a line end, else it waits.
    let said = refusal(&url).await;
    let answered = format!(
        "{}: TLS refused: the server does not speak TLS on this port (TLS to a plain port?)",
        at(&plain)
    );
    let waited = format!(
        "{}: no answer within 2000 ms (a frozen server, or a plain port that leaves the TLS handshake unanswered)",
        at(&plain)
    );
    assert!(said == answered || said == waited, "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_or_another_host_s_is_refused() {
    let (pki, mut redis) = secured();
    redis.set_certificate(&pki.expired_server());
    redis.restart();
    assert_eq!(
        refusal(&redis.url()).await,
        format!(
            "{}: TLS refused: the server's certificate has expired",
            at(&redis)
        )
    );
    redis.set_certificate(&pki.server_for(&["other.invalid"]));
    redis.restart();
    assert_eq!(
        refusal(&redis.url()).await,
        format!(
            "{}: TLS refused: the server's certificate is for other.invalid, not 127.0.0.1 (NotValidForName)",
            at(&redis)
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_that_expires_under_a_held_lease_freezes_the_fence() {
    let (pki, mut redis) = secured();
    let (expired, valid) = (pki.expired_server(), pki.server());
    conformance::keeper_fence_freezes_while_the_certificate_has_expired(
        &mut redis,
        |redis| {
            redis.set_certificate(&expired);
            redis.restart();
        },
        |redis| {
            redis.set_certificate(&valid);
            redis.restart();
        },
        ": TLS refused: the server's certificate has expired",
    )
    .await;
}

/// `rediss+sentinel://` speaks TLS to the sentinels too: a sentinel whose certificate the
/// URL's CA did not sign is refused by name (here a secured Redis stands in for one, since
/// the handshake comes before any question).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_are_reached_over_tls_and_their_certificate_checked() {
    let (pki, redis) = secured();
    let port = redis.port();
    let foreign = pki.foreign_ca().display().to_string();
    let url = format!("rediss+sentinel://127.0.0.1:{port}/main?tls_ca={foreign}");
    assert_eq!(
        refusal(&url).await,
        format!(
            "redis registry is unavailable: rediss+sentinel://127.0.0.1:{port}/main/0: no primary \"main\": 0 of 1 sentinels named a primary, fewer than a majority: TLS refused: the server's certificate is not signed by tls_ca={foreign} (UnknownIssuer)"
        )
    );
}

/// A lease user with the rights an earlier release needed, without `+scan`: a server of
/// a layout cannot list the namespaces of earlier releases, so it takes no worker id, and
/// says which right is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_user_without_scan_is_refused_naming_it() {
    let (_pki, redis) = secured();
    let earlier = LEASE_ACL
        .strip_suffix(" +scan")
        .expect("the ACL ends with +scan");
    let mut setuser = redis::cmd("ACL");
    setuser
        .arg("SETUSER")
        .arg("earlier")
        .arg("on")
        .arg(">earlier-pw");
    for rule in earlier.split(' ') {
        setuser.arg(rule);
    }
    let _: String = redis.command(&setuser).unwrap();
    let url = format!(
        "rediss://earlier:earlier-pw@127.0.0.1:{}/0?tls_ca={}",
        redis.port(),
        redis.ca().display()
    );
    let registry = RedisRegistry::from_url(&url).unwrap();
    let claim = conformance::claim("earlier", "pod", 4).with_layout(&snowmint::Layout::TWITTER);
    let err = registry.acquire(&claim).await.expect_err("refused");
    assert_eq!(
        snowmint::error::Chain(&err).to_string(),
        format!(
            "{}: user earlier lacks the rights: it may not run SCAN, which lists the namespaces of earlier releases (give it +scan): ERR The user executing the script can't run this command or subcommand",
            at(&redis)
        )
    );
    // A claim that inherits nothing lists nothing, and is served.
    let plain = conformance::claim("earlier", "pod", 4);
    let lease = registry.acquire(&plain).await.unwrap();
    registry.release(&plain, &lease, 1).await.unwrap();
}
