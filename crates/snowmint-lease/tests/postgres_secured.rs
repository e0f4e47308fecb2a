//! The PostgreSQL registry against a real server in its secured form: `ssl = on`, TCP
//! over TLS only (`hostssl`), SCRAM passwords, and a lease role that is not a superuser
//! and owns only the database its table lives in. The conformance suite runs over it
//! (`sslmode=verify-full`); then every `sslmode`, client certificates, and each wrong
//! setup, refused in one line that names the registry, where it is and which check
//! failed; and a certificate that expires while a lease is held stops renewals.

use crate::conformance;

use std::path::Path;

use snowmint_lease::{Claim, LeaseError, PostgresRegistry, Registry};
use snowmint_testkit::{CERT_ROLE, Pki, Postgres, Server};

fn secured() -> (Pki, Postgres) {
    let pki = Pki::new();
    let postgres = Postgres::start_secured(&pki);
    (pki, postgres)
}

mod secured {
    use super::*;

    conformance::suite!({
        let (pki, postgres) = secured();
        let url = postgres.url();
        ((pki, postgres), url)
    });
}

/// The lease role's URL with `sslmode=mode` and `more` parameters.
fn url(postgres: &Postgres, mode: &str, more: &str) -> String {
    format!(
        "postgres://snowmint:{}@127.0.0.1:{}/snowmint?sslmode={mode}{more}",
        postgres.password(),
        postgres.port()
    )
}

fn ca(path: &Path) -> String {
    format!("&sslrootcert={}", path.display())
}

async fn acquires(url: &str) {
    let registry = PostgresRegistry::from_url(url).expect("a valid URL");
    let claim = conformance::claim("modes", "pod", 4);
    let lease = registry
        .acquire(&claim)
        .await
        .unwrap_or_else(|err| panic!("{url}: {}", snowmint::error::Chain(&err)));
    registry.release(&claim, &lease, 1).await.unwrap();
}

