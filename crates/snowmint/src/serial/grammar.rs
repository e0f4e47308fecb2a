//! Reading template text into pieces: braces, field names, options and widths, and
//! separators. [`Template::parse`](super::Template::parse) then checks the whole.

use super::{CheckDigit, SerialError};
use crate::Layout;

/// Digits of `{time}`: `yyyyMMddHHmmssSSS`.
pub(crate) const TIME_WIDTH: usize = 17;

/// The widest `{node}` or `{seq}`: any field of a 64-bit id is below 2^63, 19 digits.
pub(crate) const MAX_WIDTH: usize = 19;

/// One piece of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// A run of separators: the bytes `start..end` of the template's text.
    Literal {
        start: usize,
        end: usize,
    },
    Biz,
    Time,
    Node {
        width: usize,
    },
    Seq {
        width: usize,
    },
    Check(CheckDigit),
}

impl Piece {
    /// The field's name, `None` for a separator.
    pub(crate) fn name(self) -> Option<&'static str> {
        match self {
            Piece::Literal { .. } => None,
            Piece::Biz => Some("biz"),
            Piece::Time => Some("time"),
            Piece::Node { .. } => Some("node"),
            Piece::Seq { .. } => Some("seq"),
            Piece::Check(_) => Some("check"),
        }
    }
}

/// The characters a template may hold between fields. None is a letter or digit, so a
/// serial's fields and separators never run into each other.
pub(crate) const fn is_separator(ch: char) -> bool {
    matches!(ch, '-' | '_' | '.' | '/' | ' ')
}

/// Splits a template into pieces, checking braces, names, options and repeats.
pub(crate) fn scan(text: &str, layout: &Layout) -> Result<Vec<Piece>, SerialError> {
    let mut pieces = Vec::new();
    // The position and byte index of the `{` of the field being read.
    let mut open: Option<(usize, usize)> = None;
    let mut literal: Option<usize> = None;
    let push = |pieces: &mut Vec<Piece>, piece: Piece| {
        if same_field(pieces, piece) {
            return Err(SerialError::DuplicateField {
                field: piece.name().unwrap_or_default(),
            });
        }
        pieces.push(piece);
        Ok(())
    };
    for (position, (i, ch)) in text.char_indices().enumerate() {
        match (open, ch) {
            (None, '{') => {
                if let Some(start) = literal.take() {
                    pieces.push(Piece::Literal { start, end: i });
                }
                open = Some((position, i));
            }
            (None, '}') => return Err(SerialError::UnopenedField { position }),
            (None, ch) if is_separator(ch) => {
                literal.get_or_insert(i);
            }
            (None, ch) => return Err(SerialError::BadSeparator { ch, position }),
            (Some(_), '{') => return Err(SerialError::NestedField { position }),
            (Some((at, start)), '}') => {
                push(&mut pieces, field(&text[start + 1..i], at, layout)?)?;
                open = None;
            }
            (Some(_), _) => {}
        }
    }
    if let Some((position, _)) = open {
        return Err(SerialError::UnclosedField { position });
    }
    if let Some(start) = literal {
        pieces.push(Piece::Literal {
            start,
            end: text.len(),
        });
    }
    Ok(pieces)
}

/// Whether `pieces` already holds the field `piece` is, whatever its width or algorithm.
fn same_field(pieces: &[Piece], piece: Piece) -> bool {
    piece.name().is_some() && pieces.iter().any(|p| p.name() == piece.name())
}

/// One field, from the text between its braces.
fn field(spec: &str, position: usize, layout: &Layout) -> Result<Piece, SerialError> {
    let (name, option) = match spec.split_once(':') {
        Some((name, option)) => (name, Some(option)),
        None => (spec, None),
    };
    let no_option = |field: &'static str, piece: Piece| match option {
        Some(option) => Err(SerialError::NoOption {
            field,
            option: option.to_string(),
        }),
        None => Ok(piece),
    };
    match name {
        "biz" => no_option("biz", Piece::Biz),
        "time" => no_option("time", Piece::Time),
        "node" => {
            width("node", option, max_node(layout), layout).map(|width| Piece::Node { width })
        }
        "seq" => {
            width("seq", option, layout.max_sequence(), layout).map(|width| Piece::Seq { width })
        }
        "check" => match option {
            None => Ok(Piece::Check(CheckDigit::Luhn)),
            Some(option) => CheckDigit::by_name(option)
                .map(Piece::Check)
                .ok_or_else(|| SerialError::UnknownCheck {
                    name: option.to_string(),
                }),
        },
        _ => Err(SerialError::UnknownField {
            name: name.to_string(),
            position,
        }),
    }
}

/// The width of `{node}` or `{seq}`: as given, or what the layout's largest value needs.
fn width(
    field: &'static str,
    option: Option<&str>,
    max: u64,
    layout: &Layout,
) -> Result<usize, SerialError> {
    let needed = digits(max);
    let Some(option) = option else {
        return Ok(needed);
    };
    if option.is_empty() || !option.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SerialError::BadWidth {
            field,
            width: option.to_string(),
        });
    }
    // All digits: only a number too big for usize fails, and that is too wide anyway.
    let width = option.parse().unwrap_or(usize::MAX);
    if width > MAX_WIDTH {
        return Err(SerialError::TooWide { field, width });
    }
    if width < needed {
        return Err(SerialError::TooNarrow {
            field,
            width,
            layout: layout.name(),
            needed,
            max,
        });
    }
    Ok(width)
}

/// The largest `{node}`: datacenter and worker together, `datacenter << worker_bits | worker`.
pub(crate) fn max_node(layout: &Layout) -> u64 {
    layout.capacity().worker_ids - 1
}

/// Decimal digits of `n` (1 for 0).
pub(crate) const fn digits(n: u64) -> usize {
    match n.checked_ilog10() {
        Some(log) => log as usize + 1,
        None => 1,
    }
}
