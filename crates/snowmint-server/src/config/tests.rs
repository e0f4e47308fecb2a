//! The settings from each source, and the errors of each key.

use std::collections::BTreeSet;
use std::time::Duration;

use clap::{Args, Command, FromArgMatches};
use snowmint::{Layout, OverflowPolicy, RollbackPolicy, SequenceStart};
use snowmint_lease::LeaseSettings;

use super::*;

fn command() -> Command {
    Settings::augment_args(Command::new("serve").no_binary_name(true))
}

fn from_toml(toml: &str) -> Result<Settings, ConfigError> {
    Settings::from_toml(toml, "test.toml".as_ref())
}

fn config(toml: &str) -> Result<Config, ConfigError> {
    Config::try_from(from_toml(toml)?)
}

/// The settings a command line gives (no file), or clap's error.
fn from_flags(flags: &[&str]) -> Result<Settings, clap::Error> {
    Settings::from_arg_matches(&command().try_get_matches_from(flags)?)
}

/// Every key, as the file, the flag and the variable name it.
fn keys() -> BTreeSet<String> {
    command()
        .get_arguments()
        .map(|arg| arg.get_id().to_string())
        .collect()
}

#[test]
fn defaults_serve_on_loopback() {
    let c = config("").unwrap();
    assert_eq!(c.http_addr, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(c.grpc_addr, Some("127.0.0.1:50051".parse().unwrap()));
    assert_eq!((c.datacenter, c.worker, c.layout), (0, 0, Layout::TWITTER));
    assert_eq!(c.max_batch, 100_000);
    assert_eq!(c.max_response_bytes, 32 * 1024 * 1024);
    assert_eq!(c.restart_behind, RestartBehind::Wait);
    assert_eq!(c.clock.rollback, RollbackPolicy::default());
    assert_eq!(c.clock.sequence_start, SequenceStart::Zero);
    assert_eq!(c.lease, "static:0");
    assert_eq!(c.lease_settings, LeaseSettings::default());
    assert_eq!(
        c.grpc_addr,
        config("grpc_addr = \"127.0.0.1:50051\"").unwrap().grpc_addr
    );
    assert_eq!(config("grpc_addr = \"off\"").unwrap().grpc_addr, None);
    // Thrift is off unless asked for, and its help says where it may be bound.
    assert_eq!(c.thrift_addr, None);
    let help = command()
        .get_arguments()
        .find(|arg| arg.get_id() == "thrift_addr")
        .and_then(|arg| arg.get_help().map(ToString::to_string))
        .unwrap();
    assert!(
        help.contains("It takes no bearer token, so bind it to a trusted interface only"),
        "{help}"
    );
    assert_eq!(config("thrift_addr = \"off\"").unwrap().thrift_addr, None);
    assert_eq!(
        config("thrift_addr = \"127.0.0.1:9090\"")
            .unwrap()
            .thrift_addr,
        Some("127.0.0.1:9090".parse().unwrap())
    );
    // The admin port too: a port no one asked for is one more to firewall.
    assert_eq!(c.admin_addr, None);
    assert_eq!(config("admin_addr = \"off\"").unwrap().admin_addr, None);
    assert_eq!(
        config("admin_addr = \"0.0.0.0:8081\"").unwrap().admin_addr,
        Some("0.0.0.0:8081".parse().unwrap())
    );
}

/// Each key is one name in three spellings: `lease_ttl_ms`, `--lease-ttl-ms`,
/// `SNOWMINT_LEASE_TTL_MS`.
#[test]
fn each_key_is_a_flag_and_a_variable_of_the_same_name() {
    for arg in command().get_arguments() {
        let key = arg.get_id().as_str();
        assert_eq!(arg.get_long(), Some(key.replace('_', "-").as_str()));
        let env = arg.get_env().and_then(|e| e.to_str());
        assert_eq!(
            env,
            Some(format!("SNOWMINT_{}", key.to_uppercase()).as_str())
        );
    }
    // And the file takes the same name (a number is the wrong type for some keys, but
    // the key is known to all of them).
    for key in keys() {
        if let Err(err) = from_toml(&format!("{key} = 1")) {
            assert!(!err.to_string().contains("unknown field"), "{err}");
        }
    }
    assert!(
        from_toml("lease_ttl = 1")
            .unwrap_err()
            .to_string()
            .contains("unknown field")
    );
}

/// What `--help` says each default is, the code takes when the key is left out: giving the
/// documented value changes nothing.
#[test]
fn the_documented_defaults_are_the_defaults() {
    let defaults = Config::try_from(Settings::default()).unwrap();
    let mut checked = Vec::new();
    for arg in command().get_arguments() {
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        let default = help
            .split_once("(default: ")
            .and_then(|(_, rest)| rest.split([')', ',']).next())
            .unwrap_or_else(|| panic!("{} names no default: {help}", arg.get_id()));
        // Those that are no single value ("the layout's", "$XDG_STATE_HOME/...", "none").
        if default.contains(' ') || default.starts_with('$') || default == "none" {
            continue;
        }
        let flag = format!("--{}", arg.get_long().unwrap());
        let given = Config::try_from(from_flags(&[&flag, default]).unwrap()).unwrap();
        assert_eq!(given, defaults, "{flag} {default}");
        checked.push(arg.get_id().to_string());
    }
    assert!(checked.len() > 20, "{checked:?}");
}

/// A bad value of every key, from a flag and from the file, and the one error both give: it
/// names the key the value was given to. A check between keys names the other key too.
#[test]
fn each_bad_value_is_blamed_on_its_key() {
    // (key, value as TOML, the error)
    let cases = [
        (
            "http_addr",
            "\"localhost\"",
            "config key `http_addr`: \"localhost\" is not an address like 127.0.0.1:8080 or [::1]:0",
        ),
        (
            "grpc_addr",
            "\"nowhere\"",
            "config key `grpc_addr`: \"nowhere\" is not an address like 127.0.0.1:8080 or [::1]:0",
        ),
        (
            "thrift_addr",
            "\"on\"",
            "config key `thrift_addr`: \"on\" is not an address like 127.0.0.1:8080 or [::1]:0",
        ),
        (
            "admin_addr",
            "\"8081\"",
            "config key `admin_addr`: \"8081\" is not an address like 127.0.0.1:8080 or [::1]:0",
        ),
        (
            "auth_token",
            "\" \"",
            "config key `auth_token`: \"\" must not be empty",
        ),
        (
            "auth_token_file",
            "\"/nonexistent/tokens\"",
            "config key `auth_token_file`: \"/nonexistent/tokens\" cannot read it: No such file or directory (os error 2)",
        ),
        (
            "tls_cert",
            "\"/etc/snowmint/cert.pem\"",
            "config key `tls_cert`: \"/etc/snowmint/cert.pem\" needs tls_key, the certificate's private key",
        ),
        (
            "tls_key",
            "\"/etc/snowmint/key.pem\"",
            "config key `tls_key`: \"/etc/snowmint/key.pem\" needs tls_cert, the key's certificate",
        ),
        (
            "tls_client_ca",
            "\"/etc/snowmint/ca.pem\"",
            "config key `tls_client_ca`: \"/etc/snowmint/ca.pem\" needs tls_cert and tls_key: client certificates are asked for in a TLS handshake",
        ),
        (
            "thrift_tls",
            "true",
            "config key `thrift_tls`: \"true\" needs tls_cert and tls_key, the pair Thrift serves too",
        ),
        (
            "worker_threads",
            "0",
            "config key `worker_threads`: \"0\" is out of range 1..=1024",
        ),
        (
            "shutdown_grace_ms",
            "600001",
            "config key `shutdown_grace_ms`: \"600001\" must be at most 600000 ms: requests in flight are waited for this long at shutdown",
        ),
        (
            "layout",
            "\"custom:41/5/5/11\"",
            "config key `layout`: \"custom:41/5/5/11\" custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64",
        ),
        (
            "layout",
            "\"custom:41/5\"",
            "config key `layout`: \"custom:41/5\" must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12",
        ),
        (
            "tick_ms",
            "0",
            "config key `tick_ms`: \"0\" tick length must be at least 1 ms, got 0",
        ),
        (
            "epoch",
            "\"yesterday\"",
            "config key `epoch`: \"yesterday\" is neither milliseconds since the Unix epoch nor an RFC 3339 time",
        ),
        (
            "datacenter",
            "32",
            "config key `datacenter`: \"32\" is out of range 0..=31 for layout twitter",
        ),
        (
            "worker",
            "40",
            "config key `worker`: \"40\" is out of range 0..=31 for layout twitter",
        ),
        (
            "lease",
            "\"consul://h:8500\"",
            "config key `lease`: \"consul://h:8500\" expected static:W, hostname, file:DIR, redis[s]://HOST:PORT, redis[s]+sentinel://HOST:PORT[,HOST:PORT...]/MASTER, etcd[s]://HOST:PORT[,HOST:PORT...], postgres://... or zookeeper[s]://HOST:PORT[,HOST:PORT...]/PATH",
        ),
        (
            "lease",
            "\"zookeeper://h:2181\"",
            "config key `lease`: \"zookeeper://h:2181\" expected zookeeper[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/PATH[?PARAMETERS] (no path: name the registry's root, such as /snowmint)",
        ),
        (
            "lease",
            "\"etcds://snowmint:s3cret@h:port\"",
            "config key `lease`: \"etcds://snowmint:***@h:port\" expected etcd[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][?PARAMETERS] (invalid port number)",
        ),
        (
            "fleet",
            "\"a.b\"",
            "config key `fleet`: \"a.b\" may hold only letters, digits, '-' and '_', 1 to 64 of them",
        ),
        (
            "identity",
            "\"\"",
            "config key `identity`: \"\" must be 1 to 200 characters",
        ),
        (
            "identity_from",
            "\"ip:\"",
            "config key `identity_from`: \"ip:\" is not an identity source: expected hostname, ip or ip:IFACE",
        ),
        (
            "lease_ttl_ms",
            "999",
            "config key `lease_ttl_ms`: \"999\" must be at least 1000 ms: renewals need room within it",
        ),
        (
            "lease_renew_ms",
            "9500",
            "config key `lease_renew_ms`: \"9500\" must be 1 ms or more and shorter than lease_ttl_ms (10000 ms) less lease_margin_ms (1000 ms)",
        ),
        (
            "lease_margin_ms",
            "10000",
            "config key `lease_margin_ms`: \"10000\" must be shorter than lease_ttl_ms (10000 ms)",
        ),
        (
            "rollback_wait_ms",
            "60001",
            "config key `rollback_wait_ms`: \"60001\" must be at most 60000 ms: a request waits this long for a clock that went back",
        ),
        (
            "overflow_lead_ms",
            "1001",
            "config key `overflow_lead_ms`: \"1001\" must be at most 1000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms",
        ),
        (
            "reserve_ahead_ms",
            "60001",
            "config key `reserve_ahead_ms`: \"60001\" must be at most 60000 ms: after a crash, a restart waits out what was reserved",
        ),
        (
            "max_batch",
            "0",
            "config key `max_batch`: \"0\" is out of range 1..=1000000",
        ),
        (
            "max_response_bytes",
            "100",
            "config key `max_response_bytes`: \"100\" is out of range 1024..=1073741824",
        ),
        (
            "max_connections",
            "0",
            "config key `max_connections`: \"0\" is out of range 1..=1000000",
        ),
        (
            "header_read_timeout_ms",
            "0",
            "config key `header_read_timeout_ms`: \"0\" is out of range 1..=3600000",
        ),
        (
            "idle_timeout_ms",
            "0",
            "config key `idle_timeout_ms`: \"0\" is out of range 1..=86400000",
        ),
        (
            "max_header_bytes",
            "4096",
            "config key `max_header_bytes`: \"4096\" is out of range 8192..=1048576",
        ),
        (
            "max_concurrent_streams",
            "0",
            "config key `max_concurrent_streams`: \"0\" is out of range 1..=10000",
        ),
        (
            "max_ids_in_flight",
            "200000",
            "config key `max_ids_in_flight`: \"200000\" is out of range 262144..=4294967295: at least max_ids_in_flight_per_connection",
        ),
        (
            "max_ids_in_flight_per_connection",
            "99999",
            "config key `max_ids_in_flight_per_connection`: \"99999\" is out of range 100000..=4294967295: at least max_batch, so the largest batch fits",
        ),
        (
            "stream_buffer_bytes",
            "100",
            "config key `stream_buffer_bytes`: \"100\" is out of range 1024..=16777216",
        ),
        (
            "drain_grace_ms",
            "0",
            "config key `drain_grace_ms`: \"0\" is out of range 1..=600000",
        ),
        (
            "min_drain_bytes_per_sec",
            "0",
            "config key `min_drain_bytes_per_sec`: \"0\" is out of range 1..=1099511627776",
        ),
    ];
    // Keys whose values clap and serde refuse before any check: the choices (a bad name is
    // no variant), the proxies (a bad network is no network), and the directory, which
    // the state file's own errors name at start.
    let parsed_only = [
        "clock",
        "restart_behind",
        "rollback",
        "sequence_start",
        "state_dir",
        "trusted_proxies",
    ];
    let mut covered: BTreeSet<String> = parsed_only.iter().map(|k| k.to_string()).collect();
    for (key, value, expected) in cases {
        let from_file = config(&format!("{key} = {value}")).unwrap_err().to_string();
        assert_eq!(from_file, expected, "file: {key} = {value}");
        let flag = format!("--{}", key.replace('_', "-"));
        let settings = from_flags(&[&flag, value.trim_matches('"')]).unwrap();
        let from_flag = Config::try_from(settings).unwrap_err().to_string();
        assert_eq!(from_flag, expected, "flag: {flag} {value}");
        covered.insert(key.to_string());
    }
    assert_eq!(covered, keys(), "every key has a bad value above");
}

/// A choice that is no variant, or a number that is no number, is refused as it is read:
/// by clap, naming the flag and the choices; by the TOML parser, quoting the line.
#[test]
fn values_of_the_wrong_kind_are_refused_where_they_are_read() {
    let cases = [
        (
            "restart_behind",
            "later",
            "[possible values: wait, fail]",
            "unknown variant `later`, expected `wait` or `fail`",
        ),
        (
            "clock",
            "ntp",
            "[possible values: monotonic, wall, counter]",
            "unknown variant `ntp`, expected one of `monotonic`, `wall`, `counter`",
        ),
        (
            "rollback",
            "ignore",
            "[possible values: refuse, wait, logical, spare]",
            "unknown variant `ignore`, expected one of `refuse`, `wait`, `logical`, `spare`",
        ),
        (
            "sequence_start",
            "one",
            "[possible values: zero, random, continue]",
            "unknown variant `one`, expected one of `zero`, `random`, `continue`",
        ),
        (
            "worker",
            "three",
            "invalid digit found in string",
            "invalid type: string \"three\", expected u64",
        ),
        (
            "trusted_proxies",
            "10.0.0.0/40",
            "\"10.0.0.0/40\" has a prefix length out of range 0..=32",
            "\"10.0.0.0/40\" has a prefix length out of range 0..=32",
        ),
    ];
    for (key, value, clap_says, toml_says) in cases {
        let flag = format!("--{}", key.replace('_', "-"));
        let err = from_flags(&[&flag, value]).unwrap_err();
        use clap::error::ErrorKind::{InvalidValue, ValueValidation};
        assert!(
            matches!(err.kind(), InvalidValue | ValueValidation),
            "{err}"
        );
        let err = err.to_string();
        assert!(err.contains(&format!("'{value}' for '{flag} <")), "{err}");
        assert!(err.contains(clap_says), "{err}");
        let line = format!("{key} = \"{value}\"");
        assert_eq!(
            from_toml(&format!("# settings\n\n{line}\n"))
                .unwrap_err()
                .to_string(),
            format!("config file test.toml: line 3, `{line}`: {toml_says}"),
        );
    }
}

/// Checks between two keys name both: the key whose value is refused, and the one that set
/// its bound.
#[test]
fn a_bound_set_by_another_key_names_that_key() {
    let cases = [
        (
            "overflow_lead_ms = 3000\nreserve_ahead_ms = 2000",
            "config key `overflow_lead_ms`: \"3000\" must be at most 2000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms",
        ),
        (
            "reserve_ahead_ms = 5\nlayout = \"sonyflake\"",
            "config key `reserve_ahead_ms`: \"5\" must be at least one tick of layout sonyflake (10 ms)",
        ),
        (
            "lease_renew_ms = 2700\nlease_ttl_ms = 3000",
            "config key `lease_renew_ms`: \"2700\" must be 1 ms or more and shorter than lease_ttl_ms (3000 ms) less lease_margin_ms (300 ms)",
        ),
        (
            "lease_renew_ms = 0",
            "config key `lease_renew_ms`: \"0\" must be 1 ms or more and shorter than lease_ttl_ms (10000 ms) less lease_margin_ms (1000 ms)",
        ),
        (
            "lease_margin_ms = 2000\nlease_ttl_ms = 2000",
            "config key `lease_margin_ms`: \"2000\" must be shorter than lease_ttl_ms (2000 ms)",
        ),
        (
            "lease_margin_ms = 5000\nlease_renew_ms = 5000",
            "config key `lease_renew_ms`: \"5000\" must be 1 ms or more and shorter than lease_ttl_ms (10000 ms) less lease_margin_ms (5000 ms)",
        ),
        (
            "worker = 3\nlease = \"redis://127.0.0.1:6379\"",
            "config key `worker`: \"3\" conflicts with lease \"redis://127.0.0.1:6379\", which chooses the worker id; drop one of them",
        ),
        (
            "worker = 3\nlease = \"static:4\"",
            "config key `worker`: \"3\" conflicts with lease \"static:4\"",
        ),
        (
            "max_ids_in_flight_per_connection = 300000\nmax_batch = 400000",
            "config key `max_ids_in_flight_per_connection`: \"300000\" is out of range 400000..=4294967295: at least max_batch, so the largest batch fits",
        ),
        (
            "max_ids_in_flight = 300000\nmax_ids_in_flight_per_connection = 400000",
            "config key `max_ids_in_flight`: \"300000\" is out of range 400000..=4294967295: at least max_ids_in_flight_per_connection",
        ),
        (
            "datacenter = 2\nlayout = \"sonyflake\"",
            "config key `datacenter`: \"2\" is out of range 0..=0 for layout sonyflake",
        ),
    ];
    for (toml, expected) in cases {
        assert_eq!(config(toml).unwrap_err().to_string(), expected, "{toml}");
    }
}

/// The lease keys are checked one at a time so each error names its key; together they
/// take exactly what the lease keeper's own check takes.
#[test]
fn the_lease_checks_agree_with_the_lease_keeper() {
    let ms = [
        0, 1, 99, 100, 333, 899, 900, 999, 1_000, 1_500, 3_000, 9_000, 10_000,
    ];
    for ttl in [1_000, 1_500, 10_000] {
        for renew in ms {
            for margin in ms {
                let toml = format!(
                    "lease_ttl_ms = {ttl}\nlease_renew_ms = {renew}\nlease_margin_ms = {margin}"
                );
                let lease = LeaseSettings {
                    ttl: Duration::from_millis(ttl),
                    renew_every: Duration::from_millis(renew),
                    safety_margin: Duration::from_millis(margin),
                };
                assert_eq!(config(&toml).is_ok(), lease.validate().is_ok(), "{toml}");
            }
        }
    }
}

#[test]
fn durations_up_to_their_bounds_are_taken() {
    let c = config(
        "overflow_lead_ms = 60000\nreserve_ahead_ms = 60000\nrollback_wait_ms = 60000\nshutdown_grace_ms = 600000\nlease_ttl_ms = 600000",
    )
    .unwrap();
    assert_eq!(
        c.overflow,
        OverflowPolicy::Borrow {
            lead: Duration::from_secs(60)
        }
    );
    assert_eq!(c.reserve_ahead, Duration::from_secs(60));
    assert_eq!(
        c.clock.rollback,
        RollbackPolicy::WaitUpTo(Duration::from_secs(60))
    );
    assert_eq!(c.shutdown_grace, Duration::from_secs(600));
    assert_eq!(c.lease_settings.ttl, Duration::from_secs(600));
}

#[test]
fn choices_become_the_cores_policies() {
    let c = config("rollback = \"spare\"\nrollback_wait_ms = 250\nsequence_start = \"random\"\nrestart_behind = \"fail\"").unwrap();
    assert_eq!(
        c.clock.rollback,
        RollbackPolicy::SpareSequence {
            then_wait_up_to: Duration::from_millis(250)
        }
    );
    assert_eq!(c.clock.sequence_start, SequenceStart::Random { below: 16 });
    assert_eq!(c.restart_behind, RestartBehind::Fail);
    let c = Config::try_from(
        from_flags(&[
            "--rollback",
            "logical",
            "--sequence-start",
            "continue",
            "--layout",
            "sonyflake",
        ])
        .unwrap(),
    )
    .unwrap();
    assert_eq!(c.clock.rollback, RollbackPolicy::LogicalClock);
    assert_eq!(c.clock.sequence_start, SequenceStart::Continue);
    assert_eq!(
        config("rollback = \"refuse\"").unwrap().clock.rollback,
        RollbackPolicy::Refuse
    );
}

/// The command line over the file: clap updates only the keys the flags (or variables)
/// give, so the file's other keys stay, and what neither gives takes its default.
#[test]
fn flags_replace_only_the_keys_they_give() {
    let mut settings =
        from_toml("worker = 3\ndatacenter = 1\nrollback = \"refuse\"\nlease_ttl_ms = 20000")
            .unwrap();
    let given = command()
        .try_get_matches_from(["--worker", "5", "--rollback", "logical", "--max-batch", "7"])
        .unwrap();
    settings.update_from_arg_matches(&given).unwrap();
    let expected = Settings {
        place: PlaceSettings {
            worker: Some(5),
            datacenter: Some(1),
            ..PlaceSettings::default()
        },
        clock: ClockSettings {
            rollback: Some(RollbackSetting::Logical),
            ..ClockSettings::default()
        },
        serve: ServeSettings {
            lease_ttl_ms: Some(20_000),
            max_batch: Some(7),
            ..ServeSettings::default()
        },
        ..Settings::default()
    };
    assert_eq!(settings, expected);
    let c = Config::try_from(settings).unwrap();
    assert_eq!((c.datacenter, c.worker, c.max_batch), (1, 5, 7));
    assert_eq!(c.lease_settings.renew_every, Duration::from_millis(6_666));
}

#[test]
fn special_cases_of_the_layout_and_epoch() {
    let err = config("epoch = \"2999-01-01T00:00:00Z\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("config key `epoch`: \"2999-01-01T00:00:00Z\" is in the future (now is "),
        "{err}"
    );
    assert_eq!(
        config("layout = \"flickr\"").unwrap_err().to_string(),
        "config key `layout`: \"flickr\" is not a layout: expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"
    );
    let custom = config("layout = \"custom:39/0/10/14\"\ntick_ms = 10\nworker = 1023").unwrap();
    assert_eq!(
        (custom.layout.bits().timestamp, custom.layout.tick_ms()),
        (39, 10)
    );
    let discord = config("layout = \"discord\"\ndatacenter = 31").unwrap();
    assert_eq!(discord.layout, Layout::DISCORD);
    assert_eq!(
        config("layout = \"baidu\"").unwrap_err().to_string(),
        "config key `layout`: \"baidu\" has a time field that ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
    );
    // Baidu's 28 bits of seconds from 2010 ran out in 2018.
    assert_eq!(
        config("layout = \"baidu\"\nepoch = \"2010-01-01T00:00:00Z\"")
            .unwrap_err()
            .to_string(),
        "config key `epoch`: \"2010-01-01T00:00:00Z\" makes layout baidu's time field run out on 2018-07-04T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
    );
    assert!(config("layout = \"baidu\"\nepoch = \"2024-01-01T00:00:00Z\"").is_ok());
    assert_eq!(
        config("overflow_lead_ms = 18446744073709551615")
            .unwrap_err()
            .to_string(),
        "config key `overflow_lead_ms`: \"18446744073709551615\" must be at most 1000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms"
    );
    assert_eq!(
        config("lease = \"static:x\"").unwrap_err().to_string(),
        "config key `lease`: \"static:x\" the worker id after static: must be a whole number"
    );
}

