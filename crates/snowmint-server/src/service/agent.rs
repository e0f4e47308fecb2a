//! What Twitter's Snowflake service checked before `get_id` issued: the caller's user agent,
//! and the worker it issues as.

use crate::{ApiError, AppState};

/// The rule, as Twitter's server wrote it (`([a-zA-Z][a-zA-Z\-0-9]*)`, matched whole).
pub const USER_AGENT_RULE: &str = "[a-zA-Z][a-zA-Z0-9-]*";

/// How many characters of a refused user agent its error quotes: enough to recognise it,
/// while a frame-sized one does not fill a log line.
const QUOTED_CHARS: usize = 64;

/// Checks a user agent against Twitter's rule: a letter, then letters, digits and dashes,
/// in ASCII. The bytes need not be UTF-8; those that are not break the rule.
///
/// # Errors
///
/// [`ApiError::BadRequest`] quoting the user agent (its first 64 characters, if longer,
/// with its length) and the rule.
pub fn user_agent(agent: &[u8]) -> Result<(), ApiError> {
    let valid = agent.first().is_some_and(u8::is_ascii_alphabetic)
        && agent
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-');
    if valid {
        return Ok(());
    }
    let text = String::from_utf8_lossy(agent);
    let quoted = if text.chars().count() > QUOTED_CHARS {
        let head: String = text.chars().take(QUOTED_CHARS).collect();
        format!("{head:?}... ({} bytes)", agent.len())
    } else {
        format!("{text:?}")
    };
    Err(ApiError::BadRequest(format!(
        "user agent {quoted} does not match {USER_AGENT_RULE}: a letter, then letters, digits and dashes"
    )))
}

/// The datacenter and worker ids this server issues as: those of the worker id it holds.
///
/// # Errors
///
/// [`ApiError::Unavailable`] when it holds none (acquiring one, or lost), with the reason.
pub fn worker(state: &AppState) -> Result<(u64, u64), ApiError> {
    match state.source.issuer() {
        Some(issuer) => Ok((issuer.generator().datacenter(), issuer.generator().worker())),
        None => Err(ApiError::Unavailable(format!(
            "no worker id is held: {}",
            state
                .source
                .readiness()
                .err()
                .unwrap_or_else(|| "acquiring a worker id".into())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(agent: &[u8]) -> String {
        user_agent(agent).unwrap_err().to_string()
    }

    #[test]
    fn a_letter_then_letters_digits_and_dashes() {
        for agent in [
            "a",
            "Z",
            "snowmint",
            "tweet-button-2",
            "a-",
            "A1-b2-C3",
            "x--9",
        ] {
            assert_eq!(user_agent(agent.as_bytes()), Ok(()), "{agent}");
        }
        for agent in [
            &b""[..],
            b"1abc",
            b"-abc",
            b"has space",
            b"under_score",
            b"dot.ted",
            b"slash/1.0",
            b"trailing\n",
            "caf\u{e9}".as_bytes(),
            b"nul\0",
            b"\xff\xfe",
        ] {
            assert!(user_agent(agent).is_err(), "{agent:?}");
        }
    }

    #[test]
    fn a_refusal_quotes_the_agent_and_the_rule() {
        assert_eq!(
            refusal(b"has space"),
            "user agent \"has space\" does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes"
        );
        assert_eq!(
            refusal(b""),
            "user agent \"\" does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes"
        );
        assert_eq!(
            refusal(b"bad\xffbyte"),
            "user agent \"bad\u{fffd}byte\" does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes"
        );
        let long = format!("{}_", "a".repeat(100));
        assert_eq!(
            refusal(long.as_bytes()),
            format!(
                "user agent \"{}\"... (101 bytes) does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes",
                "a".repeat(64)
            )
        );
    }
}
