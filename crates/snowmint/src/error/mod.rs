//! The core's errors, one type per kind of operation, so a caller matches only what the
//! operation it called can return:
//!
//! | operation                                             | error          |
//! |-------------------------------------------------------|----------------|
//! | parse text as an id ([`Id::parse_as`], encodings)     | [`ParseError`] |
//! | compose, decode, place an instant ([`Layout::decode`]) | [`RangeError`] |
//! | build a layout, look a preset up by name              | [`LayoutError`]|
//! | a layout chosen by name, tick and epoch ([`Layout::chosen`]) | [`LayoutChoiceError`] |
//! | build a generator ([`Builder::build`])                | [`BuildError`] |
//! | issue ids ([`Generator::next_id`], `next_batch`)      | [`IssueError`] |
//! | serials ([`serial`](crate::serial))                   | [`SerialError`](crate::SerialError) |
//!
//! Every message is lowercase, names the value that was refused and the limit it broke,
//! and says what failed at its own layer; a cause (a store's error) is the
//! [`source`](std::error::Error::source), never repeated in the message. [`Chain`] prints
//! an error with its causes. The text is part of the interface: the tests pin it.
//!
//! [`Id::parse_as`]: crate::Id::parse_as
//! [`Layout::decode`]: crate::Layout::decode
//! [`Layout::chosen`]: crate::Layout::chosen
//! [`Builder::build`]: crate::Builder::build
//! [`Generator::next_id`]: crate::Generator::next_id

use core::fmt;

mod build;
mod issue;
mod layout;
mod parse;
mod range;

pub use build::BuildError;
pub use issue::IssueError;
pub use layout::{LayoutChoiceError, LayoutError};
pub use parse::ParseError;
pub use range::RangeError;

/// Shows an error and its causes on one line, `what failed: why: root cause`, each once.
///
/// This is what the `snowmint` command prints and what the server logs and answers. A
/// cause whose text the message before it already ends with is not printed again: some
/// libraries print their cause and return it as the source too.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use snowmint::error::Chain;
/// use snowmint::{Generator, Layout, ManualClock, Store, StoreError};
///
/// struct Full;
/// impl Store for Full {
///     fn load(&self) -> Result<Option<u64>, StoreError> { Ok(None) }
///     fn reserve(&self, _: u64) -> Result<u64, StoreError> { Err(StoreError::new("disk full")) }
/// }
///
/// let clock = ManualClock::new(1_800_000_000_000);
/// let g = Generator::builder(Layout::TWITTER).clock(&clock).store(Arc::new(Full)).build()?;
/// let err = g.next_id().unwrap_err();
/// assert_eq!(err.to_string(), "cannot raise the high-water mark to 2027-01-15T08:00:01.000Z");
/// assert_eq!(
///     Chain(&err).to_string(),
///     "cannot raise the high-water mark to 2027-01-15T08:00:01.000Z: disk full"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        f.write_str(&said)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            if !said.ends_with(&text) {
                write!(f, ": {text}")?;
            }
            said = text;
            next = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its cause and returns it as the source too.
    #[derive(Debug)]
    struct Repeats(std::io::Error);

    impl fmt::Display for Repeats {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(&self.0, f)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_already_ends_with_is_said_once() {
        let err = Repeats(std::io::Error::other("connection refused"));
        assert_eq!(Chain(&err).to_string(), "connection refused");
        let store = crate::StoreError::new(err);
        assert_eq!(Chain(&store).to_string(), "connection refused");
    }

    #[test]
    fn causes_follow_the_message() {
        let err = crate::StoreError::new(std::io::Error::other("disk full"));
        let err = IssueError::Reserve {
            until_ms: 0,
            source: err,
        };
        assert_eq!(
            Chain(&err).to_string(),
            "cannot raise the high-water mark to 1970-01-01T00:00:00.000Z: disk full"
        );
    }
}
