//! How the 64 bits of an id are split: a validated value, so a field never spills into
//! another.

use crate::diagram::Diagram;
use crate::{Id, LayoutError, RangeError};

/// One of the fields below the timestamp. The timestamp always holds the top bits, so ids
/// sort by time; the other three may come in any order (Sonyflake puts its sequence above
/// its machine id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The datacenter id (Discord's process id).
    Datacenter,
    /// The worker id (Instagram's shard, Sonyflake's machine, TSID's node).
    Worker,
    /// The sequence within one tick (Discord's increment, TSID's counter).
    Sequence,
}

impl Field {
    /// The three fields, in Twitter's order (the order [`Layout::new`] uses).
    pub const ALL: [Field; 3] = [Field::Datacenter, Field::Worker, Field::Sequence];

    /// The field's machine-readable key, the same for every scheme: `datacenter`, `worker`
    /// or `sequence` (what a scheme calls it is in [`Names`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    ///
    /// assert_eq!(Field::ALL.map(Field::key), ["datacenter", "worker", "sequence"]);
    /// assert_eq!(Layout::DISCORD.names().of(Field::Datacenter), "process");
    /// ```
    #[must_use]
    pub const fn key(self) -> &'static str {
        match self {
            Field::Datacenter => "datacenter",
            Field::Worker => "worker",
            Field::Sequence => "sequence",
        }
    }
}

/// Bit widths of the four fields.
///
/// # Examples
///
/// ```
/// use snowmint::Bits;
///
/// let bits = Bits { timestamp: 41, datacenter: 5, worker: 5, sequence: 12 };
/// assert_eq!(bits.total(), 63);
/// ```
///
/// With the `serde` feature it is the JSON object every interface shows a layout's widths
/// as (`GET /v1/layout`, the web page, `testdata/vectors.json`):
///
/// ```
/// # #[cfg(feature = "serde")] {
/// let json = serde_json::to_string(&snowmint::Layout::TWITTER.bits())?;
/// assert_eq!(json, r#"{"timestamp":41,"datacenter":5,"worker":5,"sequence":12}"#);
/// # }
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "utoipa", schema(description = "Bits of each field."))]
pub struct Bits {
    /// Bits of the timestamp, counted in ticks since the epoch.
    pub timestamp: u8,
    /// Bits of the datacenter id (may be 0).
    pub datacenter: u8,
    /// Bits of the worker id (may be 0).
    pub worker: u8,
    /// Bits of the per-tick sequence (may be 0: one id per tick).
    pub sequence: u8,
}

impl Bits {
    /// Bits used by all four fields together.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Layout::DISCORD.bits().total(), 64);
    /// ```
    #[must_use]
    pub const fn total(&self) -> u32 {
        self.timestamp as u32 + self.datacenter as u32 + self.worker as u32 + self.sequence as u32
    }

    /// The width of one of the fields below the timestamp.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    ///
    /// assert_eq!(Layout::SONYFLAKE.bits().of(Field::Worker), 16);
    /// ```
    #[must_use]
    pub const fn of(&self, field: Field) -> u8 {
        match field {
            Field::Datacenter => self.datacenter,
            Field::Worker => self.worker,
            Field::Sequence => self.sequence,
        }
    }
}

/// What a scheme calls its fields, for people: Discord's "process", Instagram's "shard".
/// Machine-readable output always uses the keys `datacenter`, `worker` and `sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Names {
    /// The scheme's name for the datacenter field.
    pub datacenter: &'static str,
    /// The scheme's name for the worker field.
    pub worker: &'static str,
    /// The scheme's name for the sequence field.
    pub sequence: &'static str,
}

impl Names {
    /// Twitter's names, the default.
    pub const DEFAULT: Names = Names {
        datacenter: "datacenter",
        worker: "worker",
        sequence: "sequence",
    };

    /// What the scheme calls one field.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    ///
    /// assert_eq!(Layout::INSTAGRAM.names().of(Field::Worker), "shard");
    /// ```
    #[must_use]
    pub const fn of(&self, field: Field) -> &'static str {
        match field {
            Field::Datacenter => self.datacenter,
            Field::Worker => self.worker,
            Field::Sequence => self.sequence,
        }
    }
}

