//! `snowmint parse`, run as a real process.

mod support;

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
