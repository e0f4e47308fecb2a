//! Each server starts, answers, keeps its data across a clean restart and across SIGKILL,
//! and is gone with its directory once its guard drops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::thread;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use snowmint_testkit::Server;
use snowmint_testkit::{Etcd, PgBouncer, Postgres, Redis, ZooKeeper};

#[test]
fn redis_keeps_its_keys_across_restarts_and_a_kill() {
    let mut server = Redis::start();
    let port = server.port();
    assert_eq!(server.url(), format!("redis://127.0.0.1:{port}"));
    assert_eq!(redis(port, &["SET", "worker:7", "holder-a"]), "+OK");

    server.restart();
    assert_eq!(server.port(), port);
    assert_eq!(redis(port, &["GET", "worker:7"]), "holder-a");

    assert_eq!(redis(port, &["SET", "mark", "42"]), "+OK");
    server.kill();
    assert_refused(port);
    server.restart();
    assert_eq!(
        redis(port, &["GET", "mark"]),
        "42",
        "appendfsync always keeps it"
    );

    server.stop();
    assert_refused(port);
    server.restart();
    assert_eq!(redis(port, &["GET", "worker:7"]), "holder-a");
    let dir = server.dir().to_owned();
    drop(server);
    assert_gone(port, &dir);
}

#[test]
fn etcd_keeps_its_keys_across_restarts_and_a_kill() {
    let mut server = Etcd::start();
    let port = server.port();
    assert_eq!(server.url(), format!("etcd://127.0.0.1:{port}"));
    assert_eq!(server.endpoint(), format!("http://127.0.0.1:{port}"));
    etcd_put(port, "/snowmint/0/7", "holder-a");

    server.restart();
    assert_eq!(etcd_get(port, "/snowmint/0/7").as_deref(), Some("holder-a"));

    etcd_put(port, "/snowmint/0/7/mark", "42");
    server.kill();
    assert_refused(port);
    server.restart();
    assert_eq!(etcd_get(port, "/snowmint/0/7/mark").as_deref(), Some("42"));
    assert_eq!(etcd_get(port, "/snowmint/absent"), None);
    let dir = server.dir().to_owned();
    drop(server);
    assert_gone(port, &dir);
}

#[test]
fn postgres_keeps_its_rows_across_restarts_and_a_kill() {
    let mut server = Postgres::start();
    let port = server.port();
    assert_eq!(
        server.url(),
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    );
    assert_eq!(psql(&server, "select 1"), "1");
    psql(
        &server,
        "create table workers (worker int primary key, holder text)",
    );
    psql(&server, "insert into workers values (7, 'holder-a')");

    server.restart();
    assert_eq!(
        psql(&server, "select holder from workers where worker = 7"),
        "holder-a"
    );

    psql(&server, "insert into workers values (8, 'holder-b')");
    server.kill();
    assert_refused(port);
    server.restart();
    assert_eq!(psql(&server, "select count(*) from workers"), "2");
    let dir = server.dir().to_owned();
    drop(server);
    assert_gone(port, &dir);
}

#[test]
fn pgbouncer_pools_transactions_onto_its_server_connections() {
    let mut pool = PgBouncer::start(2);
    let port = pool.port();
    assert_eq!(
        pool.url(),
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    );
    assert_eq!(pool.pool(), 2);
    let through = |sql: &str| psql_at(port, sql);
    through("create table workers (worker int primary key)");
    through("insert into workers values (7)");
    assert_eq!(psql(pool.postgres(), "select count(*) from workers"), "1");
    // The guard's controls act on PostgreSQL behind the pool, which stays up.
    pool.kill();
    assert_refused(pool.postgres().port());
    pool.restart();
    snowmint_testkit::eventually(
        std::time::Duration::from_secs(10),
        "a statement through the pool once PostgreSQL is back",
        || try_psql_at(port, "select worker from workers"),
    );
    assert_eq!(through("select worker from workers"), "7");
    let (postgres_port, dir) = (pool.postgres().port(), pool.dir().to_owned());
    drop(pool);
    assert_gone(postgres_port, &dir);
    assert_refused(port);
}

