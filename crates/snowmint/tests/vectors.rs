//! `testdata/vectors.json`: ids and their decoded fields for every preset and two custom
//! layouts, written by the core, so that every client (`clients/<language>/`) decodes bit
//! for bit as the core does. This test fails when the file is stale; to write it afresh:
//!
//! ```text
//! SNOWMINT_WRITE_VECTORS=1 cargo test -p snowmint --test vectors
//! ```
//!
//! Every integer is a decimal string, so no language reads one through a float.

use serde_json::{Value, json};
use snowmint::{Bits, Field, Id, Layout};

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

fn layout_json(spec: &str, layout: &Layout) -> Value {
    json!({
        "layout": spec,
        "bits": layout.bits(),
        "order": layout.order().map(Field::key),
        "tick_ms": layout.tick_ms().to_string(),
        "epoch_ms": layout.epoch_ms().to_string(),
        "max_id": layout.max_id().as_u64().to_string(),
    })
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
        "about": "Ids and their decoded fields, written by crates/snowmint/tests/vectors.rs from the core: every client must decode each id to these fields. Integers are decimal strings. Do not edit by hand.",
        "layouts": layouts,
        "vectors": vectors,
    })
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
         SNOWMINT_WRITE_VECTORS=1 cargo test -p snowmint --test vectors"
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
