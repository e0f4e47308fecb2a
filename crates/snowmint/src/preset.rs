//! The well-known layouts, as data: each is a [`Layout`] constant.

use crate::error::LayoutChoiceError;
use crate::layout::{Bits, Field, Layout, Names};
use crate::{LayoutError, UnixMs};

const TWITTER_ORDER: [Field; 3] = Field::ALL;

const fn bits(timestamp: u8, datacenter: u8, worker: u8, sequence: u8) -> Bits {
    Bits {
        timestamp,
        datacenter,
        worker,
        sequence,
    }
}

impl Layout {
    /// Twitter's Snowflake, the default: 41 bits of milliseconds since 2010-11-04T01:42:54.657Z.
    ///
    /// ```text
    ///   63     62     22  21      17  16  12  11     0
    /// +-------+-----------+------------+--------+----------+
    /// | 0     | timestamp | datacenter | worker | sequence |
    /// +-------+-----------+------------+--------+----------+
    ///   1 bit   41 bits     5 bits       5 bits   12 bits
    /// ```
    pub const TWITTER: Layout = Layout::preset(
        "twitter",
        "Twitter",
        bits(41, 5, 5, 12),
        TWITTER_ORDER,
        Names::DEFAULT,
        1,
        1_288_834_974_657,
    );

    /// Discord: 42 bits of milliseconds since 2015-01-01T00:00:00Z, then a 5-bit worker id,
    /// a 5-bit process id and a 12-bit increment. Uses bit 63: its ids are unsigned 64-bit
    /// numbers, and from 2084-09-06T15:47:35.552Z on a signed 64-bit column shows them
    /// negative ([`Layout::read_id`] reads them back). Keys: `worker` is Discord's worker id, `datacenter` its process id, `sequence` its
    /// increment.
    ///
    /// ```text
    ///   63     22  21  17  16   12  11      0
    /// +-----------+--------+---------+-----------+
    /// | timestamp | worker | process | increment |
    /// +-----------+--------+---------+-----------+
    ///   42 bits     5 bits   5 bits    12 bits
    /// ```
    pub const DISCORD: Layout = Layout::preset(
        "discord",
        "Discord",
        bits(42, 5, 5, 12),
        [Field::Worker, Field::Datacenter, Field::Sequence],
        Names {
            datacenter: "process",
            worker: "worker",
            sequence: "increment",
        },
        1,
        1_420_070_400_000,
    );

    /// Instagram: 41 bits of milliseconds since 2011-08-24T21:07:01.721Z, a 13-bit shard id
    /// and a 10-bit sequence. Uses bit 63: its ids are unsigned 64-bit numbers, and from
    /// 2046-06-27 on Instagram's own function returns them as negative `bigint`s
    /// ([`Layout::read_id`] reads them back). Keys: `worker` is the shard.
    ///
    /// ```text
    ///   63     23  22   10  9      0
    /// +-----------+---------+----------+
    /// | timestamp | shard   | sequence |
    /// +-----------+---------+----------+
    ///   41 bits     13 bits   10 bits
    /// ```
    pub const INSTAGRAM: Layout = Layout::preset(
        "instagram",
        "Instagram",
        bits(41, 0, 13, 10),
        TWITTER_ORDER,
        Names {
            datacenter: "datacenter",
            worker: "shard",
            sequence: "sequence",
        },
        1,
        1_314_220_021_721,
    );

    /// Sonyflake (v1): 39 bits of 10 ms ticks since 2014-09-01T00:00:00Z, an 8-bit sequence
    /// and then a 16-bit machine id. Keys: `worker` is the machine id.
    ///
    /// ```text
    ///   63     62     24  23    16  15    0
    /// +-------+-----------+----------+---------+
    /// | 0     | timestamp | sequence | machine |
    /// +-------+-----------+----------+---------+
    ///   1 bit   39 bits     8 bits     16 bits
    /// ```
    pub const SONYFLAKE: Layout = Layout::preset(
        "sonyflake",
        "Sonyflake",
        bits(39, 0, 16, 8),
        [Field::Sequence, Field::Datacenter, Field::Worker],
        Names {
            datacenter: "datacenter",
            worker: "machine",
            sequence: "sequence",
        },
        10,
        1_409_529_600_000,
    );