#[test]
fn zookeeper_keeps_its_nodes_across_restarts_and_a_kill() {
    let mut server = ZooKeeper::start();
    let port = server.port();
    assert_eq!(
        server.url(),
        format!("zookeeper://127.0.0.1:{port}/snowmint")
    );
    zk_create(port, "/w7", "holder-a");

    server.restart();
    assert_eq!(server.port(), port);
    assert_eq!(zk_get(port, "/w7"), "holder-a");

    zk_create(port, "/w7.mark", "42");
    server.kill();
    assert_refused(port);
    server.restart();
    assert_eq!(
        zk_get(port, "/w7.mark"),
        "42",
        "the transaction log is synced before an answer"
    );
    let dir = server.dir().to_owned();
    drop(server);
    assert_gone(port, &dir);
}

#[test]
fn a_test_that_panics_leaves_no_server_behind() {
    let (port, pid) = thread::spawn(|| {
        let server = Redis::start();
        let (port, pid) = (server.port(), server.pid().expect("running"));
        // Unwinding drops the guard, as it would in a failing test.
        std::panic::resume_unwind(Box::new((port, pid)));
    })
    .join()
    .expect_err("the thread panicked")
    .downcast::<(u16, u32)>()
    .map(|boxed| *boxed)
    .expect("the panic carries the port and pid");
    assert_refused(port);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "redis-server {pid} still exists"
    );
}

#[test]
fn guards_can_move_between_threads() {
    fn is_send<T: Send>() {}
    is_send::<Redis>();
    is_send::<Etcd>();
    is_send::<Postgres>();
    is_send::<ZooKeeper>();
}

fn assert_refused(port: u16) {
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something still listens on {port}"
    );
}

/// Checks that a dropped server's port is closed and its directory `dir` removed.
fn assert_gone(port: u16, dir: &Path) {
    assert_refused(port);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

/// Sends one command to Redis and returns its reply: a simple string with its `+`, or a
/// bulk string's value, or `(nil)`.
fn redis(port: u16, args: &[&str]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("redis accepts connections");
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request += &format!("${}\r\n{arg}\r\n", arg.len());
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let line = line.trim_end();
    let Some(length) = line.strip_prefix('$') else {
        return line.to_owned();
    };
    let Ok(length) = length.parse::<usize>() else {
        return "(nil)".to_owned();
    };
    let mut value = vec![0; length + 2]; // the value and its CRLF
    reader.read_exact(&mut value).unwrap();
    value.truncate(length);
    String::from_utf8(value).unwrap()
}

/// Posts `body` to etcd's JSON gateway and returns the response body, failing on any
/// status but 200.
fn etcd_call(port: u16, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let body = body.to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("etcd accepts connections");
    // HTTP/1.0, so the answer is never chunked and ends when the connection closes.
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a complete response");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{response}"
    );
    serde_json::from_str(body).unwrap()
}

fn etcd_put(port: u16, key: &str, value: &str) {
    let request = serde_json::json!({ "key": BASE64.encode(key), "value": BASE64.encode(value) });
    etcd_call(port, "/v3/kv/put", &request);
}

fn etcd_get(port: u16, key: &str) -> Option<String> {
    let response = etcd_call(
        port,
        "/v3/kv/range",
        &serde_json::json!({ "key": BASE64.encode(key) }),
    );
    let value = response["kvs"].get(0)?["value"]
        .as_str()
        .expect("a base64 value");
    Some(String::from_utf8(BASE64.decode(value).unwrap()).unwrap())
}

/// Runs `sql` with `psql` over TCP as the server's superuser and returns its unaligned,
/// tuples-only output.
fn psql(server: &Postgres, sql: &str) -> String {
    psql_at(server.port(), sql)
}

/// Runs `sql` with `psql` on `127.0.0.1:port`, in the `postgres` database, as the
/// superuser.
fn psql_at(port: u16, sql: &str) -> String {
    try_psql_at(port, sql).unwrap_or_else(|err| panic!("{err}"))
}