/// The operations guide names settings by flag, variable and key: each one it names is one
/// of these settings, and a row of its limits table gives one setting in all three.
#[test]
fn the_operations_guide_names_real_settings() {
    let guide = include_str!("../../../../docs/OPERATIONS.md");
    let keys = keys();
    let flag_key = |flag: &str| flag.trim_start_matches("--").replace('-', "_");
    for (_, rest) in guide
        .match_indices("`--")
        .map(|(i, _)| guide.split_at(i + 1))
    {
        let flag: String = rest
            .chars()
            .take_while(|c| *c == '-' || c.is_ascii_lowercase())
            .collect();
        assert!(keys.contains(&flag_key(&flag)), "the guide names {flag}");
    }
    for (i, _) in guide.match_indices("SNOWMINT_") {
        let var: String = guide[i + "SNOWMINT_".len()..]
            .chars()
            .take_while(|c| *c == '_' || c.is_ascii_uppercase())
            .collect();
        assert!(
            var.is_empty() || keys.contains(&var.to_lowercase()),
            "the guide names SNOWMINT_{var}"
        );
    }
    let rows: Vec<Vec<&str>> = guide
        .lines()
        .filter(|l| l.starts_with('|') && l.contains("`SNOWMINT_"))
        .map(|l| {
            l.split('|')
                .map(|cell| cell.trim().trim_matches('`'))
                .collect()
        })
        .collect();
    assert!(rows.len() >= 8, "{rows:?}");
    for row in rows {
        let (flag, var, key) = (row[3], row[4], row[5]);
        assert_eq!(flag_key(flag), key, "{row:?}");
        assert_eq!(var, format!("SNOWMINT_{}", key.to_uppercase()), "{row:?}");
    }
}

