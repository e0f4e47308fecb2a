//! `snowmint serve --lease` against registries in their secured form: a Redis with only a
//! TLS port and an ACL user (`rediss://`), a PostgreSQL with TLS only, SCRAM, and a role
//! that is not a superuser (`sslmode=verify-full`, the password from a file). Each gets
//! a worker id and issues; a wrong setup leaves the server not ready, saying in one line
//! which registry, where and which check, and never the password.

use std::time::Duration;

use snowmint_testkit::{Pki, Postgres, Redis};

use crate::support::{LeaseTimes, Serve, layout_lease, serve_leased};

fn serve(state: &std::path::Path, url: &str) -> Serve {
    serve_leased(state, url, "secured", LeaseTimes::SHORT, &[])
}

/// The server leases a worker id, issues, and shows no secret anywhere it shows the lease.
fn issues_without_showing(server: &mut Serve, secret: &str) {
    server.wait_ready(Duration::from_secs(20));
    let (lease, worker) = layout_lease(server);
    assert!(worker.is_some(), "a worker id: {lease}");
    let (status, body) = server.get("/v1/id");
    assert_eq!(status, 200, "{body}");
    for path in ["/v1/layout", "/readyz", "/metrics"] {
        let (_, body) = server.get(path);
        assert!(!body.contains(secret), "{path} shows the password: {body}");
    }
    assert!(
        !server.logged().contains(secret),
        "the log shows the password"
    );
}

#[test]
fn a_server_leases_from_a_redis_with_only_a_tls_port_and_an_acl_user() {
    let pki = Pki::new();
    let redis = Redis::start_secured(&pki);
    let url = redis.url();
    assert!(url.starts_with("rediss://snowmint:"), "{url}");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(state.path(), &url);
    issues_without_showing(&mut server, redis.password());
}

#[test]
fn a_server_leases_from_postgres_with_verify_full_as_a_role_that_is_not_a_superuser() {
    let pki = Pki::new();
    let postgres = Postgres::start_secured(&pki);
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, format!("{}\n", postgres.password())).unwrap();
    let url = format!(
        "postgres://snowmint@127.0.0.1:{}/snowmint?sslmode=verify-full&sslrootcert={}&password_file={}",
        postgres.port(),
        postgres.ca().display(),
        password.display()
    );
    let superuser = postgres
        .sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'snowmint'")
        .unwrap();
    assert_eq!(superuser, "f", "the lease role is not a superuser");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&state.path().join("state"), &url);
    issues_without_showing(&mut server, postgres.password());
}

#[test]
fn a_wrong_setup_leaves_the_server_not_ready_saying_which_check_failed() {
    let pki = Pki::new();
    let redis = Redis::start_secured(&pki);
    let port = redis.port();
    // A CA that did not sign the server's certificate.
    let foreign = pki.foreign_ca().display().to_string();
    let url = format!(
        "rediss://snowmint:{}@127.0.0.1:{port}/0?tls_ca={foreign}",
        redis.password()
    );
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(state.path(), &url);
    let check = format!(
        "redis registry is unavailable: rediss://127.0.0.1:{port}/0: TLS refused: the server's certificate is not signed by tls_ca={foreign} (UnknownIssuer)"
    );
    let said = snowmint_testkit::eventually(Duration::from_secs(10), "a refusal", || match server
        .get("/readyz")
    {
        (503, body) if body.contains("TLS refused") => Ok(body),
        (status, body) => Err(format!("{status} {body}")),
    });
    let ready: serde_json::Value = serde_json::from_str(&said).unwrap();
    assert_eq!(ready["status"], "not ready");
    assert_eq!(
        ready["error"],
        format!("acquiring a worker id: {check}").as_str()
    );
    let (status, body) = server.get("/v1/id");
    assert_eq!(status, 503, "{body}");
    let logged = server.logged();
    let line = logged
        .lines()
        .find(|line| line.contains("cannot acquire a worker id"))
        .unwrap_or_else(|| panic!("a warning in the log:\n{logged}"));
    assert!(line.contains(&check), "{line}");
    assert!(
        !logged.contains(redis.password()),
        "the log shows the password"
    );
    let (_, layout) = server.get("/v1/layout");
    assert!(!layout.contains(redis.password()), "{layout}");
}
