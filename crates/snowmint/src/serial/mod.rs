//! Business serial numbers: readable, unique, sortable strings such as
//! `PAY2026112215304512300340007` for payments and orders.
//!
//! A serial is a *formatted view* of a generated [`Id`](crate::Id): a business code, the id's
//! time as `yyyyMMddHHmmssSSS`, its node (datacenter and worker) and its sequence, each
//! zero-padded to a width the layout implies, laid out by a [`Template`]. So:
//!
//! - serials are unique because ids are: every field but the business code has a fixed
//!   width, so the business code's length follows from the serial's, and the time, node and
//!   sequence together are the id;
//! - serials of one business code from one generator sort, as strings, in the order they
//!   were issued: the time leads the varying fields, is fixed-width, and is written in one
//!   fixed-offset [`Zone`], so string order is (time, node, sequence) order;
//! - a serial parses back into its business code, time, node, sequence and the very id it
//!   came from ([`Template::parse_serial`]).
//!
//! A fleet must share one layout, one template and one zone: the same id printed in two
//! zones gives two serials, and two templates can print different ids alike.
//!
//! # Template grammar
//!
//! ```text
//! template  = { field | separator }
//! field     = "{biz}" | "{time}" | "{node" [ ":" width ] "}" | "{seq" [ ":" width ] "}"
//!           | "{check" [ ":" ( "luhn" | "mod97" ) ] "}"
//! width     = digit { digit }                       (at least the layout's width, at most 19)
//! separator = "-" | "_" | "." | "/" | " "
//! ```
//!
//! | field     | text                                   | width                                   |
//! |-----------|----------------------------------------|-----------------------------------------|
//! | `{biz}`   | the business code, `[A-Z0-9]`          | 1 to 16, optional, at most once         |
//! | `{time}`  | `yyyyMMddHHmmssSSS` in the zone        | 17                                      |
//! | `{node}`  | `datacenter << worker_bits \| worker`  | digits of `worker_ids - 1` (4 for 1,024)|
//! | `{seq}`   | the sequence                           | digits of `max_sequence` (4 for 4,095)  |
//! | `{check}` | Luhn (default) or ISO 7064 mod 97-10   | 1 (`luhn`) or 2 (`mod97`)               |
//!
//! `{time}`, `{node}` and `{seq}` are required; `{time}` must come before `{node}` and
//! `{seq}` (so serials sort by time), and `{check}`, if present, must be the last field. The
//! check covers every field before it, with a letter counting as the two digits of its
//! value A=10 ... Z=35, as ISIN and IBAN do; separators are not covered. Separators hold no
//! letters or digits, so a serial always parses back one way. The default template is
//! [`Template::DEFAULT`], `{biz}{time}{node}{seq}`. A template's serials are at most
//! [`Template::MAX_SERIAL_LEN`] (64) characters, counting a 16-character business code, and
//! its text at most [`Template::MAX_TEXT_LEN`] (128) bytes.
//!
//! # Examples
//!
//! ```
//! use snowmint::serial::{BizCode, Template, Zone};
//! use snowmint::Layout;
//!
//! let layout = Layout::TWITTER;
//! let template = Template::new(&layout);
//! // 2026-11-22T15:30:45.123Z, datacenter 1, worker 2, sequence 7.
//! let id = layout.compose(layout.tick_at(1_795_361_445_123)?, snowmint::Fields { datacenter: 1, worker: 2, sequence: 7 })?;
//! let pay = BizCode::new("PAY")?;
//!
//! let serial = template.format(&pay, id, &Zone::UTC)?;
//! assert_eq!(serial, "PAY2026112215304512300340007");
//!
//! let parsed = template.parse_serial(&serial, &Zone::UTC)?;
//! assert_eq!(parsed.id, id);
//! assert_eq!(parsed.biz, Some(pay));
//! assert_eq!((parsed.datacenter, parsed.worker, parsed.sequence), (1, 2, 7));
//!
//! // A separated template with a check digit, in a fixed offset.
//! let t = Template::parse("{biz}-{time}-{node}-{seq}-{check}", &layout)?;
//! let zone: Zone = "+08:00".parse()?;
//! assert_eq!(t.format(&pay, id, &zone)?, "PAY-20261122233045123-0034-0007-4");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod biz;
mod check;
mod error;
mod format;
mod grammar;
mod parse;
mod template;
mod zone;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use biz::BizCode;
pub use check::CheckDigit;
pub use error::SerialError;
pub use format::Serial;
pub use parse::ParsedSerial;
pub use template::Template;
pub use zone::Zone;
