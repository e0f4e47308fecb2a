//! `snowmint parse`, run as a real process.

use crate::support;

use support::Snowmint;

const DISCORD_JSON: &str = r#"{"id":"175928847299117063","unix_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter":0,"worker":1,"sequence":7}"#;

/// Discord's documentation: 175928847299117063 is 2016-04-30 11:18:25.796 UTC, worker 1,
/// process 0, increment 7.
#[test]
fn discords_documented_id_as_json() {
    let out = Snowmint::new().ok(&[
        "parse",
        "175928847299117063",
        "--layout",
        "discord",
        "--json",
    ]);
    assert_eq!(out, format!("{DISCORD_JSON}\n"));
}

#[test]
fn the_same_id_in_every_encoding() {
    let sm = Snowmint::new();
    // decimal, hex (prefixed), base32 (13 characters), base62 (11 characters), hex (16),
    // binary (prefixed, unpadded and padded)
    let binary = format!("0b{:b}", 175_928_847_299_117_063u64);
    let padded = format!("0b{:064b}", 175_928_847_299_117_063u64);
    let texts = [
        "175928847299117063",
        "0x271065ac1020007",
        "04W86BB0G4007",
        "0Czks0tP37X",
        "0271065AC1020007",
        &binary,
        &padded,
    ];
    let mut args = vec!["parse", "--layout", "discord", "--json"];
    args.extend(texts);
    let out = sm.ok(&args);
    assert_eq!(out.lines().collect::<Vec<_>>(), [DISCORD_JSON; 7]);
}

#[test]
fn human_output_names_the_encoding_and_the_presets_own_fields() {
    let out = Snowmint::new().ok(&["parse", "04W86BB0G4007", "--layout", "discord"]);
    assert_eq!(
        out,
        "id          175928847299117063 (read \"04W86BB0G4007\" as base32)\n\
         layout      discord\n\
         time        2016-04-30T11:18:25.796Z\n\
         unix_ms     1462015105796\n\
         datacenter  0 (discord's process)\n\
         worker      1\n\
         sequence    7 (discord's increment)\n"
    );
    let twitter = Snowmint::new().ok(&["parse", "0"]);
    assert!(
        twitter.starts_with("id          0 (read as decimal)\nlayout      twitter\n"),
        "{twitter}"
    );
    assert!(
        twitter.contains("\ntime        2010-11-04T01:42:54.657Z\n"),
        "{twitter}"
    );
}

