//! Writing serials: an id decoded with the template's layout, each field zero-padded, the
//! time in the zone, and the check computed on the way.

use core::fmt;

use super::check::Checksum;
use super::grammar::{Piece, TIME_WIDTH};
use super::{BizCode, SerialError, Template, Zone};
use crate::Id;

/// One serial, ready to write: an adapter that implements [`Display`](fmt::Display), made
/// by [`Template::serial`]. Writing it allocates nothing.
///
/// # Examples
///
/// ```
/// use snowmint::serial::{BizCode, Template, Zone};
/// use snowmint::{Id, Layout};
///
/// let template = Template::new(&Layout::TWITTER);
/// let serial = template.serial(&BizCode::new("ORD")?, Id::from_u64(1 << 22 | 5), &Zone::UTC)?;
/// // The layout's epoch plus one tick, node 0, sequence 5.
/// assert_eq!(serial.to_string(), "ORD2010110401425465800000005");
/// # Ok::<(), snowmint::serial::SerialError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Serial<'t> {
    template: &'t Template,
    biz: BizCode,
    time: [u8; TIME_WIDTH],
    node: u64,
    sequence: u64,
}

impl Template {
    /// Decodes `id` with the template's layout and prepares its serial, to write with
    /// `Display` (or [`Template::format`] / [`Template::write_to`]).
    ///
    /// `biz` is written where the template has `{biz}`, and ignored if it has none.
    ///
    /// # Errors
    ///
    /// The id sets bits the layout never uses, or its time is past the year 9999.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::fmt::Write;
    /// use snowmint::serial::{BizCode, Template, Zone};
    /// use snowmint::{Id, Layout};
    ///
    /// let template = Template::new(&Layout::TWITTER);
    /// let mut out = String::new();
    /// writeln!(out, "order {}", template.serial(&BizCode::new("ORD")?, Id::from_u64(0), &Zone::UTC)?)?;
    /// assert_eq!(out, "order ORD2010110401425465700000000\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serial(&self, biz: &BizCode, id: Id, zone: &Zone) -> Result<Serial<'_>, SerialError> {
        let layout = self.layout();
        let parts = layout.decode(id)?;
        Ok(Serial {
            template: self,
            biz: *biz,
            time: time_digits(parts.unix_ms, zone)?,
            node: parts.datacenter << layout.bits().worker | parts.worker,
            sequence: parts.sequence,
        })
    }

    /// The serial of `id` for business code `biz`, its time written in `zone`.
    ///
    /// # Errors
    ///
    /// As [`Template::serial`].
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::{BizCode, Template, Zone};
    /// use snowmint::{Generator, Layout};
    ///
    /// let generator = Generator::builder(Layout::TWITTER).datacenter(1).worker(2).build()?;
    /// let template = Template::new(generator.layout());
    /// let pay = BizCode::new("PAY")?;
    /// let a = template.format(&pay, generator.next_id()?, &Zone::UTC)?;
    /// let b = template.format(&pay, generator.next_id()?, &Zone::UTC)?;
    /// assert!(a < b);
    /// assert_eq!(&a[20..24], "0034"); // node 1 << 5 | 2
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn format(&self, biz: &BizCode, id: Id, zone: &Zone) -> Result<String, SerialError> {
        let mut out = String::with_capacity(self.serial_len(biz));
        self.write_to(&mut out, biz, id, zone)?;
        Ok(out)
    }

    /// Writes the serial of `id` into `out`, for callers that reuse a buffer.
    ///
    /// # Errors
    ///
    /// As [`Template::serial`], or [`SerialError::Write`] if `out` reports an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::{BizCode, Template, Zone};
    /// use snowmint::{Id, Layout};
    ///
    /// let template = Template::parse("{biz}.{time}.{node}.{seq}", &Layout::TWITTER)?;
    /// let mut line = String::from("serial: ");
    /// template.write_to(&mut line, &BizCode::new("A1")?, Id::from_u64(0), &Zone::UTC)?;
    /// assert_eq!(line, "serial: A1.20101104014254657.0000.0000");
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn write_to<W: fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        biz: &BizCode,
        id: Id,
        zone: &Zone,
    ) -> Result<(), SerialError> {
        self.serial(biz, id, zone)?
            .emit(out)
            .map_err(|_| SerialError::Write)
    }
}

impl Serial<'_> {
    fn emit<W: fmt::Write + ?Sized>(&self, out: &mut W) -> fmt::Result {
        let mut sum = Checksum::default();
        let mut buf = [0u8; 19];
        for piece in &self.template.pieces {
            let text: &[u8] = match *piece {
                Piece::Literal { start, end } => {
                    out.write_str(ascii(self.template.literal(start, end)))?;
                    continue;
                }
                Piece::Biz => self.biz.as_bytes(),
                Piece::Time => &self.time,
                Piece::Node { width } => pad(self.node, &mut buf[..width]),
                Piece::Seq { width } => pad(self.sequence, &mut buf[..width]),
                Piece::Check(check) => pad(u64::from(sum.value(check)), &mut buf[..check.width()]),
            };
            sum.push_all(text);
            out.write_str(ascii(text))?;
        }
        Ok(())
    }
}

impl fmt::Display for Serial<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.emit(f)
    }
}

/// Text known to be ASCII: separators, business codes and digits.
fn ascii(bytes: &[u8]) -> &str {
    core::str::from_utf8(bytes).unwrap_or_default()
}

/// Writes `n` zero-padded across all of `buf`, which the template made wide enough.
fn pad(mut n: u64, buf: &mut [u8]) -> &[u8] {
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
    buf
}

/// `yyyyMMddHHmmssSSS` for an instant, in `zone`.
fn time_digits(unix_ms: u64, zone: &Zone) -> Result<[u8; TIME_WIDTH], SerialError> {
    let ts = i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .ok_or(SerialError::TimeNotWritable { unix_ms })?;
    // jiff's range ends late enough in 9999 that every offset up to a day keeps 4 digits
    // of year, and an instant after 1970 stays after the year 1969.
    let dt = zone.offset().to_datetime(ts);
    let mut out = [0u8; TIME_WIDTH];
    let fields = [
        (dt.year(), 4),
        (dt.month().into(), 2),
        (dt.day().into(), 2),
        (dt.hour().into(), 2),
        (dt.minute().into(), 2),
        (dt.second().into(), 2),
        (dt.millisecond(), 3),
    ];
    let mut at = 0;
    for (value, width) in fields {
        pad(value.unsigned_abs().into(), &mut out[at..at + width]);
        at += width;
    }
    Ok(out)
}