/// A layout written out as data, in the one form every program that reads layouts from
/// snowmint gets: the web page's layouts, and the shared test vectors every client checks
/// itself against. The tick and the epoch are decimal strings, as ids are, so a JavaScript
/// reader takes them exactly.
#[cfg(feature = "serde")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LayoutForm {
    /// The preset's name, or `custom`.
    pub name: &'static str,
    /// The name of the system the layout comes from, for people.
    pub title: &'static str,
    /// What the scheme calls its fields.
    pub names: Names,
    /// The bit widths.
    pub bits: Bits,
    /// The keys of the low fields, most significant first.
    pub order: [&'static str; 3],
    /// Milliseconds per tick, in decimal.
    pub tick_ms: String,
    /// The epoch, ms since the Unix epoch, in decimal.
    pub epoch_ms: String,
}

/// An id taken apart.
///
/// # Examples
///
/// ```
/// use snowmint::{Id, Layout};
///
/// let parts = Layout::DISCORD.decode(Id::from_u64(175928847299117063))?;
/// assert_eq!(parts.unix_ms, 1_462_015_105_796);
/// assert_eq!((parts.worker, parts.datacenter, parts.sequence), (1, 0, 7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parts {
    /// The timestamp field: ticks since the layout's epoch.
    pub timestamp: u64,
    /// The start of that tick, in milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The datacenter field.
    pub datacenter: u64,
    /// The worker field.
    pub worker: u64,
    /// The sequence field.
    pub sequence: u64,
}

impl Parts {
    /// The fields below the timestamp, as [`Layout::compose`] takes them back.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Id, Layout};
    ///
    /// let id = Id::from_u64(175928847299117063);
    /// let parts = Layout::DISCORD.decode(id)?;
    /// assert_eq!(Layout::DISCORD.compose(parts.timestamp, parts.fields())?, id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn fields(&self) -> Fields {
        Fields {
            datacenter: self.datacenter,
            worker: self.worker,
            sequence: self.sequence,
        }
    }
}

/// The fields of an id below its timestamp, by name, so that composing one never depends on
/// the order of three numbers. [`Parts::fields`] gives them back from a decoded id.
///
/// # Examples
///
/// ```
/// use snowmint::{Fields, Layout};
///
/// let id = Layout::TWITTER.compose(1, Fields { worker: 3, ..Fields::default() })?;
/// assert_eq!(Layout::TWITTER.decode(id)?.worker, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Fields {
    /// The datacenter field.
    pub datacenter: u64,
    /// The worker field.
    pub worker: u64,
    /// The sequence field.
    pub sequence: u64,
}

/// What a layout can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capacity {
    /// Ids one worker id can issue per second (rounded down).
    pub ids_per_second: u64,
    /// Distinct (datacenter, worker) pairs.
    pub worker_ids: u64,
    /// The first instant the timestamp field cannot hold, in ms since the Unix epoch.
    pub runs_out_ms: u64,
    /// For a layout that uses bit 63: the first instant whose ids pass `i64::MAX`, so that
    /// a signed 64-bit column (SQL `BIGINT`) overflows, in ms since the Unix epoch.
    pub signed_overflow_ms: Option<u64>,
}

/// A validated split of the 64 bits: widths, field order, tick length and epoch.
///
/// Build one with [`Layout::new`] or take a preset ([`Layout::TWITTER`] and the others).
/// What composes an id also decomposes it: [`Layout::compose`] and [`Layout::decode`] refuse
/// values that do not fit instead of truncating them.
///
/// # Examples
///
/// ```
/// use snowmint::{Bits, Fields, Layout};
///
/// let layout = Layout::new(
///     Bits { timestamp: 41, datacenter: 5, worker: 5, sequence: 12 },
///     1,
///     1_288_834_974_657,
/// )?;
/// let id = layout.compose(1, Fields { datacenter: 2, worker: 3, sequence: 4 })?;
/// let parts = layout.decode(id)?;
/// assert_eq!((parts.timestamp, parts.datacenter, parts.worker, parts.sequence), (1, 2, 3, 4));
/// assert_eq!(layout.compose(0, Fields { datacenter: 32, worker: 0, sequence: 0 }).unwrap_err().to_string(), "datacenter id 32 is out of range 0..=31");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    name: &'static str,
    title: &'static str,
    bits: Bits,
    order: [Field; 3],
    names: Names,
    tick_ms: u64,
    epoch_ms: u64,
    timestamp_shift: u8,
    datacenter_shift: u8,
    worker_shift: u8,
    sequence_shift: u8,
}