    /// Baidu uid-generator's default: 28 bits of seconds since 2016-05-20T00:00:00Z, a
    /// 22-bit worker id and a 13-bit sequence. (uid-generator reads its epoch in the JVM's
    /// time zone; this preset takes it as UTC.)
    ///
    /// ```text
    ///   63     62     35  34   13  12     0
    /// +-------+-----------+---------+----------+
    /// | 0     | timestamp | worker  | sequence |
    /// +-------+-----------+---------+----------+
    ///   1 bit   28 bits     22 bits   13 bits
    /// ```
    pub const BAIDU: Layout = Layout::preset(
        "baidu",
        "Baidu uid-generator",
        bits(28, 0, 22, 13),
        TWITTER_ORDER,
        Names::DEFAULT,
        1000,
        1_463_702_400_000,
    );

    /// TSID: 42 bits of milliseconds since 2020-01-01T00:00:00Z and 22 bits of node and
    /// counter, split 10/12 as the TSID factory does by default. Uses bit 63 for time: its
    /// ids are unsigned 64-bit numbers, negative in a signed 64-bit column from 2089 on
    /// ([`Layout::read_id`] reads them back). Keys: `worker` is the node, `sequence` the counter.
    ///
    /// ```text
    ///   63     22  21   12  11    0
    /// +-----------+---------+---------+
    /// | timestamp | node    | counter |
    /// +-----------+---------+---------+
    ///   42 bits     10 bits   12 bits
    /// ```
    pub const TSID: Layout = Layout::preset(
        "tsid",
        "TSID",
        bits(42, 0, 10, 12),
        TWITTER_ORDER,
        Names {
            datacenter: "datacenter",
            worker: "node",
            sequence: "counter",
        },
        1,
        1_577_836_800_000,
    );

    /// Mastodon: 48 bits of milliseconds since the Unix epoch and 16 low bits (a hashed
    /// sequence). Uses bit 63 from the year 6429 on. Keys: `sequence` is the 16 low bits.
    ///
    /// ```text
    ///   63     16  15     0
    /// +-----------+----------+
    /// | timestamp | sequence |
    /// +-----------+----------+
    ///   48 bits     16 bits
    /// ```
    pub const MASTODON: Layout = Layout::preset(
        "mastodon",
        "Mastodon",
        bits(48, 0, 0, 16),
        TWITTER_ORDER,
        Names::DEFAULT,
        1,
        0,
    );

    /// Every preset, the default first.
    pub const PRESETS: [Layout; 7] = [
        Layout::TWITTER,
        Layout::DISCORD,
        Layout::INSTAGRAM,
        Layout::SONYFLAKE,
        Layout::BAIDU,
        Layout::TSID,
        Layout::MASTODON,
    ];

    /// The preset with this name (case-insensitive), or a custom layout written
    /// `custom:T/D/W/S`: the timestamp, datacenter, worker and sequence widths, high to low,
    /// adding up to 63 or 64, with 1 ms ticks and Twitter's epoch (see
    /// [`with_tick_ms`](Layout::with_tick_ms) and [`with_epoch_ms`](Layout::with_epoch_ms)).
    ///
    /// # Errors
    ///
    /// No preset has the name (the message lists the ones that exist), or a custom layout's
    /// widths are malformed, add up to neither 63 nor 64, or give the timestamp or the
    /// sequence no bit.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Layout;
    ///
    /// assert_eq!(Layout::by_name("Discord")?, Layout::DISCORD);
    /// assert_eq!(
    ///     Layout::by_name("flickr").unwrap_err().to_string(),
    ///     "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"
    /// );
    /// let custom = Layout::by_name("custom:39/0/10/14")?;
    /// assert_eq!((custom.bits().timestamp, custom.max_worker()), (39, 1023));
    /// # Ok::<(), snowmint::LayoutError>(())
    /// ```
    pub fn by_name(name: &str) -> Result<Layout, LayoutError> {
        if let Some(widths) = strip_custom(name) {
            return Layout::custom(name, widths);
        }
        Layout::PRESETS
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| LayoutError::UnknownPreset {
                name: name.to_string(),
            })
    }
}