/// The one-line refusal `url` meets at its first acquisition.
async fn refusal(url: &str) -> String {
    let registry = PostgresRegistry::from_url(url).expect("a valid URL");
    let claim = Claim::new("refused", 0, 4, "pod", conformance::TTL);
    let err = registry.acquire(&claim).await.expect_err("refused");
    assert!(
        matches!(
            err,
            LeaseError::Unavailable {
                backend: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
    let said = snowmint::error::Chain(&err).to_string();
    assert!(!said.contains('\n'), "one line: {said}");
    said
}

fn at(postgres: &Postgres, database: &str) -> String {
    format!(
        "postgres registry is unavailable: 127.0.0.1:{}/{database}",
        postgres.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sslmode_means_what_it_means_to_libpq() {
    let (pki, mut postgres) = secured();
    let (good, foreign) = (postgres.ca(), pki.foreign_ca().to_path_buf());
    let plain_text = format!(
        "{}: the server takes only TLS connections, and sslmode=disable sent plain text: no pg_hba.conf entry for host \"127.0.0.1\", user \"snowmint\", database \"snowmint\", no encryption (28000)",
        at(&postgres, "snowmint")
    );
    assert_eq!(refusal(&url(&postgres, "disable", "")).await, plain_text);
    for mode in ["allow", "prefer", "require"] {
        acquires(&url(&postgres, mode, "")).await;
    }
    for mode in ["require", "verify-ca", "verify-full"] {
        acquires(&url(&postgres, mode, &ca(&good))).await;
        // The shared name of the CA parameter is taken too.
        acquires(&url(
            &postgres,
            mode,
            &format!("&tls_ca={}", good.display()),
        ))
        .await;
        assert_eq!(
            refusal(&url(&postgres, mode, &ca(&foreign))).await,
            format!(
                "{}: TLS refused: the server's certificate is not signed by sslrootcert={} (UnknownIssuer)",
                at(&postgres, "snowmint"),
                foreign.display()
            ),
            "{mode}"
        );
    }

    // A certificate for another host: verify-full alone checks the name.
    postgres.set_certificate(&pki.server_for(&["other.invalid"]));
    postgres.restart();
    acquires(&url(&postgres, "require", "")).await;
    acquires(&url(&postgres, "verify-ca", &ca(&good))).await;
    assert_eq!(
        refusal(&url(&postgres, "verify-full", &ca(&good))).await,
        format!(
            "{}: TLS refused: the server's certificate is for other.invalid, not 127.0.0.1 (NotValidForName)",
            at(&postgres, "snowmint")
        )
    );

    // An expired certificate: every mode that checks the certificate refuses it.
    postgres.set_certificate(&pki.expired_server());
    postgres.restart();
    acquires(&url(&postgres, "require", "")).await;
    for mode in ["verify-ca", "verify-full"] {
        assert_eq!(
            refusal(&url(&postgres, mode, &ca(&good))).await,
            format!(
                "{}: TLS refused: the server's certificate has expired",
                at(&postgres, "snowmint")
            ),
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_a_server_without_it_is_refused_and_prefer_falls_back() {
    let plain = Postgres::start();
    let base = format!("postgres://postgres@127.0.0.1:{}/postgres", plain.port());
    acquires(&format!("{base}?sslmode=prefer")).await;
    assert_eq!(
        refusal(&format!("{base}?sslmode=require")).await,
        format!(
            "{}: TLS to a plain port: the server does not offer TLS (ssl = off), and sslmode requires it",
            at(&plain, "postgres")
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_or_a_role_without_rights_is_refused() {
    let (_pki, postgres) = secured();
    let good = ca(&postgres.ca());
    let wrong = format!(
        "postgres://snowmint:not-it@127.0.0.1:{}/snowmint?sslmode=verify-full{good}",
        postgres.port()
    );
    let said = refusal(&wrong).await;
    assert_eq!(
        said,
        format!(
            "{}: wrong user name or password for user snowmint (28P01)",
            at(&postgres, "snowmint")
        )
    );
    assert!(!said.contains("not-it"));

    // A role that may log in, but not create or write the table.
    postgres
        .sql("CREATE ROLE reader LOGIN PASSWORD 'reader-pw'")
        .unwrap();
    let reader = format!(
        "postgres://reader:reader-pw@127.0.0.1:{}/snowmint?sslmode=verify-full{good}",
        postgres.port()
    );
    assert_eq!(
        refusal(&reader).await,
        format!(
            "{}: user reader lacks the rights: permission denied for schema public (42501)",
            at(&postgres, "snowmint")
        )
    );
    // Once the lease role made the table, the reader may still not write it.
    acquires(&postgres.url()).await;
    assert_eq!(
        refusal(&reader).await,
        format!(
            "{}: user reader lacks the rights: permission denied for table snowmint_workers (42501)",
            at(&postgres, "snowmint")
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_logs_in_and_a_missing_or_foreign_one_is_refused() {
    let (pki, postgres) = secured();
    let port = postgres.port();
    let good = ca(&postgres.ca());
    let base =
        format!("postgres://{CERT_ROLE}@127.0.0.1:{port}/{CERT_ROLE}?sslmode=verify-full{good}");
    let client = pki.client(CERT_ROLE);
    acquires(&format!(
        "{base}&sslcert={}&sslkey={}",
        client.cert.display(),
        client.key.display()
    ))
    .await;
    acquires(&format!(
        "{base}&tls_cert={}&tls_key={}",
        client.cert.display(),
        client.key.display()
    ))
    .await;
    assert_eq!(
        refusal(&base).await,
        format!(
            "{}: the server refused user {CERT_ROLE}: connection requires a valid client certificate (28000)",
            at(&postgres, CERT_ROLE)
        )
    );
    let foreign = pki.foreign_client(CERT_ROLE);
    let said = refusal(&format!(
        "{base}&sslcert={}&sslkey={}",
        foreign.cert.display(),
        foreign.key.display()
    ))
    .await;
    assert_eq!(
        said,
        format!(
            "{}: TLS refused: the server refused our client certificate (UnknownCA)",
            at(&postgres, CERT_ROLE)
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_from_a_file_is_taken() {
    let (_pki, postgres) = secured();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{}\n", postgres.password())).unwrap();
    let url = format!(
        "postgres://snowmint@127.0.0.1:{}/snowmint?sslmode=verify-full{}&password_file={}",
        postgres.port(),
        ca(&postgres.ca()),
        file.display()
    );
    acquires(&url).await;
    let registry = PostgresRegistry::from_url(&url).unwrap();
    assert!(!format!("{registry:?}").contains(postgres.password()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_that_expires_under_a_held_lease_freezes_the_fence() {
    let (pki, mut postgres) = secured();
    let (expired, valid) = (pki.expired_server(), pki.server());
    conformance::keeper_fence_freezes_while_the_certificate_has_expired(
        &mut postgres,
        |postgres| {
            postgres.set_certificate(&expired);
            postgres.restart();
        },
        |postgres| {
            postgres.set_certificate(&valid);
            postgres.restart();
        },
        ": TLS refused: the server's certificate has expired",
    )
    .await;
}
