//! `snowmint layout`, run as a real process.

use crate::support;

use support::Snowmint;

#[test]
fn the_default_layout() {
    let out = Snowmint::new().ok(&["layout"]);
    assert!(out.starts_with("twitter layout\n\n"), "{out}");
    assert!(
        out.contains("| 0     | timestamp | datacenter | worker | sequence |"),
        "{out}"
    );
    assert!(
        out.contains("\nepoch       2010-11-04T01:42:54.657Z (1288834974657 ms)\n"),
        "{out}"
    );
    assert!(out.contains("\ntick        1 ms\n"), "{out}");
    assert!(
        out.contains("\ncapacity    4096000 ids per second per worker id"),
        "{out}"
    );
    assert!(out.contains("\nworker ids  1024 "), "{out}");
    assert!(
        out.contains("\nruns out    2080-07-10T17:30:30.209Z (in "),
        "{out}"
    );
    assert!(!out.contains("warning"), "{out}");
}

#[test]
fn presets_and_epochs() {
    let discord = Snowmint::new().ok(&["layout", "--layout", "discord"]);
    assert!(
        discord.contains("| worker | process | increment |"),
        "{discord}"
    );
    assert!(
        discord.contains("\nnote: uses bit 63: ids are unsigned 64-bit numbers, and from 2084-09-06T15:47:35.552Z on they pass 2^63 and overflow a signed BIGINT column\n"),
        "{discord}"
    );
    // Baidu's 28 bits of seconds since 2016-05-20 ran out in 2024.
    let baidu = Snowmint::new().ok(&["layout", "--layout", "baidu"]);
    assert!(
        baidu.contains("\nwarning: the time field ran out on 2024-11-20T21:24:16.000Z"),
        "{baidu}"
    );
    // Twitter's 69 years, started in 1970, end in 2039: a warning from 2029 on.
    let moved = Snowmint::new().ok(&["layout", "--epoch", "0"]);
    assert!(
        moved.contains("\nruns out    2039-09-07T15:47:35.552Z "),
        "{moved}"
    );
}

#[test]
fn a_custom_layout_with_its_tick() {
    let out = Snowmint::new().ok(&["layout", "--layout", "custom:39/0/10/14", "--tick-ms", "10"]);
    assert!(out.starts_with("custom layout\n\n"), "{out}");
    assert!(
        out.contains("| 0     | timestamp | worker  | sequence |"),
        "{out}"
    );
    assert!(out.contains("\ntick        10 ms\n"), "{out}");
    assert!(
        out.contains("\nruns out    2185-01-19T05:11:53.537Z (in "),
        "{out}"
    );
    assert!(!out.contains("note: uses bit 63"), "{out}");
}