const fn mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Layout {
    /// Builds a layout without checks, for presets; `tests` validates every preset.
    pub(crate) const fn preset(
        name: &'static str,
        title: &'static str,
        bits: Bits,
        order: [Field; 3],
        names: Names,
        tick_ms: u64,
        epoch_ms: u64,
    ) -> Layout {
        let mut shifts = [0u8; 3];
        let mut shift = 0u8;
        let mut i = 3;
        while i > 0 {
            i -= 1;
            let width = bits.of(order[i]);
            shifts[field_index(order[i])] = shift;
            shift += width;
        }
        Layout {
            name,
            title,
            bits,
            order,
            names,
            tick_ms,
            epoch_ms,
            timestamp_shift: shift,
            datacenter_shift: shifts[0],
            worker_shift: shifts[1],
            sequence_shift: shifts[2],
        }
    }

    /// A layout for generating ids, in Twitter's field order (timestamp, datacenter, worker,
    /// sequence), with a tick of `tick_ms` milliseconds and an epoch in ms since the Unix
    /// epoch. Bit 63 stays 0, so ids are positive in every language.
    ///
    /// # Errors
    ///
    /// The widths need more than 63 bits, the timestamp has no bits, the tick is 0 ms, or the
    /// layout's last tick lies past the largest millisecond count.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Bits, Layout};
    ///
    /// let bits = Bits { timestamp: 42, datacenter: 5, worker: 5, sequence: 12 };
    /// let err = Layout::new(bits, 1, 0).unwrap_err();
    /// assert_eq!(err.to_string(), "layout needs 64 bits but a generated id has 63 (bit 63 stays 0 so ids are positive)");
    /// ```
    pub fn new(bits: Bits, tick_ms: u64, epoch_ms: u64) -> Result<Layout, LayoutError> {
        Self::checked(bits, 63, tick_ms, epoch_ms)
    }

    /// A layout that may use all 64 bits, like Discord's or TSID's. Its ids are unsigned
    /// 64-bit numbers: from [`Capacity::signed_overflow_ms`] on they no longer fit a signed
    /// 64-bit column.
    ///
    /// # Errors
    ///
    /// As [`Layout::new`], with 64 bits allowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Bits, Layout};
    ///
    /// let bits = Bits { timestamp: 42, datacenter: 5, worker: 5, sequence: 12 };
    /// assert!(Layout::new_u64(bits, 1, 1_420_070_400_000)?.uses_bit_63());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_u64(bits: Bits, tick_ms: u64, epoch_ms: u64) -> Result<Layout, LayoutError> {
        Self::checked(bits, 64, tick_ms, epoch_ms)
    }

    fn checked(bits: Bits, limit: u32, tick_ms: u64, epoch_ms: u64) -> Result<Layout, LayoutError> {
        if bits.total() > limit {
            return Err(LayoutError::TooWide {
                bits: bits.total(),
                limit,
            });
        }
        if bits.timestamp == 0 {
            return Err(LayoutError::NoTimestampBits);
        }
        if tick_ms == 0 {
            return Err(LayoutError::ZeroTick);
        }
        let layout = Layout::preset(
            "custom",
            "custom",
            bits,
            Field::ALL,
            Names::DEFAULT,
            tick_ms,
            epoch_ms,
        );
        layout
            .last_ms()
            .ok_or(LayoutError::EpochOverflow { epoch_ms })?;
        Ok(layout)
    }

    /// The same layout with its low fields in another order, most significant first.
    ///
    /// # Errors
    ///
    /// `order` names a field twice (and so leaves one out).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    ///
    /// let l = Layout::TWITTER.with_order([Field::Sequence, Field::Datacenter, Field::Worker])?;
    /// assert_eq!(l.order()[0], Field::Sequence);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_order(self, order: [Field; 3]) -> Result<Layout, LayoutError> {
        let seen = order.iter().fold(0u8, |acc, f| acc | 1 << field_index(*f));
        if seen != 0b111 {
            return Err(LayoutError::DuplicateField);
        }
        Ok(Layout::preset(
            self.name,
            self.title,
            self.bits,
            order,
            self.names,
            self.tick_ms,
            self.epoch_ms,
        ))
    }

    /// The same layout under another name (which is its [`title`](Self::title) too) and
    /// with the scheme's own field names.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Layout, Names};
    ///
    /// let names = Names { datacenter: "region", worker: "host", sequence: "counter" };
    /// let l = Layout::TWITTER.with_names("mine", names);
    /// assert_eq!((l.name(), l.title(), l.names().worker), ("mine", "mine", "host"));
    /// ```
    #[must_use]
    pub const fn with_names(mut self, name: &'static str, names: Names) -> Layout {
        self.name = name;
        self.title = name;
        self.names = names;
        self
    }

    /// The same layout with another epoch (ms since the Unix epoch).
    ///
    /// # Errors
    ///
    /// The layout's last tick would lie past the largest millisecond count.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = snowmint::Layout::TWITTER.with_epoch_ms(0)?;
    /// assert_eq!(l.epoch_ms(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_epoch_ms(mut self, epoch_ms: u64) -> Result<Layout, LayoutError> {
        self.epoch_ms = epoch_ms;
        self.last_ms()
            .ok_or(LayoutError::EpochOverflow { epoch_ms })?;
        Ok(self)
    }

    /// The same layout with another tick length, in milliseconds.
    ///
    /// # Errors
    ///
    /// The tick is 0 ms, or the layout's last tick would lie past the largest millisecond
    /// count.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = snowmint::Layout::by_name("custom:39/0/10/14")?.with_tick_ms(10)?;
    /// assert_eq!(l.tick_ms(), 10);
    /// assert_eq!(snowmint::Layout::TWITTER.with_tick_ms(0).unwrap_err().to_string(), "tick length must be at least 1 ms, got 0");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_tick_ms(mut self, tick_ms: u64) -> Result<Layout, LayoutError> {
        if tick_ms == 0 {
            return Err(LayoutError::ZeroTick);
        }
        self.tick_ms = tick_ms;
        self.last_ms().ok_or(LayoutError::EpochOverflow {
            epoch_ms: self.epoch_ms,
        })?;
        Ok(self)
    }

    /// The layout's name: a preset's name, or "custom".
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// What people call the scheme, for a label: "Baidu uid-generator" where the
    /// [`name`](Self::name) is "baidu". A layout that is no preset's has its name as title.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Bits, Layout};
    ///
    /// assert_eq!(Layout::TSID.title(), "TSID");
    /// let bits = Bits { timestamp: 41, datacenter: 0, worker: 10, sequence: 12 };
    /// assert_eq!(Layout::new(bits, 1, 0)?.title(), "custom");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn title(&self) -> &'static str {
        self.title
    }

    /// The bit widths.
    #[must_use]
    pub const fn bits(&self) -> Bits {
        self.bits
    }

    /// The order of the low fields, most significant first.
    #[must_use]
    pub const fn order(&self) -> [Field; 3] {
        self.order
    }

    /// What the scheme calls its fields.
    #[must_use]
    pub const fn names(&self) -> Names {
        self.names
    }

    /// The layout written out as data ([`LayoutForm`]): the one form of every place that
    /// writes a layout for another program to read.
    ///
    /// ```
    /// # #[cfg(feature = "serde")] {
    /// let json = serde_json::to_value(snowmint::Layout::DISCORD.form())?;
    /// assert_eq!(json["names"]["datacenter"], "process");
    /// assert_eq!(json["order"], serde_json::json!(["worker", "datacenter", "sequence"]));
    /// assert_eq!(json["epoch_ms"], "1420070400000");
    /// # }
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[cfg(feature = "serde")]
    #[must_use]
    pub fn form(&self) -> LayoutForm {
        LayoutForm {
            name: self.name(),
            title: self.title,
            names: self.names,
            bits: self.bits,
            order: self.order.map(Field::key),
            tick_ms: self.tick_ms.to_string(),
            epoch_ms: self.epoch_ms.to_string(),
        }
    }

    /// Milliseconds per tick.
    #[must_use]
    pub const fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// The epoch, in milliseconds since the Unix epoch.
    #[must_use]
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Whether the layout uses bit 63: its ids are unsigned 64-bit numbers, and the later
    /// ones do not fit a signed 64-bit column.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(snowmint::Layout::DISCORD.uses_bit_63());
    /// assert!(!snowmint::Layout::TWITTER.uses_bit_63());
    /// ```
    #[must_use]
    pub const fn uses_bit_63(&self) -> bool {
        self.bits.total() > 63
    }

    /// The largest timestamp, in ticks.
    #[must_use]
    pub const fn max_timestamp(&self) -> u64 {
        mask(self.bits.timestamp)
    }

    /// The largest datacenter id.
    #[must_use]
    pub const fn max_datacenter(&self) -> u64 {
        mask(self.bits.datacenter)
    }

    /// The largest worker id.
    #[must_use]
    pub const fn max_worker(&self) -> u64 {
        mask(self.bits.worker)
    }

    /// The largest sequence number.
    #[must_use]
    pub const fn max_sequence(&self) -> u64 {
        mask(self.bits.sequence)
    }

    /// The largest id the layout can hold.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Layout::TWITTER.max_id().as_u64(), i64::MAX as u64);
    /// ```
    #[must_use]
    pub const fn max_id(&self) -> Id {
        Id::from_u64(mask(self.bits.total() as u8))
    }

    /// Shifts of the timestamp, datacenter, worker and sequence fields.
    pub(crate) const fn shifts(&self) -> [u8; 4] {
        [
            self.timestamp_shift,
            self.datacenter_shift,
            self.worker_shift,
            self.sequence_shift,
        ]
    }

    /// Composes an id from a timestamp in ticks and the fields below it.
    ///
    /// # Errors
    ///
    /// Any value larger than its field holds, named with its range.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Fields, Layout};
    ///
    /// let id = Layout::TWITTER.compose(1, Fields { sequence: 5, ..Fields::default() })?;
    /// assert_eq!(id.as_u64(), (1 << 22) | 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compose(&self, timestamp: u64, fields: Fields) -> Result<Id, RangeError> {
        check("timestamp", timestamp, self.max_timestamp())?;
        self.check_node(fields.datacenter, fields.worker)?;
        check("sequence", fields.sequence, self.max_sequence())?;
        Ok(self.compose_unchecked(timestamp, fields.datacenter, fields.worker, fields.sequence))
    }

    /// Checks a datacenter and worker id against their fields.
    pub(crate) fn check_node(&self, datacenter: u64, worker: u64) -> Result<(), RangeError> {
        check("datacenter id", datacenter, self.max_datacenter())?;
        check("worker id", worker, self.max_worker())
    }

    pub(crate) const fn compose_unchecked(
        &self,
        timestamp: u64,
        datacenter: u64,
        worker: u64,
        sequence: u64,
    ) -> Id {
        Id::from_u64(
            timestamp << self.timestamp_shift
                | datacenter << self.datacenter_shift
                | worker << self.worker_shift
                | sequence << self.sequence_shift,
        )
    }

    /// Composes an id for an instant given in ms since the Unix epoch.
    ///
    /// # Errors
    ///
    /// The instant is outside the layout's span, or a field is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Fields, Layout};
    ///
    /// let id = Layout::DISCORD.compose_at(1_462_015_105_796, Fields { datacenter: 0, worker: 1, sequence: 7 })?;
    /// assert_eq!(id.as_u64(), 175928847299117063);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compose_at(&self, unix_ms: u64, fields: Fields) -> Result<Id, RangeError> {
        self.compose(self.tick_at(unix_ms)?, fields)
    }

    /// The smallest and the largest id of the tick an instant falls in: every other field
    /// 0, then every other field at its largest. Every id issued in that tick lies between
    /// them, so they bound a query by time on an id column (`WHERE id BETWEEN first AND
    /// last`).
    ///
    /// # Errors
    ///
    /// The instant is outside the layout's span.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Fields, Layout};
    ///
    /// let (first, last) = Layout::TWITTER.ids_at(1_704_067_200_000)?;
    /// assert_eq!(first.as_u64(), 1_741_610_183_685_046_272);
    /// assert_eq!(last.as_u64() - first.as_u64(), (1 << 22) - 1);
    /// let parts = Layout::TWITTER.decode(last)?;
    /// assert_eq!((parts.unix_ms, parts.datacenter, parts.worker, parts.sequence), (1_704_067_200_000, 31, 31, 4095));
    ///
    /// let err = Layout::TWITTER.ids_at(0).unwrap_err();
    /// assert!(err.to_string().starts_with("time 1970-01-01T00:00:00.000Z is outside"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ids_at(&self, unix_ms: u64) -> Result<(Id, Id), RangeError> {
        let tick = self.tick_at(unix_ms)?;
        let first = self.compose_unchecked(tick, 0, 0, 0);
        let last = self.compose_unchecked(
            tick,
            self.max_datacenter(),
            self.max_worker(),
            self.max_sequence(),
        );
        Ok((first, last))
    }

    /// Takes an id apart.
    ///
    /// # Errors
    ///
    /// The id sets bits above the layout's fields (for a 63-bit layout: bit 63).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Id, Layout};
    ///
    /// let err = Layout::TWITTER.decode(Id::MAX).unwrap_err();
    /// assert!(err.to_string().starts_with("id 18446744073709551615 is out of range"));
    /// ```
    pub fn decode(&self, id: Id) -> Result<Parts, RangeError> {
        let max = self.max_id().as_u64();
        let raw = id.as_u64();
        if raw > max {
            return Err(RangeError::Id { id: raw, max });
        }
        let timestamp = field(raw, self.timestamp_shift, self.bits.timestamp);
        Ok(Parts {
            timestamp,
            unix_ms: self.unix_ms_at(timestamp),
            datacenter: field(raw, self.datacenter_shift, self.bits.datacenter),
            worker: field(raw, self.worker_shift, self.bits.worker),
            sequence: field(raw, self.sequence_shift, self.bits.sequence),
        })
    }

    /// The tick an instant falls in.
    ///
    /// # Errors
    ///
    /// The instant is before the epoch or after the layout's last tick.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Layout;
    ///
    /// assert_eq!(Layout::SONYFLAKE.tick_at(1_409_529_600_025)?, 2);
    /// let err = Layout::TWITTER.tick_at(0).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "time 1970-01-01T00:00:00.000Z is outside the layout's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tick_at(&self, unix_ms: u64) -> Result<u64, RangeError> {
        let last_ms = self.last_ms().unwrap_or(u64::MAX);
        if unix_ms < self.epoch_ms || unix_ms > last_ms {
            return Err(RangeError::Time {
                unix_ms,
                first_ms: self.epoch_ms,
                last_ms,
            });
        }
        Ok((unix_ms - self.epoch_ms) / self.tick_ms)
    }

    /// The start of a tick, in ms since the Unix epoch (saturating past `u64::MAX`).
    #[must_use]
    pub const fn unix_ms_at(&self, tick: u64) -> u64 {
        self.epoch_ms
            .saturating_add(tick.saturating_mul(self.tick_ms))
    }

    /// The last millisecond the timestamp field covers, `None` if it is past `u64::MAX`.
    const fn last_ms(&self) -> Option<u64> {
        match self.max_timestamp().checked_add(1) {
            Some(ticks) => match ticks.checked_mul(self.tick_ms) {
                Some(span) => match self.epoch_ms.checked_add(span) {
                    Some(end) => Some(end - 1),
                    None => None,
                },
                None => None,
            },
            None => None,
        }
    }

    /// What the layout holds: ids per second per worker id, worker ids, and when the
    /// timestamp field runs out.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Layout, UnixMs};
    ///
    /// let c = Layout::TWITTER.capacity();
    /// assert_eq!((c.ids_per_second, c.worker_ids), (4_096_000, 1_024));
    /// assert_eq!(UnixMs(c.runs_out_ms).to_string(), "2080-07-10T17:30:30.209Z");
    /// assert_eq!(c.signed_overflow_ms, None);
    /// let discord = Layout::DISCORD.capacity().signed_overflow_ms.map(UnixMs);
    /// assert_eq!(discord.map(|t| t.to_string()).as_deref(), Some("2084-09-06T15:47:35.552Z"));
    /// ```
    #[must_use]
    pub const fn capacity(&self) -> Capacity {
        let per_tick = self.max_sequence() as u128 + 1;
        let per_second = per_tick * 1000 / self.tick_ms as u128;
        Capacity {
            ids_per_second: if per_second > u64::MAX as u128 {
                u64::MAX
            } else {
                per_second as u64
            },
            worker_ids: 1u64 << (self.bits.datacenter + self.bits.worker),
            runs_out_ms: match self.last_ms() {
                Some(last) => last.saturating_add(1),
                None => u64::MAX,
            },
            signed_overflow_ms: if self.uses_bit_63() {
                // The timestamp holds the top bits: bit 63 is its own top bit.
                Some(self.unix_ms_at(1u64 << (63 - self.timestamp_shift)))
            } else {
                None
            },
        }
    }

    /// How near its end a layout's time field earns a warning: a year, time enough to move
    /// a fleet to another layout or a later epoch.
    pub const RUNS_OUT_WARNING_MS: u64 = crate::MS_PER_YEAR;

    /// The warning for a layout whose time field runs out after `now_ms` but within
    /// [`Layout::RUNS_OUT_WARNING_MS`] of it: ids can still be made, not for long. `None`
    /// for a layout with longer left, or one that has already run out (which no generator
    /// can start with, an error of its own).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Layout, MS_PER_YEAR};
    ///
    /// let end = Layout::TWITTER.capacity().runs_out_ms;
    /// assert_eq!(Layout::TWITTER.runs_out_warning(end - 2 * MS_PER_YEAR), None);
    /// assert_eq!(
    ///     Layout::TWITTER.runs_out_warning(end - 1).as_deref(),
    ///     Some("layout twitter's time field runs out on 2080-07-10T17:30:30.209Z, within a year: no id can be issued after that; move to another layout or a later epoch"),
    /// );
    /// assert_eq!(Layout::TWITTER.runs_out_warning(end), None);
    /// ```
    #[must_use]
    pub fn runs_out_warning(&self, now_ms: u64) -> Option<String> {
        let end = self.capacity().runs_out_ms;
        (end > now_ms && end - now_ms < Layout::RUNS_OUT_WARNING_MS).then(|| {
            format!(
                "layout {}'s time field runs out on {}, within a year: no id can be issued after that; move to another layout or a later epoch",
                self.name(),
                crate::UnixMs(end)
            )
        })
    }

    /// The ASCII bit diagram, as an adapter that implements `Display`.
    ///
    /// # Examples
    ///
    /// ```
    /// let text = snowmint::Layout::TWITTER.diagram().to_string();
    /// assert!(text.contains("| timestamp "));
    /// ```
    #[must_use]
    pub const fn diagram(&self) -> Diagram<'_> {
        Diagram(self)
    }
}

