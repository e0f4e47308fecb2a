//! Every error a serial can meet, by its exact text, and the outputs the docs promise.

use core::fmt;

use super::*;
use crate::{Id, Layout};

const TWITTER: Layout = Layout::TWITTER;
/// 2026-11-22T15:30:45.123Z.
const T: u64 = 1_795_361_445_123;

fn template_err(text: &str) -> String {
    Template::parse(text, &TWITTER).unwrap_err().to_string()
}

fn pay() -> BizCode {
    BizCode::new("PAY").unwrap()
}

/// The id of T on Twitter's layout with datacenter 1, worker 2, sequence 7.
fn id() -> Id {
    TWITTER
        .compose(
            TWITTER.tick_at(T).unwrap(),
            crate::Fields {
                datacenter: 1,
                worker: 2,
                sequence: 7,
            },
        )
        .unwrap()
}

fn parse_err(template: &str, serial: &str) -> String {
    Template::parse(template, &TWITTER)
        .unwrap()
        .parse_serial(serial, &Zone::UTC)
        .unwrap_err()
        .to_string()
}

#[test]
fn template_errors_name_the_problem() {
    #[rustfmt::skip]
    let cases = [
        ("{biz}{time}{node:3}{seq}", "field node is 3 digits wide but layout twitter needs 4 for 1023"),
        ("{biz}{time}{node}{seq:2}", "field seq is 2 digits wide but layout twitter needs 4 for 4095"),
        ("{biz}{time{node}{seq}", "template has '{' at position 10 inside a field: fields do not nest"),
        ("{biz}{time}{node}{seq", "template has '{' at position 17 with no closing '}'"),
        ("{biz}}{time}{node}{seq}", "template has '}' at position 5 with no opening '{'"),
        ("{biz}{date}{node}{seq}", "unknown field \"date\" at position 5 in template: expected biz, time, node, seq or check"),
        ("{}{time}{node}{seq}", "unknown field \"\" at position 0 in template: expected biz, time, node, seq or check"),
        ("{biz}{biz}{time}{node}{seq}", "field biz appears twice in the template: each field may appear once"),
        ("{time}{node}{seq}{seq:5}", "field seq appears twice in the template: each field may appear once"),
        ("{time}{node}{seq}{check}{check:mod97}", "field check appears twice in the template: each field may appear once"),
        ("{biz}{node}{seq}", "template has no {time} field: a serial needs time, node and seq to be unique"),
        ("{biz}{time}{seq}", "template has no {node} field: a serial needs time, node and seq to be unique"),
        ("{biz}{time}{node}", "template has no {seq} field: a serial needs time, node and seq to be unique"),
        ("", "template has no {time} field: a serial needs time, node and seq to be unique"),
        ("{biz}X{time}{node}{seq}", "template has 'X' at position 5 outside a field: separators may be only - _ . / or space (a letter or digit would make serials ambiguous)"),
        ("{biz}{time}7{node}{seq}", "template has '7' at position 11 outside a field: separators may be only - _ . / or space (a letter or digit would make serials ambiguous)"),
        ("{biz}:{time}{node}{seq}", "template has ':' at position 5 outside a field: separators may be only - _ . / or space (a letter or digit would make serials ambiguous)"),
        ("{time:17}{node}{seq}", "field time takes no option, got \"17\""),
        ("{biz:3}{time}{node}{seq}", "field biz takes no option, got \"3\""),
        ("{time}{node:x}{seq}", "field node has width \"x\": expected a number of digits, as in {node:5}"),
        ("{time}{node}{seq:}", "field seq has width \"\": expected a number of digits, as in {seq:5}"),
        ("{time}{node:+5}{seq}", "field node has width \"+5\": expected a number of digits, as in {node:5}"),
        ("{time}{node:20}{seq}", "field node is 20 digits wide, more than the 19 any field of a 64-bit id needs"),
        ("{time}{node}{seq}{check:crc}", "unknown check digit \"crc\": expected luhn or mod97"),
        ("{time}{node}{seq}{check:LUHN}", "unknown check digit \"LUHN\": expected luhn or mod97"),
        ("{biz}{node}{time}{seq}", "field node comes before field time: the time must lead node and seq so serials sort in issue order"),
        ("{seq}-{time}-{node}", "field seq comes before field time: the time must lead node and seq so serials sort in issue order"),
        ("{biz}{time}{node}{check}{seq}", "field seq comes after field check: the check must be the last field so it covers every other"),
        ("{check}{biz}{time}{node}{seq}", "field biz comes after field check: the check must be the last field so it covers every other"),
    ];
    for (template, message) in cases {
        assert_eq!(template_err(template), message, "template {template:?}");
    }
}

