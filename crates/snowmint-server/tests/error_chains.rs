//! Every cause said once: a sample of real errors, from the core up to the server, walked
//! along their `source()` chains. Each of the project's messages says what failed at its
//! own layer and leaves the cause to `source()`; the line `error::Chain` prints (what the
//! command, the logs and the JSON errors show) is pinned here.

use std::error::Error;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use snowmint::error::Chain;
use snowmint::serial::{BizCode, Template, Zone};
use snowmint::{Bits, Generator, Id, Layout, ManualClock, Store, StoreError};
use snowmint_lease::{Claim, FileStore, LeasedStore};
use snowmint_server::{ApiError, Config, IdSource, ServeError, Settings};

/// 2026-11-22T00:00:00Z.
const T: u64 = 1_795_305_600_000;

/// Whether `err` is one of the project's own types, whose messages this test holds to the
/// rule (a library's may repeat its cause; `Chain` then says it once).
fn ours(err: &(dyn Error + 'static)) -> bool {
    err.is::<snowmint::ParseError>()
        || err.is::<snowmint::RangeError>()
        || err.is::<snowmint::LayoutError>()
        || err.is::<snowmint::BuildError>()
        || err.is::<snowmint::IssueError>()
        || err.is::<snowmint::StoreError>()
        || err.is::<snowmint::SerialError>()
        || err.is::<snowmint_lease::StateError>()
        || err.is::<snowmint_lease::LeaseError>()
        || err.is::<ServeError>()
        || err.is::<ApiError>()
}

/// Walks `err`'s chain, checks that none of the project's messages holds its source's
/// text and that the printed line says every cause exactly once, and returns the line.
fn line(err: &(dyn Error + 'static)) -> String {
    let printed = Chain(err).to_string();
    let mut layer = err;
    let mut texts = vec![layer.to_string()];
    while let Some(source) = layer.source() {
        let (message, cause) = (layer.to_string(), source.to_string());
        if ours(layer) {
            assert!(
                !message.contains(&cause),
                "{message:?} repeats its source {cause:?}"
            );
        }
        texts.push(cause);
        layer = source;
    }
    for text in texts.iter().filter(|t| !t.is_empty()) {
        assert_eq!(
            printed.matches(text.as_str()).count(),
            1,
            "{text:?} in {printed:?}"
        );
    }
    printed
}

fn config(state_dir: &Path, extra: &str) -> Config {
    let toml = format!("state_dir = {state_dir:?}\ngrpc_addr = \"off\"\n{extra}");
    Config::try_from(Settings::from_toml(&toml, "test.toml".as_ref()).unwrap()).unwrap()
}

/// A port on 127.0.0.1 with nothing listening.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A directory inside a plain file, which nobody (root included) can create.
fn uncreatable(tmp: &Path) -> std::path::PathBuf {
    let file = tmp.join("plain-file");
    std::fs::write(&file, "").unwrap();
    file.join("state")
}

#[tokio::test]
async fn a_state_directory_that_cannot_be_made_or_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = uncreatable(tmp.path());
    let expected = format!(
        "cannot create state directory {}: Not a directory (os error 20)",
        dir.display()
    );
    let err = FileStore::for_generator(
        &dir,
        &snowmint_lease::Fleet::default(),
        &Layout::TWITTER,
        0,
        0,
    )
    .unwrap_err();
    assert_eq!(line(&err), expected);
    let err = IdSource::start(&config(&dir, "")).await.unwrap_err();
    assert!(matches!(err, ServeError::State(_)), "{err:?}");
    assert_eq!(line(&err), expected);

    let missing = tmp.path().join("missing/w0.mark");
    let err = FileStore::claim(&missing).unwrap_err();
    assert_eq!(
        line(&err),
        format!(
            "cannot open {}.lock: No such file or directory (os error 2)",
            missing.display()
        )
    );
}

#[tokio::test]
async fn a_corrupt_mark_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = FileStore::path_in(dir.path(), &snowmint_lease::Fleet::default(), 0, 0);
    std::fs::write(&path, "soon\n").unwrap();
    let corrupt = format!(
        r#"mark file {} is corrupt: found "soon\n", expected milliseconds since the Unix epoch"#,
        path.display()
    );
    let err = FileStore::open(&path).unwrap().mark().unwrap_err();
    assert_eq!(line(&err), corrupt);

    let store = FileStore::claim(&path).unwrap();
    let err = Generator::builder(Layout::TWITTER)
        .store(Arc::new(store))
        .build()
        .unwrap_err();
    assert_eq!(
        line(&err),
        format!("cannot read the high-water mark: {corrupt}")
    );

    let err = IdSource::start(&config(dir.path(), "")).await.unwrap_err();
    assert!(matches!(err, ServeError::Generator(_)), "{err:?}");
    assert_eq!(
        line(&err),
        format!("cannot read the high-water mark: {corrupt}")
    );
}

