//! A high-water mark as a registry stores it (a Redis hash field, an etcd key, a ZooKeeper
//! node: a corrupt one there is input too). Reading it never panics; it accepts exactly
//! plain decimal digits that fit in 64 bits; what it accepts encodes back to the same digits
//! (leading zeros aside); what it refuses is quoted in the error, on one line.

use snowmint_lease::mark;

/// How much of a corrupt mark the error quotes.
const QUOTED_BYTES: usize = 40;

/// Feeds the bytes as they are to `mark::decode`.
pub fn check(bytes: &[u8]) {
    let digits = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit);
    match mark::decode(bytes) {
        Ok(ms) => {
            assert!(digits, "accepted {bytes:?}");
            let encoded = mark::encode(ms);
            let significant = std::str::from_utf8(bytes).unwrap().trim_start_matches('0');
            let expected = if significant.is_empty() {
                "0"
            } else {
                significant
            };
            assert_eq!(encoded, expected);
            assert_eq!(mark::decode(encoded.as_bytes()), Ok(ms));
        }
        Err(corrupt) => {
            let message = corrupt.to_string();
            assert!(!message.contains('\n'), "{message:?}");
            if bytes.is_empty() {
                assert_eq!(corrupt.found, "nothing");
            } else {
                let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED_BYTES)]);
                assert!(
                    corrupt.found.starts_with(&format!("{shown:?}")),
                    "{message}"
                );
            }
            if digits {
                // Only a value past 64 bits is refused among plain digits.
                assert!(message.contains("does not fit in 64 bits"), "{message}");
            }
        }
    }
}