#[test]
fn templates_that_are_fine() {
    for text in [
        Template::DEFAULT,
        "{time}{node}{seq}",
        "{time} {node} {seq}",
        "{biz}-{time}-{node:5}-{seq:19}-{check:luhn}",
        "{time}{biz}{seq}{node}{check:mod97}",
        "__{biz}/{time}.{node}.{seq}{check}--",
    ] {
        let t = Template::parse(text, &TWITTER).unwrap();
        assert_eq!(t.to_string(), text);
        assert_eq!(t.as_str(), text);
    }
    assert_eq!(
        Template::new(&TWITTER),
        Template::parse(Template::DEFAULT, &TWITTER).unwrap()
    );
    let t = Template::parse("{time}{node}{seq}{check}", &TWITTER).unwrap();
    assert!(!t.has_biz());
    assert_eq!(t.check(), Some(CheckDigit::Luhn));
    assert_eq!(t.len_range(), 26..=26);
    assert_eq!(*t.layout(), TWITTER);
}

#[test]
fn templates_and_their_serials_have_a_length_limit() {
    // 16 of business code, 17 of time, 19 and 8 digits, and 4 separators: 64 exactly.
    let longest = "{biz}-{time}-{node:19}-{seq:8}-";
    assert_eq!(
        Template::parse(longest, &TWITTER).unwrap().len_range(),
        49..=64
    );
    assert_eq!(
        template_err("{biz}-{time}-{node:19}-{seq:9}-"),
        "template makes serials of up to 65 characters, more than the 64 allowed"
    );
    assert_eq!(
        template_err("{biz}{time}{node:19}{seq:19}"),
        "template makes serials of up to 71 characters, more than the 64 allowed"
    );
    // Without {biz} the length is exact.
    assert_eq!(
        template_err("{time}{node:19}{seq:19}{check:mod97}-------- "),
        "template makes serials of up to 66 characters, more than the 64 allowed"
    );
    // A template that would make each serial thousands of characters is refused unread.
    let padded = format!("{}{}", Template::DEFAULT, "-".repeat(8_100));
    assert_eq!(
        template_err(&padded),
        "template is 8122 bytes long, more than the 128 allowed"
    );
    let err = Template::parse(&padded, &TWITTER).unwrap_err();
    assert_eq!(
        err,
        SerialError::TemplateTooLong {
            len: 8122,
            max: 128
        }
    );
    // Leading zeros make long text for short serials: 128 bytes is read, 129 is not.
    let zeros = |n: usize| format!("{{time}}{{node:{}4}}{{seq}}", "0".repeat(n));
    assert_eq!(zeros(109).len(), 128);
    assert_eq!(
        Template::parse(&zeros(109), &TWITTER).unwrap().len_range(),
        25..=25
    );
    assert_eq!(
        template_err(&zeros(110)),
        "template is 129 bytes long, more than the 128 allowed"
    );
}

#[test]
fn widths_follow_the_layout() {
    let widths = |layout: &Layout| {
        let t = Template::parse("{time}{node}{seq}", layout).unwrap();
        *t.len_range().start() - 17
    };
    assert_eq!(widths(&Layout::TWITTER), 4 + 4); // 1,023 and 4,095
    assert_eq!(widths(&Layout::SONYFLAKE), 5 + 3); // 65,535 and 255
    assert_eq!(widths(&Layout::BAIDU), 7 + 4); // 4,194,303 and 8,191
    assert_eq!(widths(&Layout::MASTODON), 1 + 5); // 0 and 65,535
    let err = Template::parse("{time}{node:6}{seq}", &Layout::BAIDU).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field node is 6 digits wide but layout baidu needs 7 for 4194303"
    );
}

#[cfg(feature = "serde")]
#[test]
fn business_codes_are_strings_in_json() {
    assert_eq!(serde_json::to_string(&pay()).unwrap(), "\"PAY\"");
    assert_eq!(serde_json::from_str::<BizCode>("\"PAY\"").unwrap(), pay());
    let err = serde_json::from_str::<BizCode>("\"pay\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("business code \"pay\" has 'p' at position 0"),
        "{err}"
    );
    let parsed = Template::new(&TWITTER)
        .parse_serial("PAY2026112215304512300340007", &Zone::UTC)
        .unwrap();
    assert_eq!(
        serde_json::to_string(&parsed).unwrap(),
        format!(
            r#"{{"biz":"PAY","id":"{}","unix_ms":{T},"datacenter":1,"worker":2,"sequence":7}}"#,
            id()
        )
    );
}

