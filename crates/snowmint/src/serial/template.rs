//! Templates: which fields a serial has, in which order, how wide, with which separators.
//! Validated once, when configured, against the layout whose ids they format.

use core::fmt;
use core::ops::RangeInclusive;

use super::grammar::{MAX_WIDTH, Piece, TIME_WIDTH, digits, max_node, scan};
use super::{BizCode, CheckDigit, SerialError};
use crate::Layout;

/// How serials look: named fields and separators, validated against a [`Layout`]. See the
/// [module documentation](super) for the grammar.
///
/// # Examples
///
/// ```
/// use snowmint::serial::Template;
/// use snowmint::Layout;
///
/// let t = Template::parse("{biz}-{time}-{node}-{seq}{check:mod97}", &Layout::TWITTER)?;
/// assert_eq!(t.len_range(), 31..=46); // 30, plus 1 to 16 characters of business code
/// assert_eq!(
///     Template::parse("{biz}{time}{seq}", &Layout::TWITTER).unwrap_err().to_string(),
///     "template has no {node} field: a serial needs time, node and seq to be unique"
/// );
/// # Ok::<(), snowmint::serial::SerialError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    layout: Layout,
    pub(crate) pieces: Vec<Piece>,
    /// Characters of a serial apart from the business code.
    pub(crate) fixed_len: usize,
    has_biz: bool,
    check: Option<CheckDigit>,
}

impl Template {
    /// The default template: business code, time, node, sequence, with no separators.
    pub const DEFAULT: &'static str = "{biz}{time}{node}{seq}";

    /// The longest serial a template may make, in characters: the width order-number
    /// columns and payment gateways' merchant order numbers commonly allow. It also bounds
    /// what one serial costs a server that makes thousands per request. The default
    /// template's serials fit it for any layout (node and sequence share at most 63 bits,
    /// so 20 digits): 41 characters for Twitter's.
    pub const MAX_SERIAL_LEN: usize = 64;

    /// The longest template text, in bytes, refused before it is read. Every template whose
    /// serials fit [`Template::MAX_SERIAL_LEN`] is at most 77 bytes long (`{time}` is 11
    /// bytes shorter than what it writes, and the other fields at most 24 longer in all),
    /// unless its widths carry leading zeros.
    pub const MAX_TEXT_LEN: usize = 128;

    /// The digits `{time}` takes: `yyyyMMddHHmmssSSS`.
    pub const TIME_WIDTH: usize = TIME_WIDTH;

    /// The widest `{node}` or `{seq}` a template may ask for: any field of a 64-bit id is
    /// below 2^63, 19 digits.
    pub const MAX_WIDTH: usize = MAX_WIDTH;

    /// The digits `{node}` and `{seq}` take for `layout` when the template gives no width:
    /// what its largest node (datacenter and worker) and sequence need. A width given must
    /// be at least these, and at most 19.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Template;
    /// use snowmint::Layout;
    ///
    /// assert_eq!(Template::widths(&Layout::TWITTER), (4, 4));
    /// ```
    #[must_use]
    pub fn widths(layout: &Layout) -> (usize, usize) {
        (digits(max_node(layout)), digits(layout.max_sequence()))
    }

    /// The default template, [`Template::DEFAULT`], for `layout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Template;
    /// use snowmint::Layout;
    ///
    /// // 17 digits of time, 4 of node (1,024 worker ids), 4 of sequence (4,096 a tick).
    /// assert_eq!(Template::new(&Layout::TWITTER).len_range(), 26..=41);
    /// ```
    #[must_use]
    pub fn new(layout: &Layout) -> Template {
        let (node, seq) = Template::widths(layout);
        let pieces = vec![
            Piece::Biz,
            Piece::Time,
            Piece::Node { width: node },
            Piece::Seq { width: seq },
        ];
        Template::assemble(Self::DEFAULT, layout, pieces)
    }

