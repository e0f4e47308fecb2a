//! No secret is ever printed: a server started with known tokens and a registry password
//! is made to log, refuse, fail and answer everything it can, and none of what it printed
//! or served holds a secret. And a file of tokens rotates without a restart.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use snowmint_testkit::{LeaseTimes, Redis, eventually};
use support::{Serve, Snowmint, serve_builder, spawn_logged};

/// The secrets of these tests: none may appear in anything the binary prints or serves.
const REGISTRY_PASSWORD: &str = "pw-registry-5e1f0a";
const WRONG_PASSWORD: &str = "pw-wrong-77c2d9";
const TOKEN_OLD: &str = "tok-old-41b8e3";
const TOKEN_NEW: &str = "tok-new-9d0c6a";
const TOKEN_FLAG: &str = "tok-flag-2f5b71";
const SECRETS: [&str; 5] = [
    REGISTRY_PASSWORD,
    WRONG_PASSWORD,
    TOKEN_OLD,
    TOKEN_NEW,
    TOKEN_FLAG,
];

/// Fails naming the secret and where it showed, with the text around it.
fn assert_no_secret(place: &str, text: &str) {
    for secret in SECRETS {
        if let Some(at) = text.find(secret) {
            let start = text[..at]
                .char_indices()
                .rev()
                .nth(80)
                .map_or(0, |(i, _)| i);
            panic!(
                "{place} shows the secret {secret:?}: ...{}...",
                &text[start..(at + secret.len() + 40).min(text.len())]
            );
        }
    }
}