#[test]
fn format_writes_the_documented_serials() {
    let t = Template::new(&TWITTER);
    assert_eq!(
        t.format(&pay(), id(), &Zone::UTC).unwrap(),
        "PAY2026112215304512300340007"
    );
    // The time moves with the zone, across midnight if need be.
    let west = Zone::parse("-16:00").unwrap();
    assert_eq!(
        t.format(&pay(), id(), &west).unwrap(),
        "PAY2026112123304512300340007"
    );
    let t = Template::parse("{biz}-{time}-{node}-{seq}-{check:mod97}", &TWITTER).unwrap();
    assert_eq!(
        t.format(&pay(), id(), &Zone::UTC).unwrap(),
        "PAY-20261122153045123-0034-0007-53"
    );
    // Without {biz} the code is not written.
    let t = Template::parse("{time}{node:6}{seq}", &TWITTER).unwrap();
    assert_eq!(
        t.format(&pay(), id(), &Zone::UTC).unwrap(),
        "202611221530451230000340007"
    );
}

#[test]
fn format_on_other_layouts() {
    // Sonyflake: 10 ms ticks, a 16-bit machine id and 8 bits of sequence.
    let l = Layout::SONYFLAKE;
    let id = l
        .compose(
            l.tick_at(T).unwrap(),
            crate::Fields {
                datacenter: 0,
                worker: 65_535,
                sequence: 255,
            },
        )
        .unwrap();
    let t = Template::new(&l);
    let serial = t.format(&pay(), id, &Zone::UTC).unwrap();
    assert_eq!(serial, "PAY2026112215304512065535255");
    assert_eq!(t.parse_serial(&serial, &Zone::UTC).unwrap().id, id);
    // Mastodon has no node bits: the node is one digit, always 0.
    let l = Layout::MASTODON;
    let id = l
        .compose(
            T,
            crate::Fields {
                datacenter: 0,
                worker: 0,
                sequence: 65_535,
            },
        )
        .unwrap();
    assert_eq!(
        Template::new(&l).format(&pay(), id, &Zone::UTC).unwrap(),
        "PAY20261122153045123065535"
    );
}

#[test]
fn format_errors() {
    let t = Template::new(&TWITTER);
    assert_eq!(
        t.format(&pay(), Id::from_u64(1 << 63), &Zone::UTC)
            .unwrap_err()
            .to_string(),
        "id 9223372036854775808 is out of range for this layout: its largest id is 9223372036854775807"
    );
    // Mastodon's 48 bits of milliseconds from 1970 run past the year 9999.
    let err = Template::new(&Layout::MASTODON)
        .format(&pay(), Id::MAX, &Zone::UTC)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "time 281474976710655 ms after the Unix epoch is past the year 9999 and does not fit yyyyMMddHHmmssSSS"
    );
    struct Refuses;
    impl fmt::Write for Refuses {
        fn write_str(&mut self, _: &str) -> fmt::Result {
            Err(fmt::Error)
        }
    }
    assert_eq!(
        t.write_to(&mut Refuses, &pay(), id(), &Zone::UTC)
            .unwrap_err()
            .to_string(),
        "could not write the serial: the output reported an error"
    );
}