#[tokio::test]
async fn a_port_already_taken() {
    let dir = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let config = config(dir.path(), &format!("http_addr = \"{addr}\""));
    let err = snowmint_server::serve(config, std::future::pending())
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::Bind { .. }), "{err:?}");
    assert_eq!(
        line(&err),
        format!("cannot listen on {addr}: Address already in use (os error 98)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registries_that_are_down() {
    let claim = Claim::new("chains", 0, 8, "host", std::time::Duration::from_secs(5));
    let port = closed_port();
    let acquire = |url: String| {
        let claim = claim.clone();
        async move {
            let registry = snowmint_lease::registry_from_url(&url).unwrap();
            registry.acquire(&claim).await.unwrap_err()
        }
    };

    let err = acquire(format!("redis://127.0.0.1:{port}")).await;
    assert_eq!(
        line(&err),
        format!(
            "redis registry is unavailable: redis://127.0.0.1:{port}/0: Connection refused (os error 111)"
        )
    );
    let err = acquire(format!("postgres://postgres@127.0.0.1:{port}/fleet")).await;
    assert_eq!(
        line(&err),
        format!(
            "postgres registry is unavailable: 127.0.0.1:{port}/fleet: cannot connect: \
             error connecting to server: Connection refused (os error 111)"
        )
    );
    let err = acquire(format!("etcd://127.0.0.1:{port}")).await;
    assert_eq!(
        line(&err),
        format!(
            "etcd registry is unavailable: http://127.0.0.1:{port}/v3/kv/txn: \
             error sending request: client error (Connect): tcp connect error: \
             Connection refused (os error 111)"
        )
    );
}

#[tokio::test]
async fn a_lease_gone_under_a_generator() {
    let dir = tempfile::tempdir().unwrap();
    let registry =
        snowmint_lease::registry_from_url(&format!("file:{}", dir.path().join("leases").display()))
            .unwrap();
    let claim = Claim::new("chains", 0, 32, "host", std::time::Duration::from_secs(5));
    let lease = registry.acquire(&claim).await.unwrap();
    registry.release(&claim, &lease, T).await.unwrap();
    let local = FileStore::for_generator(
        dir.path(),
        &snowmint_lease::Fleet::default(),
        &Layout::TWITTER,
        0,
        lease.worker,
    )
    .unwrap();
    let store = LeasedStore::new(registry, lease, u64::MAX, local);
    let clock = Arc::new(ManualClock::new(T));
    let generator = Generator::builder(Layout::TWITTER)
        .clock(clock)
        .store(Arc::new(store) as Arc<dyn Store>)
        .build()
        .unwrap();
    let err = generator.next_id().unwrap_err();
    let expected = "cannot raise the high-water mark to 2026-11-22T00:00:01.000Z: \
                    lease on datacenter 0 worker 0 is lost: this process no longer holds its file";
    assert_eq!(line(&err), expected);
    // The server answers 503 with the same line.
    let api = ApiError::from(err);
    assert_eq!(api.status(), 503);
    assert_eq!(line(&api), expected);

    let failing = StoreError::new(std::io::Error::other("disk full"));
    assert_eq!(line(&failing), "disk full");
}

#[test]
fn a_bad_layout_and_a_bad_id() {
    let err = Layout::by_name("snowflake").unwrap_err();
    assert_eq!(
        line(&err),
        r#"unknown layout "snowflake": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"#
    );
    let bits = Bits {
        timestamp: 42,
        datacenter: 5,
        worker: 5,
        sequence: 12,
    };
    let err = Layout::new(bits, 1, 0).unwrap_err();
    assert_eq!(
        line(&err),
        "layout needs 64 bits but a generated id has 63 (bit 63 stays 0 so ids are positive)"
    );

    let err = Id::parse_any("zz!").unwrap_err();
    assert_eq!(
        line(&err),
        "invalid character 'z' at position 0 in decimal id"
    );
    let too_big = "id 18446744073709551615 is out of range for this layout: its largest id is 9223372036854775807";
    let err = Layout::TWITTER.decode(Id::MAX).unwrap_err();
    assert_eq!(line(&err), too_big);
    // A serial of it: the core's error is the whole message, said once.
    let err = Template::new(&Layout::TWITTER)
        .format(&BizCode::new("PAY").unwrap(), Id::MAX, &Zone::UTC)
        .unwrap_err();
    assert_eq!(line(&err), too_big);
    let err = Generator::builder(Layout::TWITTER)
        .worker(40)
        .build()
        .unwrap_err();
    assert_eq!(line(&err), "worker id 40 is out of range 0..=31");
}