/// Sends one command to Redis, with `password` if it asks for one, and reads the first
/// line of the answer.
fn redis(port: u16, password: Option<&str>, args: &[&str]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut send = |args: &[&str]| {
        let mut frame = format!("*{}\r\n", args.len());
        for arg in args {
            frame.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream.write_all(frame.as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        line
    };
    if let Some(password) = password {
        assert_eq!(send(&["AUTH", password]), "+OK\r\n");
    }
    send(args)
}

/// `GET path` with `token` as the bearer token, if any: the status and the body.
fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    support::read_response(stream)
}

/// Everything the server serves without a token, and with one.
fn served(server: &Serve, token: &str) -> Vec<(String, String)> {
    let mut pages = Vec::new();
    for path in [
        "/",
        "/readyz",
        "/healthz",
        "/metrics",
        "/openapi.json",
        "/v1/layout",
        "/v1/id",
        "/v1/nowhere",
    ] {
        for token in [None, Some(token), Some(WRONG_PASSWORD)] {
            let (status, body) = get(server.http, path, token);
            pages.push((format!("GET {path} ({status})"), body));
        }
    }
    pages
}

fn write_atomically(path: &Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}

#[test]
fn no_secret_is_printed_or_served_while_tokens_rotate_and_the_registry_refuses() {
    let redis_server = Redis::start();
    let port = redis_server.port();
    assert_eq!(
        redis(
            port,
            None,
            &["CONFIG", "SET", "requirepass", REGISTRY_PASSWORD]
        ),
        "+OK\r\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    write_atomically(
        &tokens,
        &format!("# in rotation\n{TOKEN_OLD}\n{TOKEN_NEW}\n"),
    );
    let url = format!("redis://:{REGISTRY_PASSWORD}@127.0.0.1:{port}");
    let times = LeaseTimes::SHORT;
    let mut cmd = serve_builder(&dir.path().join("state"))
        .grpc_addr("127.0.0.1:0")
        .lease(&url, "secrets-a", times)
        .arg("--auth-token-file")
        .arg(&tokens)
        .command();
    cmd.env("SNOWMINT_LOG", "debug");
    let mut server = spawn_logged(cmd);
    server.wait_ready(Duration::from_secs(20));

    // Both tokens of the file are valid; nothing else is.
    assert_eq!(get(server.http, "/v1/id", Some(TOKEN_OLD)).0, 200);
    assert_eq!(get(server.http, "/v1/id", Some(TOKEN_NEW)).0, 200);
    assert_eq!(get(server.http, "/v1/id", Some(WRONG_PASSWORD)).0, 401);
    assert_eq!(get(server.http, "/v1/id", None).0, 401);
    let mut seen = served(&server, TOKEN_OLD);

    // The old token leaves the file: refused within a few seconds, with no restart.
    write_atomically(&tokens, &format!("{TOKEN_NEW}\n"));
    eventually(
        Duration::from_secs(10),
        "the old token refused",
        || match get(server.http, "/v1/id", Some(TOKEN_OLD)).0 {
            401 => Ok(()),
            status => Err(status),
        },
    );
    assert_eq!(get(server.http, "/v1/id", Some(TOKEN_NEW)).0, 200);

    // A broken file keeps the tokens read before, and says why.
    std::fs::write(&tokens, "\n# nothing\n").unwrap();
    eventually(Duration::from_secs(10), "the broken file reported", || {
        let log = server.logged();
        if log.contains("holds no token") {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    });
    assert_eq!(get(server.http, "/v1/id", Some(TOKEN_NEW)).0, 200);

    // The registry starts refusing the password: renewals fail, and the server says so
    // in its log, /readyz and /v1/layout, without the password.
    assert_eq!(
        redis(
            port,
            Some(REGISTRY_PASSWORD),
            &["CONFIG", "SET", "requirepass", WRONG_PASSWORD]
        ),
        "+OK\r\n"
    );
    redis(
        port,
        Some(WRONG_PASSWORD),
        &["CLIENT", "KILL", "TYPE", "normal"],
    );
    eventually(
        Duration::from_secs(20),
        "not ready once renewals fail",
        || match get(server.http, "/readyz", None) {
            (503, body) => Ok(body),
            (status, body) => Err(format!("{status} {body}")),
        },
    );
    seen.extend(served(&server, TOKEN_NEW));
    let log = server.logged();
    assert!(
        log.contains(&format!("127.0.0.1:{port}")),
        "the log names the registry's address: {log}"
    );
    server.terminate();
    seen.push(("the log".into(), server.logged()));

    // A server given the wrong password from the start.
    let wrong = format!("redis://:{REGISTRY_PASSWORD}@127.0.0.1:{port}");
    let mut cmd = serve_builder(&dir.path().join("state-b"))
        .grpc_addr("127.0.0.1:0")
        .lease(&wrong, "secrets-b", times)
        .args(["--auth-token", TOKEN_FLAG])
        .command();
    cmd.env("SNOWMINT_LOG", "debug");
    let mut refused = spawn_logged(cmd);
    eventually(Duration::from_secs(10), "the refusal logged", || {
        let log = refused.logged();
        if log.contains("registry") && log.contains(&format!("127.0.0.1:{port}")) {
            Ok(())
        } else {
            Err(log)
        }
    });
    assert_eq!(get(refused.http, "/readyz", None).0, 503);
    seen.extend(served(&refused, TOKEN_FLAG));
    refused.terminate();
    seen.push(("the refused server's log".into(), refused.logged()));

    for (place, text) in &seen {
        assert_no_secret(place, text);
    }
}

#[test]
fn settings_that_hold_secrets_are_never_echoed() {
    let snowmint = Snowmint::new();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN_OLD}\n")).unwrap();
    let lease = format!("redis://app:{REGISTRY_PASSWORD}@127.0.0.1:1");
    let mut seen = Vec::new();
    let mut run = |place: &str, cmd: &mut std::process::Command| {
        let out = cmd.output().expect("snowmint runs");
        let text = support::printed(&out);
        seen.push((place.to_string(), text.clone()));
        (out.status.success(), text)
    };

    // --help shows that the variables are set, never their values.
    let (ok, help) = run(
        "serve --help",
        snowmint
            .command(&["serve", "--help"])
            .env("SNOWMINT_LEASE", &lease)
            .env("SNOWMINT_AUTH_TOKEN", TOKEN_FLAG),
    );
    assert!(ok && help.contains("--auth-token-file"), "{help}");

    // Refusals name the setting, not the secret.
    let (ok, text) = run(
        "a token and a token file",
        &mut snowmint.command(&[
            "serve",
            "--auth-token",
            TOKEN_FLAG,
            "--auth-token-file",
            tokens.to_str().unwrap(),
        ]),
    );
    assert!(!ok && text.contains("--auth-token-file"), "{text}");
    let (ok, text) = run(
        "a token that cannot go in a header",
        &mut snowmint.command(&["serve", "--auth-token", &format!("{TOKEN_FLAG} x")]),
    );
    assert!(
        !ok && text.contains(
            "config key `auth_token`: \"\" cannot go in a header: use visible ASCII characters only, no spaces"
        ),
        "{text}"
    );
    let (ok, text) = run(
        "a lease URL with a bad port",
        &mut snowmint.command(&[
            "serve",
            "--lease",
            &format!("redis://app:{REGISTRY_PASSWORD}@127.0.0.1:notaport"),
        ]),
    );
    assert!(!ok && text.contains("config key `lease`"), "{text}");
    let (ok, text) = run(
        "a lease URL and a worker",
        &mut snowmint.command(&["serve", "--lease", &lease, "--worker", "3"]),
    );
    assert!(
        !ok && text.contains("conflicts with lease \"redis://app:***@127.0.0.1:1\""),
        "{text}"
    );
    let config = dir.path().join("snowmint.toml");
    std::fs::write(
        &config,
        format!(
            "auth_token = \"{TOKEN_FLAG}\"\nauth_token_file = \"{}\"\n",
            tokens.display()
        ),
    )
    .unwrap();
    let (ok, text) = run(
        "a token and a token file in the config file",
        &mut snowmint.command(&["serve", "--config", config.to_str().unwrap()]),
    );
    assert!(
        !ok && text.contains("config key `auth_token_file`")
            && text.contains("conflicts with auth_token"),
        "{text}"
    );
    // A line the parser refuses is shown with its key alone when the key holds a secret,
    // or is not one the file knows (a misspelled key may hold one too).
    for (name, text) in [
        ("a bare token", format!("auth_token = {TOKEN_FLAG}\n")),
        (
            "a misspelled key",
            format!("auth_tokn = \"{TOKEN_FLAG}\"\n"),
        ),
        (
            "a stray bracket after a lease URL",
            format!("lease = \"redis://app:{REGISTRY_PASSWORD}@h:1\"]\n"),
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let (ok, text) = run(
            name,
            &mut snowmint.command(&["serve", "--config", config.to_str().unwrap()]),
        );
        assert!(!ok && text.contains(" = ***`"), "{text}");
    }
    // An unknown scheme, as an upper-case one is.
    let (ok, text) = run(
        "an unknown lease scheme",
        &mut snowmint.command(&[
            "serve",
            "--lease",
            &format!("REDIS://app:{REGISTRY_PASSWORD}@127.0.0.1:1"),
        ]),
    );
    assert!(
        !ok && text.contains("REDIS://app:***@127.0.0.1:1"),
        "{text}"
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let (ok, text) = run(
        "an empty token file",
        &mut snowmint.command(&["serve", "--auth-token-file", empty.to_str().unwrap()]),
    );
    assert!(!ok && text.contains("holds no token"), "{text}");

    for (place, text) in &seen {
        assert_no_secret(place, text);
    }
}