#[test]
fn parse_errors_name_the_problem() {
    let d = Template::DEFAULT;
    let luhn = "{biz}{time}{node}{seq}{check}";
    #[rustfmt::skip]
    let cases = [
        (d, "PAY123", "expected 26 to 41 characters for this template, got 6"),
        ("{time}{node}{seq}", "2026", "expected 25 characters for this template, got 4"),
        (d, "PAY2026112215304512300340é07", "serial has 'é' at position 25: a serial holds only ASCII letters, digits and separators"),
        ("{biz}-{time}-{node}-{seq}", "PAY_20261122153045123-0034-0007", "serial has '_' at position 3 where the template has '-'"),
        (d, "PaY2026112215304512300340007", "field biz has 'a' at position 1: expected A-Z or 0-9"),
        (d, "PAY2026112215304512X00340007", "field time has 'X' at position 19: expected a digit"),
        (d, "PAY20261122153045123 0340007", "field node has ' ' at position 20: expected a digit"),
        (d, "PAY20261122153045123003400x7", "field seq has 'x' at position 26: expected a digit"),
        (luhn, "PAY2026112215304512300340007X", "field check has 'X' at position 28: expected a digit"),
        (luhn, "PAY20261122153045123003400071", "check digit 1 does not match 4: the serial was mistyped"),
        ("{biz}{time}{node}{seq}{check:mod97}", "PAY202611221530451230034000700", "check digits 00 do not match 53: the serial was mistyped"),
        (d, "PAY2026132215304512300340007", "time 20261322153045123 is not a real time: month 13 is out of range 1..=12"),
        (d, "PAY2026002215304512300340007", "time 20260022153045123 is not a real time: month 0 is out of range 1..=12"),
        (d, "PAY2026113115304512300340007", "time 20261131153045123 is not a real time: day 31 is out of range 1..=30"),
        (d, "PAY2026022915304512300340007", "time 20260229153045123 is not a real time: day 29 is out of range 1..=28"),
        (d, "PAY2026110015304512300340007", "time 20261100153045123 is not a real time: day 0 is out of range 1..=30"),
        (d, "PAY2026112224304512300340007", "time 20261122243045123 is not a real time: hour 24 is out of range 0..=23"),
        (d, "PAY2026112215604512300340007", "time 20261122156045123 is not a real time: minute 60 is out of range 0..=59"),
        (d, "PAY2026112215306012300340007", "time 20261122153060123 is not a real time: second 60 is out of range 0..=59"),
        (d, "PAY2009010100000000000340007", "time 2009-01-01T00:00:00.000Z is outside layout twitter's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z"),
        (d, "PAY0000010100000000000340007", "time 0000-01-01T00:00:00.000Z is outside layout twitter's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z"),
        // The last instant RFC 3339 writes.
        (d, "PAY9999123123595999900340007", "time 9999-12-31T23:59:59.999Z is outside layout twitter's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z"),
        (d, "PAY2026112215304512310240007", "field node 1024 is out of range 0..=1023 for layout twitter"),
        (d, "PAY2026112215304512300344096", "field seq 4096 is out of range 0..=4095 for layout twitter"),
    ];
    for (template, serial, message) in cases {
        assert_eq!(parse_err(template, serial), message, "serial {serial:?}");
    }
    // A leap day is a real day.
    let t = Template::new(&TWITTER);
    assert!(
        t.parse_serial("PAY2028022915304512300340007", &Zone::UTC)
            .is_ok()
    );
    // Sonyflake's ticks are 10 ms: a time between two ticks belongs to no id.
    let t = Template::new(&Layout::SONYFLAKE);
    assert_eq!(
        t.parse_serial("PAY2026112215304512300000000", &Zone::UTC)
            .unwrap_err()
            .to_string(),
        "time 2026-11-22T15:30:45.123Z is not the start of a 10 ms tick of layout sonyflake, so no id has it"
    );
}

#[test]
fn parse_recovers_the_id_and_its_parts() {
    let t = Template::new(&TWITTER);
    let p = t
        .parse_serial("PAY2026112215304512300340007", &Zone::UTC)
        .unwrap();
    assert_eq!(p.biz, Some(pay()));
    assert_eq!(
        (p.id, p.unix_ms, p.datacenter, p.worker, p.sequence),
        (id(), T, 1, 2, 7)
    );
    assert_eq!(p.time().to_string(), "2026-11-22T15:30:45.123Z");
    // The same local digits in another zone are another instant.
    let east = Zone::parse("+08:00").unwrap();
    let p = t
        .parse_serial("PAY2026112223304512300340007", &east)
        .unwrap();
    assert_eq!(p.id, id());
    // Business codes of every length find their end from the serial's length.
    for code in ["A", "PAY", "0123456789ABCDEF"] {
        let biz = BizCode::new(code).unwrap();
        let serial = t.format(&biz, id(), &Zone::UTC).unwrap();
        assert_eq!(t.parse_serial(&serial, &Zone::UTC).unwrap().biz, Some(biz));
    }
    let t = Template::parse("{time}{node}{seq}", &TWITTER).unwrap();
    assert_eq!(
        t.parse_serial("2026112215304512300340007", &Zone::UTC)
            .unwrap()
            .biz,
        None
    );
}