#[test]
fn several_ids_print_in_order() {
    let out = Snowmint::new().ok(&["parse", "--json", "4194304", "1"]);
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(r#"{"id":"4194304","unix_ms":1288834974658,"#),
        "{out}"
    );
    assert!(
        lines[1].ends_with(r#""datacenter":0,"worker":0,"sequence":1}"#),
        "{out}"
    );
    let human = Snowmint::new().ok(&["parse", "4194304", "1"]);
    assert_eq!(
        human.matches("\n\nid ").count(),
        1,
        "a blank line between ids: {human}"
    );
}

#[test]
fn epoch_replaces_the_presets() {
    let out = Snowmint::new().ok(&[
        "parse",
        "4194304",
        "--epoch",
        "2020-01-01T00:00:00Z",
        "--json",
    ]);
    assert!(
        out.contains(r#""unix_ms":1577836800001,"time":"2020-01-01T00:00:00.001Z""#),
        "{out}"
    );
    let same = Snowmint::new().ok(&["parse", "4194304", "--epoch", "1577836800000", "--json"]);
    assert_eq!(out, same);
}

/// Instagram's function returns negative `bigint`s after 2046-06-27: read as the two's
/// complement, and said so, with `--` before the id as people write it.
#[test]
fn a_negative_decimal_is_a_signed_column_of_a_64_bit_layout() {
    let sm = Snowmint::new();
    let out = sm.ok(&[
        "parse",
        "--",
        "-8499700661677131895",
        "--layout",
        "instagram",
    ]);
    assert_eq!(
        out,
        "id          9947043412032419721 (read \"-8499700661677131895\" as a signed 64-bit decimal: its two's complement)\n\
         layout      instagram\n\
         time        2049-03-22T04:26:40.000Z\n\
         unix_ms     2500000000000\n\
         datacenter  0\n\
         worker      1341 (instagram's shard)\n\
         sequence    905\n"
    );
    let json = sm.ok(&[
        "parse",
        "-8499700661677131895",
        "--layout",
        "instagram",
        "--json",
    ]);
    assert!(
        json.starts_with(r#"{"id":"9947043412032419721","#),
        "{json}"
    );
    let out = sm.run(&["parse", "--", "-8499700661677131895"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cannot parse \"-8499700661677131895\": id \"-8499700661677131895\" is negative, but layout twitter uses 63 bits: none of its ids is negative, even in a signed 64-bit column\n"
    );

    // Only a negative id right after `--` lets options follow it: anything else after
    // `--` is an id, as `--` means, and is refused as one.
    for (args, said) in [
        (
            &["--", "--5"][..],
            "invalid character '-' at position 1 in decimal id",
        ),
        (&["--", "--json", "5"][..], "cannot parse \"--json\""),
        (&["--", "--help"][..], "cannot parse \"--help\""),
    ] {
        let out = sm.run(&[&["parse"][..], args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
}

/// Text of digits only is decimal unless --encoding names another encoding.
#[test]
fn the_encoding_flag_says_how_to_read_the_text() {
    let sm = Snowmint::new();
    let id = |args: &[&str]| {
        let mut all = vec!["parse", "--json", "--layout", "tsid"];
        all.extend(args);
        let out = sm.ok(&all);
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        json["id"].as_str().unwrap().to_string()
    };
    assert_eq!(
        id(&["3962102955333052", "--encoding", "hex"]),
        "4134885177588658258"
    );
    assert_eq!(id(&["3962102955333052"]), "3962102955333052");
    assert_eq!(
        id(&["8000000000000", "--encoding", "base32"]),
        "9223372036854775808"
    );
    assert_eq!(id(&["0000000000123", "--encoding", "b32"]), "1091");
    assert_eq!(id(&["0000000000123"]), "123");
    assert_eq!(
        id(&["WIlLsHwljH", "--encoding", "base62"]),
        "437283649808777971"
    );
    let out = sm.run(&["parse", "WIlLsHwljH", "--layout", "tsid"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cannot parse \"WIlLsHwljH\" without --encoding (such as --encoding base62): invalid character 'W' at position 0 in decimal id, the encoding guessed from its form, but it reads as base32 or base62: name its encoding (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)\n"
    );
    let out = sm.run(&["parse", "12", "--encoding", "base64"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown encoding \"base64\""),
        "{out:?}"
    );
    let help = sm.ok(&["parse", "--help"]);
    assert!(help.contains("--encoding base62"), "{help}");
}

/// What `compose` writes in each encoding (as `gen` does), `parse` reads back, guessing or
/// told.
#[test]
fn every_format_written_parses_back() {
    let sm = Snowmint::new();
    // Discord's documented id, by its parts.
    let parts = "--time 1462015105796 --worker 1 --sequence 7 --layout discord";
    for format in ["dec", "hex", "base32", "base62", "binary"] {
        let mut compose = vec!["compose", "--format", format];
        compose.extend(parts.split(' '));
        let text = sm.ok(&compose);
        let text = text.trim();
        for encoding in [Some(format), None] {
            let mut parse = vec!["parse", text, "--layout", "discord", "--json"];
            parse.extend(encoding.map(|e| ["--encoding", e]).into_iter().flatten());
            assert_eq!(
                sm.ok(&parse),
                format!("{DISCORD_JSON}\n"),
                "{format} {text}"
            );
        }
    }
}

/// RFC 3339 reaches the end of the year 9999, a day past jiff's timestamps.
#[test]
fn times_run_to_the_end_of_the_year_9999() {
    let sm = Snowmint::new();
    let out = sm.ok(&["at", "9999-12-31T00:00:00Z", "--layout", "mastodon"]);
    assert_eq!(
        out,
        "first  16606967522918400000\nlast   16606967522918465535\n"
    );
    let id = sm.ok(&[
        "compose",
        "--layout",
        "mastodon",
        "--time",
        "9999-12-31T23:59:59.999Z",
    ]);
    let parsed = sm.ok(&["parse", id.trim(), "--layout", "mastodon"]);
    assert!(
        parsed.contains("\ntime        9999-12-31T23:59:59.999Z\n"),
        "{parsed}"
    );
}