impl Layout {
    /// The layout that a name, a tick length and an epoch choose, as `--layout`, `--tick-ms`
    /// and `--epoch` (or the keys of the same names) give them: [`Layout::by_name`], then
    /// [`with_tick_ms`](Layout::with_tick_ms) if a tick is given, then the epoch read by
    /// [`UnixMs::parse_epoch`] against `now` and set with
    /// [`with_epoch_ms`](Layout::with_epoch_ms), if one is given.
    ///
    /// # Errors
    ///
    /// [`LayoutChoiceError`], naming the part at fault: an unknown or malformed name, a tick
    /// or epoch the layout cannot take, or an epoch that is no instant or is after `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Layout, UnixMs};
    ///
    /// let now = UnixMs(1_763_780_112_345); // 2025-11-22T02:55:12.345Z
    /// assert_eq!(Layout::chosen("twitter", None, None, now)?, Layout::TWITTER);
    /// let fleet = Layout::chosen("custom:39/0/10/14", Some(10), Some("2020-01-01T00:00:00Z"), now)?;
    /// assert_eq!((fleet.tick_ms(), fleet.epoch_ms()), (10, 1_577_836_800_000));
    /// let err = Layout::chosen("twitter", None, Some("2999-01-01T00:00:00Z"), now).unwrap_err();
    /// assert!(err.to_string().starts_with("epoch \"2999-01-01T00:00:00Z\" is in the future"));
    /// # Ok::<(), snowmint::error::LayoutChoiceError>(())
    /// ```
    pub fn chosen(
        name: &str,
        tick_ms: Option<u64>,
        epoch: Option<&str>,
        now: UnixMs,
    ) -> Result<Layout, LayoutChoiceError> {
        let mut layout = Layout::by_name(name).map_err(LayoutChoiceError::Name)?;
        if let Some(tick_ms) = tick_ms {
            layout = layout
                .with_tick_ms(tick_ms)
                .map_err(|source| LayoutChoiceError::TickMs { tick_ms, source })?;
        }
        let Some(text) = epoch else {
            return Ok(layout);
        };
        let epoch = UnixMs::parse_epoch(text, now).map_err(LayoutChoiceError::EpochTime)?;
        layout
            .with_epoch_ms(epoch.0)
            .map_err(|source| LayoutChoiceError::Epoch {
                text: text.to_string(),
                source,
            })
    }
}

/// The widths after a case-insensitive `custom:` prefix.
fn strip_custom(text: &str) -> Option<&str> {
    let (head, rest) = text.split_at_checked(7)?;
    head.eq_ignore_ascii_case("custom:").then_some(rest)
}