/// [`psql_at`], answering what `psql` said when the statement failed.
fn try_psql_at(port: u16, sql: &str) -> Result<String, String> {
    let output = Command::new("psql")
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-tA", "-h", "127.0.0.1"])
        .args(["-p", &port.to_string(), "-U", "postgres", "-d", "postgres"])
        .args(["-c", sql])
        .output()
        .expect("psql runs (Debian's postgresql-client, installed with postgresql)");
    if !output.status.success() {
        return Err(format!(
            "psql -c {sql:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8(output.stdout).unwrap().trim().to_owned())
}

/// Creates the node `path` holding `value` with ZooKeeper's own command-line client.
fn zk_create(port: u16, path: &str, value: &str) {
    let (_, stderr) = zk_cli(port, &["create", path, value]);
    assert_eq!(last_line(&stderr), format!("Created {path}"), "{stderr}");
}

/// The value of the node `path`, read with ZooKeeper's own command-line client.
fn zk_get(port: u16, path: &str) -> String {
    let (stdout, _) = zk_cli(port, &["get", path]);
    last_line(&stdout).to_owned()
}

/// Runs one command of ZooKeeper's command-line client against the server on `port`; it
/// prints what it read on stdout, and what it did (and its logging's complaints) on stderr.
fn zk_cli(port: u16, command: &[&str]) -> (String, String) {
    let output = Command::new("java")
        .args(["-cp", "/usr/share/java/zookeeper.jar"])
        .arg("org.apache.zookeeper.ZooKeeperMain")
        .args(["-server", &format!("127.0.0.1:{port}")])
        .args(command)
        .output()
        .expect("java runs (Debian's default-jre-headless)");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "zookeeper {command:?}: {stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
}

/// A secured Redis keeps every write across a crash, as an open one does, and its port
/// answers TLS only. A script that writes twice, as each lease acquisition and renewal
/// does, is recorded in its append-only file as a transaction, which Redis replays as the
/// default user: with that user's rights taken away it dropped them at the restart.
#[test]
fn a_secured_redis_keeps_its_writes_across_a_kill() {
    let pki = snowmint_testkit::Pki::new();
    let mut redis = snowmint_testkit::Redis::start_secured(&pki);
    let set: String = redis
        .command(
            redis::cmd("SET")
                .arg("snowmint:k")
                .arg("v")
                .arg("PX")
                .arg(60_000),
        )
        .unwrap();
    assert_eq!(set, "OK");
    let ran: i64 = redis
        .command(
            redis::cmd("EVAL")
                .arg("redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000); redis.call('HSET', KEYS[2], 'w1', ARGV[1]); return 1")
                .arg(2)
                .arg("snowmint:w1")
                .arg("snowmint:hwm")
                .arg("holder"),
        )
        .unwrap();
    assert_eq!(ran, 1);
    redis.kill();
    redis.restart();
    let got: Option<String> = redis.command(redis::cmd("GET").arg("snowmint:k")).unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    let held: Option<String> = redis.command(redis::cmd("GET").arg("snowmint:w1")).unwrap();
    let mark: Option<String> = redis
        .command(redis::cmd("HGET").arg("snowmint:hwm").arg("w1"))
        .unwrap();
    assert_eq!(
        (held.as_deref(), mark.as_deref()),
        (Some("holder"), Some("holder")),
        "the script's writes outlive the kill"
    );
    assert!(redis.url().starts_with("rediss://snowmint:"));
    // The default user is off: a connection that does not authenticate may do nothing.
    let socket = redis.dir().join("redis.sock");
    let client = redis::Client::open(redis::ConnectionAddr::Unix(socket)).unwrap();
    let refused = redis::cmd("PING")
        .query::<String>(&mut client.get_connection().unwrap())
        .unwrap_err();
    assert_eq!(refused.code(), Some("NOAUTH"), "{refused}");
}
