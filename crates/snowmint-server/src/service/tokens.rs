//! The bearer tokens the API takes: one given as a setting, or a file of them, one per
//! line, read again when it changes so that tokens rotate without a restart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use subtle::ConstantTimeEq;

use crate::reload::Stamp;

/// Where the tokens come from.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// One token, from `auth_token`.
    Given(String),
    /// A file of tokens, from `auth_token_file`.
    File(PathBuf),
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Given(_) => f.write_str("Given(<hidden>)"),
            TokenSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// The tokens valid now. A request is let in when its token equals any of them.
pub struct Tokens {
    valid: ArcSwap<Vec<Box<[u8]>>>,
    file: Option<Watched>,
}

/// The file the tokens were read from, and what it looked like then.
struct Watched {
    path: PathBuf,
    seen: Mutex<Option<Stamp>>,
}

impl Tokens {
    /// The tokens `source` gives.
    ///
    /// # Errors
    ///
    /// The file cannot be read or holds no token, or a token cannot go in a header: what
    /// is wrong, to follow the setting and its value (the line, never a token).
    pub fn load(source: &TokenSource) -> Result<Tokens, String> {
        match source {
            TokenSource::Given(token) => {
                check(token).map_err(str::to_string)?;
                Ok(Tokens {
                    valid: ArcSwap::from_pointee(vec![token.as_bytes().into()]),
                    file: None,
                })
            }
            TokenSource::File(path) => {
                let stamp = Stamp::of(path);
                let tokens = read(path)?;
                Ok(Tokens {
                    valid: ArcSwap::from_pointee(tokens),
                    file: Some(Watched {
                        path: path.clone(),
                        seen: Mutex::new(stamp),
                    }),
                })
            }
        }
    }

    /// Whether an `Authorization` header value carries a valid token. Every token is
    /// compared in full, in constant time, whichever matches: the answer's timing tells
    /// nothing about the tokens but their number.
    #[must_use]
    pub fn admit(&self, authorization: Option<&[u8]>) -> bool {
        let Some(given) = authorization.and_then(bearer) else {
            return false;
        };
        let valid = self.valid.load();
        valid
            .iter()
            .fold(subtle::Choice::from(0), |found, token| {
                found | given.ct_eq(token)
            })
            .into()
    }

    /// How many tokens are valid now.
    #[must_use]
    pub fn count(&self) -> usize {
        self.valid.load().len()
    }

    /// The file the tokens come from, if they come from one.
    #[must_use]
    pub fn file(&self) -> Option<&Path> {
        self.file.as_ref().map(|watched| watched.path.as_path())
    }

    /// Reads the file again if it changed since it was last read (or always, if `force`,
    /// as on SIGHUP). A file that cannot be read or holds no valid token changes nothing:
    /// the tokens read before stay valid.
    ///
    /// Returns `Ok(Some(n))` when `n` tokens were read, `Ok(None)` when there was nothing
    /// to read (no file, or no change).
    ///
    /// # Errors
    ///
    /// What is wrong with the file, naming it (and the line), never a token.
    pub fn reload(&self, force: bool) -> Result<Option<usize>, String> {
        let Some(watched) = &self.file else {
            return Ok(None);
        };
        let now = Stamp::of(&watched.path);
        let mut seen = watched.seen.lock().unwrap_or_else(|e| e.into_inner());
        if !force && now.is_some() && *seen == now {
            return Ok(None);
        }
        // Recorded before reading, so a broken file is reported once, not every second.
        *seen = now;
        let tokens = read(&watched.path)
            .map_err(|why| format!("auth_token_file {}: {why}", watched.path.display()))?;
        let n = tokens.len();
        self.valid.store(Arc::new(tokens));
        Ok(Some(n))
    }
}

/// Two sets of tokens are the same when they come from the same place and hold the same
/// tokens (for comparing configurations; never on a request's path).
impl PartialEq for Tokens {
    fn eq(&self, other: &Tokens) -> bool {
        self.file() == other.file() && *self.valid.load() == *other.valid.load()
    }
}

impl Eq for Tokens {}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.count())
            .field("file", &self.file())
            .finish_non_exhaustive()
    }
}

/// The token of an `Authorization` value: after the scheme `Bearer`, which is
/// case-insensitive, and without the spaces around a field's value, which HTTP/1.1 drops
/// and HTTP/2 may carry.
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| token.trim_ascii_start())
}