impl Layout {
    /// A layout from `T/D/W/S` widths, as [`Layout::by_name`] reads `custom:T/D/W/S`.
    fn custom(text: &str, widths: &str) -> Result<Layout, LayoutError> {
        let parts: Vec<&str> = widths.split('/').collect();
        let [t, d, w, s] = parts[..] else {
            return Err(LayoutError::CustomSyntax {
                text: text.to_string(),
            });
        };
        // Plain digits only: `u8::from_str` would also take a sign or spaces, which no other
        // reader of this syntax (the clients, the page) takes.
        let width = |field: &'static str, text: &str| {
            Some(text)
                .filter(|t| (1..=3).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u8>().ok())
                .filter(|bits| *bits <= 64)
                .ok_or_else(|| LayoutError::CustomWidth {
                    field,
                    text: text.to_string(),
                })
        };
        let bits = Bits {
            timestamp: width("timestamp", t)?,
            datacenter: width("datacenter", d)?,
            worker: width("worker", w)?,
            sequence: width("sequence", s)?,
        };
        if !matches!(bits.total(), 63 | 64) {
            return Err(LayoutError::CustomTotal { bits: bits.total() });
        }
        if bits.timestamp == 0 {
            return Err(LayoutError::NoTimestampBits);
        }
        if bits.sequence == 0 {
            return Err(LayoutError::NoSequenceBits);
        }
        Layout::new_u64(bits, 1, Layout::TWITTER.epoch_ms())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Id, Layout, UnixMs};

    /// The diagrams in the presets' docs are what `Display` draws: the docs are checked
    /// against the code, so they cannot drift.
    #[test]
    fn the_diagram_in_each_presets_docs_is_the_one_drawn() {
        let source = include_str!("preset.rs");
        for layout in Layout::PRESETS {
            let constant = format!("pub const {}: Layout", layout.name().to_uppercase());
            let before = &source[..source.find(&constant).expect("a constant per preset")];
            let block = before.rsplit("/// ```text\n").next().unwrap();
            let documented: Vec<&str> = block
                .lines()
                .take_while(|l| l.trim() != "/// ```")
                .map(|l| l.trim_start().strip_prefix("///").unwrap())
                .map(|l| l.strip_prefix(' ').unwrap_or(l))
                .collect();
            let drawn = layout.diagram().to_string();
            let drawn: Vec<&str> = drawn.lines().map(str::trim_end).collect();
            assert_eq!(
                documented,
                drawn,
                "the diagram in the docs of {}",
                layout.name()
            );
        }
    }

    #[test]
    fn every_preset_is_a_valid_layout() {
        for preset in Layout::PRESETS {
            let checked = Layout::new_u64(preset.bits(), preset.tick_ms(), preset.epoch_ms())
                .unwrap_or_else(|e| panic!("{}: {e}", preset.name()));
            assert_eq!(checked.bits(), preset.bits());
            let round = checked.with_order(preset.order()).unwrap();
            assert_eq!(round.shifts(), preset.shifts(), "{}", preset.name());
        }
        let generating: Vec<_> = Layout::PRESETS
            .iter()
            .filter(|l| !l.uses_bit_63())
            .map(|l| l.name())
            .collect();
        assert_eq!(generating, ["twitter", "sonyflake", "baidu"]);
    }

    fn time(layout: Layout, id: u64) -> String {
        UnixMs(layout.decode(Id::from_u64(id)).unwrap().unix_ms).to_string()
    }

    // The ids the systems document themselves (Discord, Instagram, TSID, Baidu, Mastodon)
    // are shared with every client: testdata/vectors.json, written and checked against
    // their sources by tests/vectors.rs.

    /// Twitter and Sonyflake publish no decoded example; these pin the epochs and shifts of
    /// their reference code (IdWorker.scala: 22/17/12; sonyflake.go: 10 ms, seq above machine).
    #[test]
    fn twitter_and_sonyflake_shifts() {
        let t = Layout::TWITTER
            .compose(
                1,
                crate::Fields {
                    datacenter: 1,
                    worker: 1,
                    sequence: 1,
                },
            )
            .unwrap()
            .as_u64();
        assert_eq!(t, (1 << 22) | (1 << 17) | (1 << 12) | 1);
        assert_eq!(time(Layout::TWITTER, 0), "2010-11-04T01:42:54.657Z");
        let s = Layout::SONYFLAKE
            .compose(
                1,
                crate::Fields {
                    datacenter: 0,
                    worker: 1,
                    sequence: 1,
                },
            )
            .unwrap()
            .as_u64();
        assert_eq!(s, (1 << 24) | (1 << 16) | 1);
        assert_eq!(time(Layout::SONYFLAKE, 1 << 24), "2014-09-01T00:00:00.010Z");
    }
}

#[cfg(test)]
mod custom_and_generation {
    use crate::{Bits, BuildError, Generator, Id, Layout, ManualClock};

    fn err(text: &str) -> String {
        Layout::by_name(text).unwrap_err().to_string()
    }

    #[test]
    fn custom_layouts_parse_with_twitter_epoch_and_1_ms_ticks() {
        let l = Layout::by_name("custom:41/5/5/12").unwrap();
        assert_eq!(l.bits(), Layout::TWITTER.bits());
        assert_eq!(
            (l.tick_ms(), l.epoch_ms(), l.name()),
            (1, Layout::TWITTER.epoch_ms(), "custom")
        );
        assert_eq!(l.shifts(), Layout::TWITTER.shifts());
        let l = Layout::by_name("CUSTOM:39/0/10/14").unwrap();
        assert_eq!(
            (l.max_datacenter(), l.max_worker(), l.max_sequence()),
            (0, 1023, 16383)
        );
        assert!(!l.uses_bit_63());
        let wide = Layout::by_name("custom:42/5/5/12").unwrap();
        assert!(wide.uses_bit_63());
        assert_eq!(
            Layout::by_name("custom:52/0/0/12").unwrap().bits().total(),
            64
        );
    }