const fn field_index(field: Field) -> usize {
    match field {
        Field::Datacenter => 0,
        Field::Worker => 1,
        Field::Sequence => 2,
    }
}

const fn field(raw: u64, shift: u8, bits: u8) -> u64 {
    if bits == 0 {
        0
    } else {
        (raw >> shift) & mask(bits)
    }
}

fn check(what: &'static str, value: u64, max: u64) -> Result<(), RangeError> {
    if value > max {
        return Err(RangeError::Field { what, value, max });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn validation_names_the_value_and_the_limit() {
        let bits = |t, d, w, s| Bits {
            timestamp: t,
            datacenter: d,
            worker: w,
            sequence: s,
        };
        assert_eq!(
            Layout::new_u64(bits(42, 6, 5, 12), 1, 0)
                .unwrap_err()
                .to_string(),
            "layout needs 65 bits but an id has 64"
        );
        assert_eq!(
            Layout::new(bits(0, 5, 5, 12), 1, 0)
                .unwrap_err()
                .to_string(),
            "layout needs at least 1 timestamp bit, got 0"
        );
        assert_eq!(
            Layout::new(bits(41, 5, 5, 12), 0, 0)
                .unwrap_err()
                .to_string(),
            "tick length must be at least 1 ms, got 0"
        );
        assert_eq!(
            Layout::new(bits(41, 5, 5, 12), 1, u64::MAX - 5)
                .unwrap_err()
                .to_string(),
            "epoch 18446744073709551610 ms puts the layout's last tick past the largest millisecond count"
        );
        assert_eq!(
            Layout::TWITTER
                .with_order([Field::Worker, Field::Worker, Field::Sequence])
                .unwrap_err()
                .to_string(),
            "layout order names a field twice: give datacenter, worker and sequence once each"
        );
    }

    #[test]
    fn compose_refuses_every_out_of_range_field() {
        let l = Layout::TWITTER;
        let msg = |r: Result<Id, RangeError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(l.compose(
                1 << 41,
                Fields {
                    datacenter: 0,
                    worker: 0,
                    sequence: 0
                }
            )),
            "timestamp 2199023255552 is out of range 0..=2199023255551"
        );
        assert_eq!(
            msg(l.compose(
                0,
                Fields {
                    datacenter: 32,
                    worker: 0,
                    sequence: 0
                }
            )),
            "datacenter id 32 is out of range 0..=31"
        );
        assert_eq!(
            msg(l.compose(
                0,
                Fields {
                    datacenter: 0,
                    worker: 40,
                    sequence: 0
                }
            )),
            "worker id 40 is out of range 0..=31"
        );
        assert_eq!(
            msg(l.compose(
                0,
                Fields {
                    datacenter: 0,
                    worker: 0,
                    sequence: 4096
                }
            )),
            "sequence 4096 is out of range 0..=4095"
        );
    }

    #[test]
    fn decode_refuses_bits_the_layout_never_sets() {
        let err = Layout::TWITTER.decode(Id::from_u64(1 << 63)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "id 9223372036854775808 is out of range for this layout: its largest id is 9223372036854775807"
        );
        assert!(Layout::DISCORD.decode(Id::MAX).is_ok());
    }

    #[test]
    fn capacity_of_the_default_layout() {
        let c = Layout::TWITTER.capacity();
        assert_eq!(c.ids_per_second, 4_096_000);
        assert_eq!(c.worker_ids, 1024);
        assert_eq!(c.runs_out_ms, 1_288_834_974_657 + (1u64 << 41));
        assert_eq!(Layout::SONYFLAKE.capacity().ids_per_second, 25_600);
        assert_eq!(Layout::BAIDU.capacity().ids_per_second, 8_192);
    }

    /// The six orders of the three fields below the timestamp.
    const ORDERS: [[Field; 3]; 6] = {
        use Field::{Datacenter as D, Sequence as S, Worker as W};
        [
            [D, W, S],
            [D, S, W],
            [W, D, S],
            [W, S, D],
            [S, D, W],
            [S, W, D],
        ]
    };

    fn any_layout() -> impl Strategy<Value = Layout> {
        (
            1u8..=63,
            0u8..=20,
            0u8..=20,
            0u8..=22,
            1u64..=1000,
            0u64..=1 << 42,
        )
            .prop_filter_map("fits 64 bits", |(t, d, w, s, tick, epoch)| {
                let bits = Bits {
                    timestamp: t,
                    datacenter: d,
                    worker: w,
                    sequence: s,
                };
                Layout::new_u64(bits, tick, epoch).ok()
            })
    }

    proptest! {
        #[test]
        fn compose_then_decode_round_trips(layout in any_layout(), raw in any::<[u64; 4]>()) {
            let t = raw[0] & layout.max_timestamp();
            let d = raw[1] & layout.max_datacenter();
            let w = raw[2] & layout.max_worker();
            let s = raw[3] & layout.max_sequence();
            let id = layout.compose(t, Fields { datacenter: d, worker: w, sequence: s }).unwrap();
            let parts = layout.decode(id).unwrap();
            prop_assert_eq!((parts.timestamp, parts.datacenter, parts.worker, parts.sequence), (t, d, w, s));
            prop_assert_eq!(parts.unix_ms, layout.epoch_ms() + t * layout.tick_ms());
        }

        #[test]
        fn decode_then_compose_round_trips(layout in any_layout(), raw in any::<u64>()) {
            let id = Id::from_u64(raw & layout.max_id().as_u64());
            let p = layout.decode(id).unwrap();
            prop_assert_eq!(layout.compose(p.timestamp, p.fields()).unwrap(), id);
        }

        #[test]
        fn the_ids_of_an_instant_bound_every_id_of_its_tick(
            layout in any_layout(),
            raw in any::<u64>(),
            order in prop::sample::select(ORDERS.to_vec()),
        ) {
            let layout = layout.with_order(order).unwrap();
            let id = Id::from_u64(raw & layout.max_id().as_u64());
            let p = layout.decode(id).unwrap();
            let (first, last) = layout.ids_at(p.unix_ms).unwrap();
            prop_assert!(first <= id && id <= last);
            let (f, l) = (layout.decode(first).unwrap(), layout.decode(last).unwrap());
            prop_assert_eq!((f.timestamp, l.timestamp), (p.timestamp, p.timestamp));
            prop_assert_eq!((f.datacenter, f.worker, f.sequence), (0, 0, 0));
            prop_assert_eq!(
                (l.datacenter, l.worker, l.sequence),
                (layout.max_datacenter(), layout.max_worker(), layout.max_sequence())
            );
        }

        #[test]
        fn every_field_order_round_trips(raw in any::<u64>(), order in prop::sample::select(ORDERS.to_vec())) {
            let layout = Layout::TWITTER.with_order(order).unwrap();
            let id = Id::from_u64(raw >> 1);
            let p = layout.decode(id).unwrap();
            prop_assert_eq!(layout.compose(p.timestamp, p.fields()).unwrap(), id);
        }
    }
}
