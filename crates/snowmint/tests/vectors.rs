//! `testdata/vectors.json`: what every client (`clients/<language>/`) must agree with the
//! core on, written by the core:
//!
//! - `layouts`: every preset's numbers (the clients' preset tables are generated from them
//!   by `scripts/gen-clients`) and two custom layouts;
//! - `vectors`: ids and their decoded fields for each of those layouts;
//! - `documented`: the ids the systems document themselves, with the source named, each
//!   checked here against what its source says;
//! - `encodings`: how each encoding reads text (the clients' encoding tables are generated
//!   from them by `scripts/gen-clients`);
//! - `texts`: id text every client must read as the core does ([`Layout::read_id`]): in the
//!   encoding named (all-digit hex and base32, unpadded base62, binary), and a negative
//!   decimal as a signed 64-bit column's id of a layout that uses all 64 bits;
//! - `errors`: input the clients refuse, with the core's message, word for word.
//!
//! This test fails when the file is stale; to write it afresh:
//!
//! ```text
//! SNOWMINT_WRITE_VECTORS=1 cargo test -p snowmint --test api vectors::
//! ```
//!
//! Every integer is a decimal string, so no language reads one through a float.

use serde_json::{Value, json};
use snowmint::{Bits, Encoding, Id, Layout, UnixMs};

/// The file, from the repository's root.
const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors.json");

/// Custom layouts the clients must take: spelled as `--layout` spells them, with their tick
/// and epoch.
fn customs() -> Vec<(String, Layout)> {
    let fleet = Layout::new(
        Bits {
            timestamp: 39,
            datacenter: 0,
            worker: 10,
            sequence: 14,
        },
        10,
        1_577_836_800_000,
    )
    .unwrap();
    let wide = Layout::new_u64(
        Bits {
            timestamp: 32,
            datacenter: 8,
            worker: 8,
            sequence: 16,
        },
        1_000,
        1_700_000_000_000,
    )
    .unwrap();
    vec![
        ("custom:39/0/10/14".to_string(), fleet),
        ("custom:32/8/8/16".to_string(), wide),
    ]
}