    #[test]
    fn custom_layout_errors_name_the_field_and_the_limit() {
        let syntax = "must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12";
        assert_eq!(
            err("custom:41/5/5"),
            format!("custom layout \"custom:41/5/5\" {syntax}")
        );
        assert_eq!(
            err("custom:"),
            format!("custom layout \"custom:\" {syntax}")
        );
        assert_eq!(
            err("custom:41/5/5/12/1"),
            format!("custom layout \"custom:41/5/5/12/1\" {syntax}")
        );
        assert_eq!(
            err("custom:x/5/5/12"),
            "custom layout timestamp width \"x\" is not a number of bits 0..=64"
        );
        assert_eq!(
            err("custom:41/-1/5/12"),
            "custom layout datacenter width \"-1\" is not a number of bits 0..=64"
        );
        assert_eq!(
            err("custom:41/5/65/12"),
            "custom layout worker width \"65\" is not a number of bits 0..=64"
        );
        // Plain digits: no sign, no space, no leading run of zeros past three digits.
        for (text, width) in [
            ("custom:+41/5/5/12", "+41"),
            ("custom: 41/5/5/12", " 41"),
            ("custom:41/5/5/0012", "0012"),
        ] {
            assert!(
                err(text).ends_with(&format!("width {width:?} is not a number of bits 0..=64")),
                "{text}: {}",
                err(text)
            );
        }
        assert_eq!(
            err("custom:41/5/5/"),
            "custom layout sequence width \"\" is not a number of bits 0..=64"
        );
        assert_eq!(
            err("custom:41/5/5/11"),
            "custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64"
        );
        assert_eq!(
            err("custom:43/5/5/12"),
            "custom layout widths add up to 65 bits: they must add up to 63 (bit 63 stays 0) or 64"
        );
        assert_eq!(
            err("custom:0/31/20/12"),
            "layout needs at least 1 timestamp bit, got 0"
        );
        assert_eq!(
            err("custom:41/11/11/0"),
            "custom layout needs at least 1 sequence bit, got 0"
        );
        assert_eq!(
            err("custom41/5/5/12"),
            "unknown layout \"custom41/5/5/12\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S"
        );
    }

    proptest::proptest! {
        /// Any four widths adding up to 63 or 64 with a timestamp and a sequence bit parse
        /// to exactly those widths; any other sum is refused.
        #[test]
        fn custom_widths_round_trip(t in 0u8..=64, d in 0u8..=64, w in 0u8..=64, s in 0u8..=64) {
            let parsed = Layout::by_name(&format!("custom:{t}/{d}/{w}/{s}"));
            let total = u32::from(t) + u32::from(d) + u32::from(w) + u32::from(s);
            if matches!(total, 63 | 64) && t > 0 && s > 0 {
                let bits = Bits { timestamp: t, datacenter: d, worker: w, sequence: s };
                proptest::prop_assert_eq!(parsed.unwrap().bits(), bits);
            } else {
                proptest::prop_assert!(parsed.is_err());
            }
        }
    }

    /// Ids of `layout` from a generator for `node`, with the clock at `ms`, moving on a tick
    /// after every `per_tick` ids.
    fn ids(layout: Layout, ms: u64, dc: u64, worker: u64) -> Vec<Id> {
        let clock = ManualClock::new(ms);
        let g = Generator::builder(layout)
            .clock(&clock)
            .datacenter(dc)
            .worker(worker)
            .build()
            .unwrap();
        (0..2_000)
            .map(|i| {
                if i % 700 == 0 {
                    clock.advance(layout.tick_ms());
                }
                g.next_id().unwrap()
            })
            .collect()
    }

