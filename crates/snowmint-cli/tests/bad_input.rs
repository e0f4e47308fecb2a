//! Bad input: one line on stderr naming the problem, exit status 2, nothing on stdout, and
//! nothing written to the state directory.

use crate::support;

use support::Snowmint;

fn rejects(args: &[&str], expected: &str) {
    let sm = Snowmint::new();
    let out = sm.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "snowmint {args:?}: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "snowmint {args:?} printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(expected),
        "snowmint {args:?}: expected {expected:?} in {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(sm.state_dir()).unwrap().collect();
    assert!(left.is_empty(), "snowmint {args:?} wrote {left:?}");
}

#[test]
fn unknown_preset() {
    let expected = r#"unknown layout "flickr": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"#;
    rejects(&["gen", "--layout", "flickr"], expected);
    rejects(&["parse", "1", "--layout", "flickr"], expected);
    rejects(&["layout", "--layout", "flickr"], expected);
}

#[test]
fn malformed_ids() {
    // Read by base32 and base62: the error names them and points to --encoding.
    rejects(
        &["parse", "12x"],
        r#"cannot parse "12x" without --encoding (such as --encoding base62): invalid character 'x' at position 2 in decimal id, the encoding guessed from its form, but it reads as base32 or base62"#,
    );
    rejects(
        &["parse", "12x!"],
        r#"cannot parse "12x!": invalid character 'x' at position 2 in decimal id"#,
    );
    rejects(
        &["parse", ""],
        r#"cannot parse "": empty input: expected an id"#,
    );
    rejects(
        &["parse", "99999999999999999999"],
        "decimal id does not fit in 64 bits",
    );
    rejects(
        &["parse", "0xfffffffffffffffff"],
        "hex id has 17 characters, more than the 16 a 64-bit id takes",
    );
    rejects(
        &["parse", "0b1021"],
        r#"cannot parse "0b1021": invalid character '2' at position 4 in binary id"#,
    );
    rejects(
        &["parse", &format!("0b{}", "1".repeat(65))],
        "binary id has 65 characters, more than the 64 a 64-bit id takes",
    );
    // One bad id among good ones: nothing is printed for the good ones either.
    rejects(
        &["parse", "1", "2", "zz!"],
        r#"cannot parse "zz!": invalid character 'z' at position 0 in decimal id"#,
    );
}

#[test]
fn ids_out_of_the_layouts_range() {
    rejects(
        &["parse", "9223372036854775808"],
        "cannot decode 9223372036854775808 with layout twitter: id 9223372036854775808 is out of range for this layout: its largest id is 9223372036854775807",
    );
    rejects(
        &["parse", "ffffffffffffffff", "--layout", "sonyflake"],
        "is out of range for this layout",
    );
}

#[test]
fn worker_or_datacenter_out_of_range() {
    rejects(
        &["gen", "--worker", "40"],
        "worker id 40 is out of range 0..=31",
    );
    rejects(
        &["gen", "--datacenter", "32"],
        "datacenter id 32 is out of range 0..=31",
    );
    rejects(
        &["gen", "--layout", "sonyflake", "--worker", "65536"],
        "worker id 65536 is out of range 0..=65535",
    );
}

#[test]
fn epoch_in_the_future() {
    rejects(
        &["gen", "--epoch", "2999-01-01T00:00:00Z"],
        r#"epoch "2999-01-01T00:00:00Z" is in the future (now is "#,
    );
    rejects(
        &["parse", "1", "--epoch", "99999999999999"],
        r#"epoch "99999999999999" (5138-11-16T09:46:39.999Z) is in the future"#,
    );
    rejects(
        &["layout", "--epoch", "2999-01-01T00:00:00Z"],
        "is in the future",
    );
}

#[test]
fn epoch_that_is_no_time() {
    rejects(
        &["gen", "--epoch", "soon"],
        r#"epoch "soon" is neither milliseconds since the Unix epoch nor an RFC 3339 time"#,
    );
}

#[test]
fn a_layout_that_ran_out_is_refused_with_its_date() {
    rejects(
        &["gen", "--layout", "baidu"],
        "layout baidu's time field ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch",
    );
}

#[test]
fn custom_layouts_name_the_field_and_the_limit() {
    rejects(
        &["gen", "--layout", "custom:41/5/5/11"],
        "custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64",
    );
    rejects(
        &["parse", "1", "--layout", "custom:41/5/x/12"],
        r#"custom layout worker width "x" is not a number of bits 0..=64"#,
    );
    rejects(
        &["layout", "--layout", "custom:41/5/5/12", "--tick-ms", "0"],
        "cannot use --tick-ms 0: tick length must be at least 1 ms, got 0",
    );
    rejects(
        &["gen", "--layout", "custom:41/0/10/12", "--datacenter", "1"],
        "datacenter id 1 is out of range 0..=0",
    );
}

#[test]
fn usage_errors_from_clap_exit_2_too() {
    for args in [
        &["gen", "--format", "octal"][..],
        &["gen", "-n", "-1"],
        &["parse"],
        &["frobnicate"],
    ] {
        let out = Snowmint::new().run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `gen` and `serve` read the settings they share from one declaration: the same variable
/// sets both, and a bad value gets the same words from each.
#[test]
fn a_shared_setting_is_one_variable_for_gen_and_serve() {
    let sm = Snowmint::new();
    let mut words = Vec::new();
    for command in ["gen", "serve"] {
        let out = sm
            .command(&[command])
            .env("SNOWMINT_SEQUENCE_START", "sometimes")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("invalid value 'sometimes' for '--sequence-start <START>'"),
            "{command}: {stderr}"
        );
        words.push(stderr.replace(command, "COMMAND"));
    }
    assert_eq!(words[0], words[1]);
    // And a good value takes effect: worker 600 is in range for this layout only.
    let json = sm
        .command(&["gen", "--json"])
        .env("SNOWMINT_LAYOUT", "custom:41/0/10/12")
        .env("SNOWMINT_WORKER", "600")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&json.stdout);
    let id: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(id["worker"].as_u64(), Some(600), "{line}");
}