#[test]
fn the_clock_mode_is_chosen_once_with_its_policies() {
    use snowmint::ClockMode;
    assert_eq!(config("").unwrap().clock.clock, ClockMode::Monotonic);
    let c = config("clock = \"wall\"\nrollback = \"refuse\"").unwrap();
    assert_eq!(
        (c.clock.clock, c.clock.rollback),
        (ClockMode::Wall, RollbackPolicy::Refuse)
    );
    let c = Config::try_from(from_flags(&["--clock", "counter"]).unwrap()).unwrap();
    assert_eq!(c.clock.clock, ClockMode::Counter);
    // A counter's sequence runs on from tick to tick: no start to choose.
    for start in ["random", "continue"] {
        let err = config(&format!(
            "clock = \"counter\"\nsequence_start = \"{start}\""
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "config key `sequence_start`: \"{start}\" conflicts with clock counter: a counter's sequence runs on from one tick into the next, from zero"
            )
        );
    }
}

#[test]
fn the_identity_comes_from_one_place() {
    assert_eq!(
        config("identity_from = \"hostname\"").unwrap().identity,
        snowmint_lease::hostname()
    );
    let err = config("identity = \"web-1\"\nidentity_from = \"ip\"").unwrap_err();
    assert_eq!(
        err.to_string(),
        "config key `identity_from`: \"ip\" conflicts with identity \"web-1\": give one of them"
    );
    let err = config("identity_from = \"mac\"").unwrap_err();
    assert_eq!(
        err.to_string(),
        "config key `identity_from`: \"mac\" is not an identity source: expected hostname, ip or ip:IFACE"
    );
    let err = config("identity_from = \"ip:lo\"").unwrap_err();
    assert_eq!(
        err.to_string(),
        "config key `identity_from`: \"ip:lo\" names no address: interface lo has no address but loopback or link-local ones"
    );
}