    /// Parses and validates a template for the ids of `layout`.
    ///
    /// # Errors
    ///
    /// Unbalanced or nested braces; an unknown, repeated or missing field (`{time}`,
    /// `{node}` and `{seq}` are required); a separator other than `- _ . /` or space; a bad
    /// option or a width too narrow for the layout; `{node}` or `{seq}` before `{time}`; a
    /// field after `{check}`; a text longer than [`Template::MAX_TEXT_LEN`] bytes, or
    /// serials that could be longer than [`Template::MAX_SERIAL_LEN`] characters. Each
    /// message names the field, the character or the limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Template;
    /// use snowmint::Layout;
    ///
    /// let t = Template::parse("{biz}/{time}/{node:5}/{seq}", &Layout::TWITTER)?;
    /// assert_eq!(t.to_string(), "{biz}/{time}/{node:5}/{seq}");
    /// let err = Template::parse("{biz}#{time}{node}{seq}", &Layout::TWITTER).unwrap_err();
    /// assert!(err.to_string().starts_with("template has '#' at position 5 outside a field"));
    /// let err = Template::parse("{biz}{time}{node:19}{seq:19}", &Layout::TWITTER).unwrap_err();
    /// assert_eq!(err.to_string(), "template makes serials of up to 71 characters, more than the 64 allowed");
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn parse(text: &str, layout: &Layout) -> Result<Template, SerialError> {
        if text.len() > Self::MAX_TEXT_LEN {
            return Err(SerialError::TemplateTooLong {
                len: text.len(),
                max: Self::MAX_TEXT_LEN,
            });
        }
        let pieces = scan(text, layout)?;
        for field in ["time", "node", "seq"] {
            if !pieces.iter().any(|p| p.name() == Some(field)) {
                return Err(SerialError::MissingField { field });
            }
        }
        let first_varying = pieces
            .iter()
            .find(|p| matches!(p, Piece::Time | Piece::Node { .. } | Piece::Seq { .. }));
        if let Some(&piece @ (Piece::Node { .. } | Piece::Seq { .. })) = first_varying {
            return Err(SerialError::TimeNotFirst {
                field: piece.name().unwrap_or_default(),
            });
        }
        if let Some(at) = pieces.iter().position(|p| matches!(p, Piece::Check(_)))
            && let Some(after) = pieces[at + 1..].iter().find_map(|p| p.name())
        {
            return Err(SerialError::CheckNotLast { field: after });
        }
        let template = Template::assemble(text, layout, pieces);
        let len = *template.len_range().end();
        if len > Self::MAX_SERIAL_LEN {
            return Err(SerialError::SerialTooLong {
                len,
                max: Self::MAX_SERIAL_LEN,
            });
        }
        Ok(template)
    }

    fn assemble(text: &str, layout: &Layout, pieces: Vec<Piece>) -> Template {
        let fixed_len = pieces
            .iter()
            .map(|p| match *p {
                Piece::Literal { start, end } => end - start,
                Piece::Biz => 0,
                Piece::Time => TIME_WIDTH,
                Piece::Node { width } | Piece::Seq { width } => width,
                Piece::Check(check) => check.width(),
            })
            .sum();
        let check = pieces.iter().find_map(|p| match p {
            Piece::Check(check) => Some(*check),
            _ => None,
        });
        Template {
            text: text.to_string(),
            layout: *layout,
            has_biz: pieces.contains(&Piece::Biz),
            pieces,
            fixed_len,
            check,
        }
    }

    /// The layout whose ids the template formats and parses.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The template's text, as it was given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether serials carry the business code (`{biz}`). Without it, the code given to
    /// [`Template::format`] is not written, and parsing returns none.
    #[must_use]
    pub fn has_biz(&self) -> bool {
        self.has_biz
    }

    /// The check digit algorithm, if the template has `{check}`.
    #[must_use]
    pub fn check(&self) -> Option<CheckDigit> {
        self.check
    }

    /// How many characters a serial of this template has: one length without `{biz}`, and
    /// one for each business code length (1 to 16) with it.
    #[must_use]
    pub fn len_range(&self) -> RangeInclusive<usize> {
        if self.has_biz {
            self.fixed_len + 1..=self.fixed_len + BizCode::MAX_LEN
        } else {
            self.fixed_len..=self.fixed_len
        }
    }

    /// How many characters the serials of this template have for business code `biz`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::{BizCode, Template};
    /// use snowmint::Layout;
    ///
    /// let t = Template::new(&Layout::TWITTER);
    /// assert_eq!(t.serial_len(&BizCode::new("PAY")?), 28);
    /// let t = Template::parse("{time}{node}{seq}", &Layout::TWITTER)?;
    /// assert_eq!(t.serial_len(&BizCode::new("PAY")?), 25); // no {biz}: not written
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    #[must_use]
    pub fn serial_len(&self, biz: &BizCode) -> usize {
        if self.has_biz {
            self.fixed_len + biz.len()
        } else {
            self.fixed_len
        }
    }

    /// Separator bytes of a literal piece.
    pub(crate) fn literal(&self, start: usize, end: usize) -> &[u8] {
        &self.text.as_bytes()[start..end]
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
