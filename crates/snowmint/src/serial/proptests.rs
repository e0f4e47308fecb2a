//! Property tests: format then parse gives back the business code, the id and its parts,
//! for random ids, codes, templates, zones and check digits; serials sort like their ids;
//! a mistyped digit is caught; and no input makes a parser panic.

use proptest::prelude::*;

use super::*;
use crate::{Id, Layout};

/// Every preset whose times fit four digits of year (Mastodon's run to the year 10889).
fn layouts() -> impl Strategy<Value = Layout> {
    proptest::sample::select(vec![
        Layout::TWITTER,
        Layout::DISCORD,
        Layout::INSTAGRAM,
        Layout::SONYFLAKE,
        Layout::BAIDU,
        Layout::TSID,
    ])
}

fn biz_codes() -> impl Strategy<Value = BizCode> {
    "[A-Z0-9]{1,16}".prop_map(|code| BizCode::new(&code).unwrap())
}

fn zones() -> impl Strategy<Value = Zone> {
    (-1439i16..=1439).prop_map(|minutes| Zone::from_offset_minutes(minutes).unwrap())
}

fn checks() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec!["", "{check}", "{check:luhn}", "{check:mod97}"])
}

/// Template text: `{time}` before `{node}` and `{seq}` (in either order), `{biz}` anywhere
/// or nowhere, perhaps a check at the end, separators of 0 to 2 characters between and
/// around, and perhaps explicit widths a little wider than needed.
fn templates() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec("[-_./ ]{0,2}", 6),
        any::<bool>(),
        0usize..=4,
        checks(),
        proptest::option::of(0usize..=2),
        proptest::option::of(0usize..=2),
    )
        .prop_map(|(seps, node_first, biz_at, check, node_extra, seq_extra)| {
            // Widths relative to the default: `{node:+n}` is resolved in `for_layout`.
            let node = node_extra.map_or("{node}".to_string(), |n| format!("{{node:+{n}}}"));
            let seq = seq_extra.map_or("{seq}".to_string(), |n| format!("{{seq:+{n}}}"));
            let mut fields = if node_first {
                vec!["{time}".to_string(), node, seq]
            } else {
                vec!["{time}".to_string(), seq, node]
            };
            if biz_at < 4 {
                fields.insert(biz_at, "{biz}".to_string());
            }
            fields.push(check.to_string());
            let mut text = seps[0].clone();
            for (field, sep) in fields.iter().zip(&seps[1..]) {
                text.push_str(field);
                text.push_str(sep);
            }
            text
        })
}

/// Turns `{node:+n}` into an explicit width n digits above what the layout needs.
fn for_layout(text: &str, layout: &Layout) -> Template {
    let needed = |max: u64| max.checked_ilog10().map_or(1, |l| l as usize + 1);
    let mut text = text.to_string();
    for (field, max) in [
        ("node", layout.capacity().worker_ids - 1),
        ("seq", layout.max_sequence()),
    ] {
        for extra in 0..=2 {
            let width = (needed(max) + extra).min(19);
            text = text.replace(
                &format!("{{{field}:+{extra}}}"),
                &format!("{{{field}:{width}}}"),
            );
        }
    }
    Template::parse(&text, layout).unwrap()
}

fn any_id(layout: &Layout, raw: u64) -> Id {
    Id::from_u64(raw & layout.max_id().as_u64())
}

proptest! {
    #[test]
    fn format_then_parse_round_trips(
        layout in layouts(),
        text in templates(),
        raw in any::<u64>(),
        biz in biz_codes(),
        zone in zones(),
    ) {
        let template = for_layout(&text, &layout);
        let id = any_id(&layout, raw);
        let serial = template.format(&biz, id, &zone).unwrap();
        prop_assert!(template.len_range().contains(&serial.len()));
        let mut reused = String::new();
        template.write_to(&mut reused, &biz, id, &zone).unwrap();
        prop_assert_eq!(&reused, &serial);

        let parsed = template.parse_serial(&serial, &zone).unwrap();
        let parts = layout.decode(id).unwrap();
        prop_assert_eq!(parsed.id, id);
        prop_assert_eq!(parsed.biz, template.has_biz().then_some(biz));
        prop_assert_eq!(parsed.unix_ms, parts.unix_ms);
        prop_assert_eq!(
            (parsed.datacenter, parsed.worker, parsed.sequence),
            (parts.datacenter, parts.worker, parts.sequence)
        );
    }

    #[test]
    fn serials_of_one_generator_sort_like_their_ids(
        layout in layouts(),
        text in templates(),
        a in any::<(u64, u64)>(),
        b in any::<(u64, u64)>(),
        same_tick in any::<bool>(),
        node in any::<(u64, u64)>(),
        biz in biz_codes(),
        zone in zones(),
    ) {
        let template = for_layout(&text, &layout);
        // One generator: one datacenter and worker, any tick and sequence.
        let (dc, worker) = (node.0 & layout.max_datacenter(), node.1 & layout.max_worker());
        let compose = |(tick, seq): (u64, u64)| {
            layout
                .compose(tick & layout.max_timestamp(), crate::Fields { datacenter: dc, worker, sequence: seq & layout.max_sequence() })
                .unwrap()
        };
        // Half the pairs share a tick, so the sequence decides.
        let b = if same_tick { (a.0, b.1) } else { b };
        let (a, b) = (compose(a), compose(b));
        let sa = template.format(&biz, a, &zone).unwrap();
        let sb = template.format(&biz, b, &zone).unwrap();
        prop_assert_eq!(sa.cmp(&sb), a.cmp(&b), "{} {} for {} {}", sa, sb, a, b);
    }

    #[test]
    fn a_mistyped_digit_fails_the_check(
        layout in layouts(),
        raw in any::<u64>(),
        biz in biz_codes(),
        mod97 in any::<bool>(),
        pick in any::<proptest::sample::Index>(),
        delta in 1u8..=9,
    ) {
        let text = if mod97 { "{biz}-{time}-{node}-{seq}-{check:mod97}" } else { "{biz}-{time}-{node}-{seq}-{check}" };
        let template = Template::parse(text, &layout).unwrap();
        let serial = template.format(&biz, any_id(&layout, raw), &Zone::UTC).unwrap();
        let digits: Vec<usize> = serial.bytes().enumerate().filter(|(_, b)| b.is_ascii_digit()).map(|(i, _)| i).collect();
        let at = digits[pick.index(digits.len())];
        let mut bytes = serial.into_bytes();
        bytes[at] = b'0' + (bytes[at] - b'0' + delta) % 10;
        let typo = String::from_utf8(bytes).unwrap();
        let err = template.parse_serial(&typo, &Zone::UTC).unwrap_err();
        prop_assert!(matches!(err, SerialError::CheckMismatch { .. }), "{typo}: {err}");
    }

    #[test]
    fn zones_print_and_parse_back(zone in zones()) {
        prop_assert_eq!(Zone::parse(&zone.to_string()).unwrap(), zone);
    }

    #[test]
    fn parsers_never_panic(text in "\\PC{0,48}", near in "[A-Z0-9a-z_./ {}:-]{0,48}") {
        let template = Template::parse("{biz}-{time}-{node}-{seq}-{check:mod97}", &Layout::TWITTER).unwrap();
        for text in [&text, &near] {
            let _ = template.parse_serial(text, &Zone::UTC);
            let _ = Template::new(&Layout::SONYFLAKE).parse_serial(text, &Zone::UTC);
            let _ = Template::parse(text, &Layout::TWITTER);
            let _ = Zone::parse(text);
            let _ = BizCode::new(text);
        }
    }
}