#[test]
fn worker_threads_default_to_the_cores_and_are_bounded() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(config("").unwrap().worker_threads, cores);
    assert_eq!(config("worker_threads = 1").unwrap().worker_threads, 1);
    assert_eq!(
        config("worker_threads = 1024").unwrap().worker_threads,
        1024
    );
    for (toml, value) in [("worker_threads = 0", 0), ("worker_threads = 1025", 1025)] {
        assert_eq!(
            config(toml).unwrap_err().to_string(),
            format!("config key `worker_threads`: \"{value}\" is out of range 1..=1024")
        );
    }
    let flags = from_flags(&["--worker-threads", "3"]).unwrap();
    assert_eq!(flags.serve.worker_threads, Some(3));
}

/// The groups other commands share are keys of the one flat file like the rest: a key and
/// its flag set the same field, and a table is no key.
#[test]
fn a_shared_key_and_its_flag_set_one_field() {
    let cases = [
        ("layout", "\"discord\"", "discord"),
        ("epoch", "\"2020-01-01T00:00:00Z\"", "2020-01-01T00:00:00Z"),
        ("tick_ms", "10", "10"),
        ("datacenter", "3", "3"),
        ("worker", "4", "4"),
        ("state_dir", "\"/var/lib/snowmint\"", "/var/lib/snowmint"),
        ("fleet", "\"blue\"", "blue"),
        ("clock", "\"wall\"", "wall"),
        ("rollback", "\"spare\"", "spare"),
        ("rollback_wait_ms", "100", "100"),
        ("sequence_start", "\"random\"", "random"),
    ];
    for (key, toml, flag) in cases {
        let from_file = from_toml(&format!("{key} = {toml}")).unwrap();
        let from_flag = from_flags(&[&format!("--{}", key.replace('_', "-")), flag]).unwrap();
        assert_eq!(from_file, from_flag, "{key}");
        assert_ne!(from_file, Settings::default(), "{key}");
    }
    let err = from_toml("worker = 1\n\n[place]\ndatacenter = 2\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("config file test.toml: line 3, `[place]`: unknown field `place`, expected one of `layout`, "),
        "{err}"
    );
    let err = from_toml("worker = 1\nworker = 2\n")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("config file test.toml: line 2, "), "{err}");
}
