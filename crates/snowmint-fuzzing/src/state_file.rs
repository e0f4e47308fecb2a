//! The line of a state directory's mark file, `<ms>` or `<ms> <clock mode>`: reading it
//! never panics; what it accepts writes back to a line that reads the same; what it refuses
//! is an error of one line that says what was found.

use snowmint_lease::mark;

/// Feeds the bytes as they are to `mark::decode_line`.
pub fn check(bytes: &[u8]) {
    match mark::decode_line(bytes) {
        Ok((ms, mode)) => {
            let line = mark::encode_line(ms, mode);
            assert_eq!(
                mark::decode_line(line.as_bytes()),
                Ok((ms, mode)),
                "{line:?}"
            );
            // The digits are the registries' format too.
            let digits = line.split_whitespace().next().unwrap();
            assert_eq!(mark::decode(digits.as_bytes()), Ok(ms));
        }
        Err(corrupt) => {
            let message = corrupt.to_string();
            assert!(!message.contains('\n'), "{message:?}");
            assert!(!corrupt.found.is_empty());
            if bytes.is_empty() {
                assert_eq!(corrupt.found, "an empty file");
            }
        }
    }
}