    #[test]
    fn every_live_preset_generates_increasing_ids_that_decode_to_the_node() {
        let now = 1_764_000_000_000; // 2025-11-24
        for layout in Layout::PRESETS.into_iter().filter(|l| l.name() != "baidu") {
            let (dc, worker) = (layout.max_datacenter(), layout.max_worker().min(7));
            let ids = ids(layout, now, dc, worker);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{}", layout.name());
            for id in ids {
                let parts = layout.decode(id).unwrap();
                assert_eq!(
                    (parts.datacenter, parts.worker),
                    (dc, worker),
                    "{}",
                    layout.name()
                );
            }
        }
    }

    #[test]
    fn a_64_bit_layout_generates_across_its_signed_overflow() {
        let layout = Layout::DISCORD;
        let at = layout.capacity().signed_overflow_ms.unwrap();
        let ids = ids(layout, at - 2, 31, 31);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.first().unwrap().as_u64() <= i64::MAX as u64);
        assert!(ids.last().unwrap().as_u64() > i64::MAX as u64);
    }

    /// At the end of the range, a full last tick neither wraps the counter nor issues an
    /// id twice: later calls are refused, however many there are.
    #[test]
    fn the_end_of_a_64_bit_range_refuses_instead_of_wrapping() {
        for text in ["custom:52/0/0/12", "custom:42/5/5/12", "custom:61/0/0/3"] {
            let layout = Layout::by_name(text).unwrap();
            let last = crate::generator::max_tick(&layout);
            let clock = ManualClock::new(layout.unix_ms_at(last));
            let g = Generator::builder(layout).clock(&clock).build().unwrap();
            let mut issued = Vec::new();
            let mut refused = 0;
            for _ in 0..3 * (layout.max_sequence() + 1).min(10_000) {
                match g.try_next_id() {
                    Ok(crate::Poll::Ready(id)) => issued.push(id),
                    _ => refused += 1,
                }
            }
            assert_eq!(
                issued.len() as u64,
                (layout.max_sequence() + 1).min(30_000),
                "{text}"
            );
            assert!(issued.windows(2).all(|w| w[0] < w[1]), "{text}");
            assert!(refused > 0, "{text}");
            clock.advance(10 * layout.tick_ms());
            assert!(g.next_id().is_err(), "{text}");
        }
    }

    #[test]
    fn a_run_out_layout_is_refused_with_its_date() {
        let err = Generator::builder(Layout::BAIDU).build().unwrap_err();
        assert!(matches!(
            err,
            BuildError::RanOut {
                layout: "baidu",
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "layout baidu's time field ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
        );
    }

    #[test]
    fn a_chosen_layout_names_the_part_at_fault() {
        use crate::UnixMs;
        use crate::error::LayoutChoiceError as E;
        let now = UnixMs(1_763_780_112_345);
        let chosen = |name, tick, epoch| Layout::chosen(name, tick, epoch, now);
        assert_eq!(
            chosen("sonyflake", Some(1), Some("0")).unwrap(),
            Layout::SONYFLAKE
                .with_tick_ms(1)
                .unwrap()
                .with_epoch_ms(0)
                .unwrap()
        );
        assert!(matches!(chosen("flickr", None, None), Err(E::Name(_))));
        let tick = chosen("twitter", Some(0), None).unwrap_err();
        assert!(matches!(tick, E::TickMs { tick_ms: 0, .. }));
        assert_eq!(
            std::error::Error::source(&tick).unwrap().to_string(),
            "tick length must be at least 1 ms, got 0"
        );
        assert!(matches!(
            chosen("twitter", None, Some("soon")),
            Err(E::EpochTime(_))
        ));
        let far = chosen("twitter", None, Some(&u64::MAX.to_string())).unwrap_err();
        assert!(matches!(far, E::EpochTime(_)), "{far}");
        let late = (u64::MAX - 1).to_string();
        let overflow = Layout::chosen("twitter", None, Some(&late), UnixMs(u64::MAX)).unwrap_err();
        assert!(matches!(overflow, E::Epoch { .. }), "{overflow}");
        assert!(
            overflow.to_string().starts_with("cannot use epoch "),
            "{overflow}"
        );
    }
}