/// The tokens of the file at `path`: its lines, without surrounding spaces, but the blank
/// ones and those starting with `#`.
fn read(path: &Path) -> Result<Vec<Box<[u8]>>, String> {
    let text = snowmint_lease::read_small_text(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut tokens = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let token = line.trim();
        if token.is_empty() || token.starts_with('#') {
            continue;
        }
        check(token).map_err(|why| format!("the token on line {} {why}", n + 1))?;
        tokens.push(token.as_bytes().into());
    }
    if tokens.is_empty() {
        return Err(
            "holds no token (one per line; blank lines and lines starting with # are skipped)"
                .to_string(),
        );
    }
    Ok(tokens)
}

/// Whether `token` can go in an `Authorization` header as clients send it.
fn check(token: &str) -> Result<(), &'static str> {
    if token.trim().is_empty() {
        return Err("must not be empty");
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("cannot go in a header: use visible ASCII characters only, no spaces");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let tokens = Tokens::load(&TokenSource::Given("s3cret".into())).unwrap();
        // The scheme is case-insensitive, and a field's value has no surrounding spaces.
        for given in [
            &b"Bearer s3cret"[..],
            b"bearer s3cret",
            b"BEARER s3cret",
            b"Bearer s3cret ",
            b" Bearer  s3cret\t",
        ] {
            assert!(tokens.admit(Some(given)), "{given:?}");
        }
        for given in [
            &b"Bearer s3cre"[..],
            b"Bearer S3CRET",
            b"Bearer s3cret x",
            b"Bearers3cret",
            b"Basic s3cret",
            b"s3cret",
            b"Bearer ",
            b"",
            b"Bearer s3cret\xff",
        ] {
            assert!(!tokens.admit(Some(given)), "{given:?}");
        }
        assert!(!tokens.admit(None));
    }

    #[test]
    fn every_token_of_the_file_is_valid_and_a_change_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "# rotating\nold-token\n\n  new-token  \n").unwrap();
        let tokens = Tokens::load(&TokenSource::File(path.clone())).unwrap();
        assert_eq!(tokens.count(), 2);
        assert!(tokens.admit(Some(&bearer("old-token"))));
        assert!(tokens.admit(Some(&bearer("new-token"))));
        assert!(!tokens.admit(Some(&bearer("new-toke"))));
        assert!(!tokens.admit(Some(b"new-token")));
        assert!(!tokens.admit(None));
        assert_eq!(tokens.reload(false), Ok(None), "nothing changed");

        // The old token leaves; written beside, then moved over, as a secret is.
        let next = dir.path().join("tokens.next");
        std::fs::write(&next, "new-token\n").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(tokens.reload(false), Ok(Some(1)));
        assert!(!tokens.admit(Some(&bearer("old-token"))));
        assert!(tokens.admit(Some(&bearer("new-token"))));
    }

    #[test]
    fn a_broken_file_keeps_the_tokens_read_before_and_never_shows_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "s3cret\n").unwrap();
        let tokens = Tokens::load(&TokenSource::File(path.clone())).unwrap();

        std::fs::write(&path, "# none left\n\n").unwrap();
        let err = tokens.reload(false).unwrap_err();
        assert_eq!(
            err,
            format!(
                "auth_token_file {}: holds no token (one per line; blank lines and lines starting with # are skipped)",
                path.display()
            )
        );
        assert!(tokens.admit(Some(&bearer("s3cret"))), "the old token stays");
        assert_eq!(tokens.reload(false), Ok(None), "reported once");

        std::fs::write(&path, "ok-token\ntwo words\n").unwrap();
        let err = tokens.reload(true).unwrap_err();
        assert!(err.ends_with("the token on line 2 cannot go in a header: use visible ASCII characters only, no spaces"), "{err}");
        assert!(!err.contains("two words") && !err.contains("ok-token"));

        std::fs::remove_file(&path).unwrap();
        assert!(tokens.reload(false).unwrap_err().contains("cannot read it"));
        assert!(tokens.admit(Some(&bearer("s3cret"))));
        assert!(!format!("{tokens:?}").contains("s3cret"));
        assert!(!format!("{:?}", TokenSource::Given("s3cret".into())).contains("s3cret"));
    }
}