/// splitmix64: a fixed stream of ids, the same on every run.
fn stream(seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed;
    std::iter::repeat_with(move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// The layout's one form ([`Layout::form`]), with the spec it was made from and its
/// largest id.
fn layout_json(spec: &str, layout: &Layout) -> Value {
    let mut json = serde_json::to_value(layout.form()).expect("a layout is JSON");
    json["layout"] = spec.into();
    json["max_id"] = layout.max_id().as_u64().to_string().into();
    json
}

/// The ids of one layout: the edges (zero, the largest id, each field at its largest alone)
/// and a fixed stream of ids within the layout's width.
fn ids(layout: &Layout, seed: u64) -> Vec<u64> {
    let max = layout.max_id().as_u64();
    let fields = |fields: snowmint::Fields, timestamp| {
        layout
            .compose(timestamp, fields)
            .expect("in range")
            .as_u64()
    };
    let none = snowmint::Fields::default();
    let mut ids = vec![
        0,
        1,
        max,
        fields(none, layout.max_timestamp()),
        fields(
            snowmint::Fields {
                datacenter: layout.max_datacenter(),
                ..none
            },
            0,
        ),
        fields(
            snowmint::Fields {
                worker: layout.max_worker(),
                ..none
            },
            0,
        ),
        fields(
            snowmint::Fields {
                sequence: layout.max_sequence(),
                ..none
            },
            0,
        ),
    ];
    ids.extend(stream(seed).take(12).map(|x| x & max));
    ids
}

fn vectors() -> Value {
    let mut layouts = Vec::new();
    let mut vectors = Vec::new();
    let presets = Layout::PRESETS.map(|l| (l.name().to_string(), l));
    for (seed, (spec, layout)) in presets.into_iter().chain(customs()).enumerate() {
        layouts.push(layout_json(&spec, &layout));
        for id in ids(&layout, seed as u64) {
            let parts = layout.decode(Id::from_u64(id)).expect("within the layout");
            vectors.push(json!({
                "layout": spec,
                "id": id.to_string(),
                "timestamp": parts.timestamp.to_string(),
                "unix_ms": parts.unix_ms.to_string(),
                "datacenter": parts.datacenter.to_string(),
                "worker": parts.worker.to_string(),
                "sequence": parts.sequence.to_string(),
            }));
        }
    }
    json!({
        "about": "Written by crates/snowmint/tests/vectors.rs from the core; do not edit by hand. layouts: every preset's numbers (scripts/gen-clients writes the clients' preset tables from them) and two custom layouts. vectors: ids and the fields every client must decode them to. documented: ids the systems document themselves, with the source. encodings: how each encoding reads text (its digits in order of value, whether letters are read in either case, its prefixes, its most digits, the letters it reads as digits, the names it goes by; scripts/gen-clients writes the clients' tables from them). texts: id text read in the encoding named (decimal when none is; no client guesses), a negative decimal as a signed 64-bit column's id. errors: input every client must refuse with the core's message, word for word (what: parse an id's decimal text, decode an id with a layout, read id text with a layout and an encoding, or name a layout with an optional tick and epoch). Integers are decimal strings.",
        "layouts": layouts,
        "vectors": vectors,
        "documented": documented(),
        "encodings": encodings(),
        "texts": texts(),
        "errors": errors(),
    })
}

/// An id a system documents itself, and what the source says it holds.
struct Documented {
    source: &'static str,
    /// The layout, as `Layout::by_name` reads it.
    layout: &'static str,
    /// The source's own tick and epoch, when they are not the layout's.
    tick_epoch: Option<(u64, u64)>,
    id: u64,
    /// The id as the source writes it, when that is not decimal.
    text: Option<(Encoding, &'static str)>,
    /// What the source says the id holds, by the keys of a vector.
    says: &'static [(&'static str, &'static str)],
}

/// The documented ids. Twitter and Sonyflake publish no decoded example: the shifts of their
/// reference code are pinned beside the presets instead (`preset.rs`).
const DOCUMENTED: &[Documented] = &[
    Documented {
        source: "Discord developer documentation, Reference, \"Snowflakes\": 175928847299117063 is 2016-04-30 11:18:25.796 UTC, internal worker 1, internal process 0, increment 7",
        layout: "discord",
        tick_epoch: None,
        id: 175_928_847_299_117_063,
        text: None,
        says: &[
            ("time", "2016-04-30T11:18:25.796Z"),
            ("timestamp", "41944705796"),
            ("worker", "1"),
            ("datacenter", "0"),
            ("sequence", "7"),
        ],
    },
    Documented {
        source: "Instagram Engineering, \"Sharding & IDs at Instagram\": 1387263000 ms into the epoch, user 31341 on shard 31341 % 2000 = 1341, sequence 5001 % 1024 = 905, composed as ms << 23 | shard << 10 | seq",
        layout: "instagram",
        tick_epoch: None,
        id: (1_387_263_000 << 23) | (1341 << 10) | 905,
        text: None,
        says: &[
            ("timestamp", "1387263000"),
            ("worker", "1341"),
            ("sequence", "905"),
        ],
    },
    Documented {
        source: "TSID Creator README: Tsid.from(\"0123456789ABC\") has time 9153062458 ms (2020-04-15T22:31:02.458Z) and random bits 305516, which the preset splits into node 74 and counter 2412 (305516 = 74 << 12 | 2412)",
        layout: "tsid",
        tick_epoch: None,
        id: 38_390_726_480_144_748,
        text: Some((Encoding::Base32, "0123456789ABC")),
        says: &[
            ("time", "2020-04-15T22:31:02.458Z"),
            ("timestamp", "9153062458"),
            ("worker", "74"),
            ("sequence", "2412"),
        ],
    },
    Documented {
        source: "TSID Creator README: 38352658567418867 is 2020-04-15T19:59:46.360Z",
        layout: "tsid",
        tick_epoch: None,
        id: 38_352_658_567_418_867,
        text: None,
        says: &[("time", "2020-04-15T19:59:46.360Z")],
    },
    Documented {
        source: "Baidu uid-generator README: 180363646902239241 is worker 4, sequence 9 at 2017-01-19 12:15:46 (UTC+8), with its example configuration of 29 bits of seconds since 2016-09-20 (UTC+8), 21 worker bits and 13 sequence bits",
        layout: "custom:29/0/21/13",
        tick_epoch: Some((1000, 1_474_300_800_000)),
        id: 180_363_646_902_239_241,
        text: None,
        says: &[
            ("time", "2017-01-19T04:15:46.000Z"),
            ("worker", "4"),
            ("sequence", "9"),
        ],
    },
    Documented {
        source: "Baidu uid-generator README: 180363646902239241 is worker 4, sequence 9; the default preset splits the time differently but reads the same worker and sequence",
        layout: "baidu",
        tick_epoch: None,
        id: 180_363_646_902_239_241,
        text: None,
        says: &[("worker", "4"), ("sequence", "9")],
    },
    Documented {
        source: "Mastodon API documentation, Status entity: status 103270115826048975 was created at 2019-12-08T03:48:33.901Z; its id was taken from the database clock 52 ms earlier",
        layout: "mastodon",
        tick_epoch: None,
        id: 103_270_115_826_048_975,
        text: None,
        says: &[("time", "2019-12-08T03:48:33.849Z")],
    },
];

/// The documented ids decoded by the core, after checking each against what its source says.
fn documented() -> Vec<Value> {
    DOCUMENTED
        .iter()
        .map(|d| {
            let mut layout = Layout::by_name(d.layout).unwrap();
            if let Some((tick, epoch)) = d.tick_epoch {
                layout = layout
                    .with_tick_ms(tick)
                    .unwrap()
                    .with_epoch_ms(epoch)
                    .unwrap();
            }
            if let Some((encoding, text)) = d.text {
                assert_eq!(encoding.decode(text), Ok(d.id), "{}", d.source);
            }
            let parts = layout
                .decode(Id::from_u64(d.id))
                .expect("within the layout");
            let mut v = json!({
                "source": d.source,
                "layout": d.layout,
                "id": d.id.to_string(),
                "time": UnixMs(parts.unix_ms).to_string(),
                "timestamp": parts.timestamp.to_string(),
                "unix_ms": parts.unix_ms.to_string(),
                "datacenter": parts.datacenter.to_string(),
                "worker": parts.worker.to_string(),
                "sequence": parts.sequence.to_string(),
            });
            if let Some((tick, epoch)) = d.tick_epoch {
                v["tick_ms"] = tick.to_string().into();
                v["epoch_ms"] = epoch.to_string().into();
            }
            for (key, said) in d.says {
                assert_eq!(v[key], *said, "{key} of {}", d.source);
            }
            v
        })
        .collect()
}

/// Id text the clients must read as the core does: (layout, text, encoding), decimal when
/// no encoding is named.
const TEXTS: &[(&str, &str, Option<Encoding>)] = &[
    // All digits, in hex and base32: only the encoding named tells them from a decimal.
    ("twitter", "3962102955333052", Some(Encoding::Hex)),
    ("twitter", "0x3962102955333052", Some(Encoding::Hex)),
    ("twitter", "0X00000000000000FF", Some(Encoding::Hex)),
    ("tsid", "8000000000000", Some(Encoding::Base32)),
    ("tsid", "0000000000123", Some(Encoding::Base32)),
    ("tsid", "0000000000123", Some(Encoding::Decimal)),
    ("tsid", "0000000000123", None),
    // Crockford's aliases and either case.
    ("tsid", "01221h8q1mmzk", Some(Encoding::Base32)),
    ("tsid", "OI2L", Some(Encoding::Base32)),
    // Base62, padded as tsid-creator writes it and unpadded as other TSID libraries do.
    ("tsid", "0WIlLsHwljH", Some(Encoding::Base62)),
    ("tsid", "WIlLsHwljH", Some(Encoding::Base62)),
    ("discord", "LygHa16AHYF", Some(Encoding::Base62)),
    ("twitter", "0b101", Some(Encoding::Binary)),
    ("twitter", "101", Some(Encoding::Binary)),
    // Negative decimals: a signed 64-bit column's ids of layouts that use all 64 bits.
    ("instagram", "-8499700661677131895", None),
    ("instagram", "-8499700661677131895", Some(Encoding::Decimal)),
    ("discord", "-1", None),
    ("discord", "-9223372036854775808", None),
    ("mastodon", "-0", None),
    ("custom:32/8/8/16", "-2", None),
];

/// Id text with a layout and an encoding the clients must refuse as the core does.
const BAD_TEXTS: &[(&str, &str, Option<Encoding>)] = &[
    ("twitter", "-1", None),
    ("sonyflake", "-8499700661677131895", Some(Encoding::Decimal)),
    ("discord", "-9223372036854775809", None),
    ("discord", "-99999999999999999999", None),
    ("discord", "-", None),
    ("discord", "-12a", None),
    ("discord", "-1", Some(Encoding::Hex)),
    ("tsid", "0x", Some(Encoding::Hex)),
    ("tsid", "0xfg", Some(Encoding::Hex)),
    ("tsid", "0123456789abcdef0", Some(Encoding::Hex)),
    ("tsid", "G000000000000", Some(Encoding::Base32)),
    ("tsid", "0123U", Some(Encoding::Base32)),
    ("tsid", "WIlLsHwljH!", Some(Encoding::Base62)),
    ("tsid", "LygHa16AHYG", Some(Encoding::Base62)),
    ("tsid", "0b102", Some(Encoding::Binary)),
    ("tsid", "0b", Some(Encoding::Binary)),
];

/// The layout a vector's spec names: a preset, or one of [`customs`].
fn layout_of(spec: &str) -> Layout {
    customs()
        .into_iter()
        .find(|(s, _)| s == spec)
        .map_or_else(|| Layout::by_name(spec).unwrap(), |(_, l)| l)
}

/// How each encoding reads text, from the core's own tables.
fn encodings() -> Vec<Value> {
    Encoding::ALL
        .iter()
        .map(|&encoding| {
            let alphabet = encoding.alphabet();
            // What it reads beyond its alphabet in either case: Crockford's letters.
            let aliases: serde_json::Map<String, Value> = encoding
                .digits()
                .filter(|(ch, _)| {
                    !alphabet.contains(ch.to_ascii_lowercase())
                        && !alphabet.contains(ch.to_ascii_uppercase())
                        && ch.is_ascii_uppercase()
                })
                .map(|(ch, digit)| (ch.to_string(), digit.into()))
                .collect();
            let names: Vec<&str> = Encoding::NAMES
                .iter()
                .filter(|(_, e)| *e == encoding)
                .map(|(name, _)| *name)
                .collect();
            json!({
                "encoding": encoding.name(),
                "names": names,
                "alphabet": alphabet,
                "ignores_case": encoding.ignores_case(),
                "prefixes": encoding.prefixes(),
                "max_len": encoding.max_len(),
                "aliases": aliases,
            })
        })
        .collect()
}

/// The texts read by the core.
fn texts() -> Vec<Value> {
    TEXTS
        .iter()
        .map(|(spec, text, encoding)| {
            let read = layout_of(spec)
                .read_id(text, Some(encoding.unwrap_or(Encoding::Decimal)))
                .expect(text);
            let mut v = json!({
                "layout": spec,
                "text": text,
                "id": read.id.as_u64().to_string(),
                "signed": read.signed,
            });
            if let Some(encoding) = encoding {
                v["encoding"] = encoding.name().into();
            }
            v
        })
        .collect()
}

/// Decimal id text the clients must refuse as the core does: each kind of bad character
/// (including ones a language's own integer parser takes), too long, too large.
const BAD_DECIMALS: &[&str] = &[
    "",
    " 12",
    "+12",
    "-1",
    "12a4",
    "1_000",
    "1\n",
    "1\t2",
    "1'2",
    "1\"2",
    "1\\2",
    "1\u{663}",
    "\u{1f600}x",
    "000000000000000000000",
    "000000000000000000000x",
    "18446744073709551616",
    "99999999999999999999",
];

/// Ids past their layout's largest id.
const IDS_PAST_THEIR_LAYOUT: &[(&str, u64)] = &[
    ("twitter", u64::MAX),
    ("sonyflake", 1 << 63),
    ("custom:39/0/10/14", 1 << 63),
];

/// Layouts the clients must refuse as the core does: a name, and a tick and an epoch to
/// replace its own.
const BAD_LAYOUTS: &[(&str, Option<u64>, Option<u64>)] = &[
    ("flickr", None, None),
    ("__proto__", None, None),
    ("custom41/5/5/12", None, None),
    ("custom:41/5/5", None, None),
    ("custom:", None, None),
    ("custom:41/5/5/12/1", None, None),
    ("custom:41/x/5/12", None, None),
    ("custom:41/-1/5/12", None, None),
    ("custom:41/5/5/65", None, None),
    ("custom:+41/5/5/12", None, None),
    ("custom: 41/5/5/12", None, None),
    ("custom:41/5/5/12 ", None, None),
    ("custom:41/5/5/0012", None, None),
    ("custom:41/5/5/", None, None),
    ("custom:41/5/5/11", None, None),
    ("custom:43/5/5/12", None, None),
    ("custom:0/26/25/12", None, None),
    ("custom:41/11/11/0", None, None),
    ("twitter", Some(0), None),
    // 2^41 ticks of 2^24 ms each end past 2^64 ms.
    ("twitter", Some(1 << 24), None),
    // 2^62 ticks of 3 ms fit after Twitter's epoch, but not after this one: the tick alone
    // is fine, so the message names the epoch whichever of the two a client applies first.
    ("custom:62/0/0/2", Some(3), Some((1 << 62) + 1)),
];

/// Every bad input above with the core's message for it.
fn errors() -> Vec<Value> {
    let mut out = Vec::new();
    for text in BAD_DECIMALS {
        let err = Id::parse_as(text, Encoding::Decimal).expect_err(text);
        out.push(json!({ "what": "parse", "id": text, "message": err.to_string() }));
    }
    for (spec, id) in IDS_PAST_THEIR_LAYOUT {
        let layout = Layout::by_name(spec).unwrap();
        let err = layout.decode(Id::from_u64(*id)).expect_err(spec);
        out.push(json!({
            "what": "decode",
            "layout": spec,
            "id": id.to_string(),
            "message": err.to_string(),
        }));
    }
    for (spec, text, encoding) in BAD_TEXTS {
        let err = layout_of(spec)
            .read_id(text, Some(encoding.unwrap_or(Encoding::Decimal)))
            .expect_err(text);
        let mut v =
            json!({ "what": "read", "layout": spec, "id": text, "message": err.to_string() });
        if let Some(encoding) = encoding {
            v["encoding"] = encoding.name().into();
        }
        out.push(v);
    }
    for (spec, tick, epoch) in BAD_LAYOUTS {
        let err = Layout::by_name(spec)
            .and_then(|l| tick.map_or(Ok(l), |t| l.with_tick_ms(t)))
            .and_then(|l| epoch.map_or(Ok(l), |e| l.with_epoch_ms(e)))
            .expect_err(spec);
        let mut v = json!({ "what": "layout", "layout": spec, "message": err.to_string() });
        if let Some(tick) = tick {
            v["tick_ms"] = tick.to_string().into();
        }
        if let Some(epoch) = epoch {
            v["epoch_ms"] = epoch.to_string().into();
        }
        out.push(v);
    }
    out
}

#[test]
fn the_error_messages_are_the_cores_own_words() {
    let all = errors();
    let message = |what: &str, key: &str, value: &str| {
        all.iter()
            .find(|e| e["what"] == what && e[key] == value)
            .map(|e| e["message"].as_str().unwrap().to_string())
            .unwrap()
    };
    // A few pinned here as well, so a change of wording is seen in review, not only as a
    // rewritten file.
    assert_eq!(message("parse", "id", ""), "empty input: expected an id");
    assert_eq!(
        message("parse", "id", "12a4"),
        "invalid character 'a' at position 2 in decimal id"
    );
    assert_eq!(
        message("decode", "layout", "twitter"),
        "id 18446744073709551615 is out of range for this layout: its largest id is 9223372036854775807"
    );
    assert_eq!(
        message("read", "id", "-9223372036854775809"),
        "id \"-9223372036854775809\" is below -9223372036854775808, the smallest signed 64-bit number"
    );
    assert_eq!(
        message("layout", "layout", "flickr"),
        "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"
    );
}

#[test]
fn the_vectors_file_is_what_the_core_writes() {
    let text = serde_json::to_string_pretty(&vectors()).unwrap() + "\n";
    if std::env::var_os("SNOWMINT_WRITE_VECTORS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(FILE).parent().unwrap()).unwrap();
        std::fs::write(FILE, &text).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(FILE).unwrap_or_default();
    assert!(
        on_disk == text,
        "testdata/vectors.json is stale or missing: write it with \
         SNOWMINT_WRITE_VECTORS=1 cargo test -p snowmint --test api vectors::"
    );
}

/// The cases the issue of misread ids names: all-digit hex and base32 read with their
/// encoding, a signed column's id, unpadded base62.
#[test]
fn the_texts_hold_the_cases_guessing_gets_wrong() {
    let all = texts();
    let id = |spec: &str, text: &str, encoding: Option<&str>| {
        all.iter()
            .find(|t| {
                t["layout"] == spec
                    && t["text"] == text
                    && t.get("encoding").and_then(Value::as_str) == encoding
            })
            .map(|t| t["id"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        id("twitter", "3962102955333052", Some("hex")),
        "4134885177588658258"
    );
    assert_eq!(
        id("tsid", "8000000000000", Some("base32")),
        "9223372036854775808"
    );
    assert_eq!(id("tsid", "0000000000123", Some("base32")), "1091");
    assert_eq!(id("tsid", "0000000000123", None), "123");
    assert_eq!(
        id("instagram", "-8499700661677131895", None),
        "9947043412032419721"
    );
    assert_eq!(
        id("tsid", "WIlLsHwljH", Some("base62")),
        id("tsid", "0WIlLsHwljH", Some("base62"))
    );
}

#[test]
fn every_vector_composes_back_to_its_id() {
    let all = vectors();
    for v in all["vectors"].as_array().unwrap() {
        let spec = v["layout"].as_str().unwrap();
        let layout = Layout::PRESETS
            .into_iter()
            .find(|l| l.name() == spec)
            .or_else(|| {
                customs()
                    .into_iter()
                    .find(|(s, _)| s == spec)
                    .map(|(_, l)| l)
            })
            .unwrap();
        let n = |key: &str| v[key].as_str().unwrap().parse::<u64>().unwrap();
        let fields = snowmint::Fields {
            datacenter: n("datacenter"),
            worker: n("worker"),
            sequence: n("sequence"),
        };
        let id = layout.compose(n("timestamp"), fields).unwrap();
        assert_eq!(id.as_u64(), n("id"), "{v}");
        assert_eq!(layout.unix_ms_at(n("timestamp")), n("unix_ms"), "{v}");
    }
}
