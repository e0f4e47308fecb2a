//! Vectors, error texts and round trips of every encoding.
use proptest::prelude::*;

use super::*;

fn encode(encoding: Encoding, value: u64) -> String {
    encoding.encode(value, &mut [0; MAX_LEN]).to_owned()
}

fn error_text(encoding: Encoding, text: &str) -> String {
    match encoding.decode(text) {
        Ok(value) => panic!("{text:?} decoded as {encoding} to {value}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn base32_matches_tsid() {
    let vectors = [
        (38_352_658_567_418_867, "01221H8Q1MMZK"),
        (38_390_726_480_144_748, "0123456789ABC"),
        (u64::MAX, "FZZZZZZZZZZZZ"),
        (10, "000000000000A"),
        (0, "0000000000000"),
    ];
    for (value, text) in vectors {
        assert_eq!(encode(Encoding::Base32, value), text);
        assert_eq!(Encoding::Base32.decode(text), Ok(value));
    }
}

#[test]
fn encodes_the_edges() {
    let vectors = [
        (Encoding::Decimal, 0, "0"),
        (Encoding::Decimal, 9, "9"),
        (Encoding::Decimal, 10, "10"),
        (Encoding::Decimal, 100, "100"),
        (Encoding::Decimal, u64::MAX, "18446744073709551615"),
        (Encoding::Hex, 0, "0x0000000000000000"),
        (Encoding::Hex, u64::MAX, "0xffffffffffffffff"),
        (Encoding::Base62, 0, "00000000000"),
        (Encoding::Base62, 61, "0000000000z"),
        (Encoding::Base62, u64::MAX, "LygHa16AHYF"),
    ];
    for (encoding, value, text) in vectors {
        assert_eq!(encode(encoding, value), text, "{encoding} of {value}");
        assert_eq!(encoding.decode(text), Ok(value), "{encoding} {text}");
    }
}

#[test]
fn parsing_is_lenient_where_documented() {
    assert_eq!(Encoding::Hex.decode("0XFF"), Ok(255));
    assert_eq!(Encoding::Hex.decode("Ff"), Ok(255));
    assert_eq!(Encoding::Hex.decode("0x00000000000000ff"), Ok(255));
    assert_eq!(
        Encoding::Base32.decode("iIlLoO"),
        Encoding::Base32.decode("111100")
    );
    assert_eq!(
        Encoding::Base32.decode("01221h8q1mmzk"),
        Ok(38_352_658_567_418_867)
    );
    assert_eq!(Encoding::Decimal.decode("00000000000000000042"), Ok(42));
    assert_eq!(Encoding::Base62.decode("a"), Ok(36));
    assert_eq!(Encoding::Base62.decode("A"), Ok(10));
}

#[test]
fn error_messages() {
    let cases = [
        (Encoding::Decimal, "", "empty input: expected an id"),
        (Encoding::Hex, "", "empty input: expected an id"),
        (Encoding::Hex, "0x", "empty input: expected an id"),
        (Encoding::Base32, "", "empty input: expected an id"),
        (Encoding::Base62, "", "empty input: expected an id"),
        (
            Encoding::Base32,
            "012U",
            "invalid character 'U' at position 3 in base32 id",
        ),
        (
            Encoding::Base32,
            "G000000000000",
            "base32 id does not fit in 64 bits",
        ),
        (
            Encoding::Base32,
            "00000000000000",
            "base32 id has 14 characters, more than the 13 a 64-bit id takes",
        ),
        (
            Encoding::Hex,
            "00000000000000000",
            "hex id has 17 characters, more than the 16 a 64-bit id takes",
        ),
        (
            Encoding::Hex,
            "0x00000000000000000",
            "hex id has 17 characters, more than the 16 a 64-bit id takes",
        ),
        (
            Encoding::Hex,
            "0x12g",
            "invalid character 'g' at position 4 in hex id",
        ),
        (
            Encoding::Hex,
            "0x0x1",
            "invalid character 'x' at position 3 in hex id",
        ),
        (
            Encoding::Decimal,
            "18446744073709551616",
            "decimal id does not fit in 64 bits",
        ),
        (
            Encoding::Decimal,
            "123456789012345678901",
            "decimal id has 21 characters, more than the 20 a 64-bit id takes",
        ),
        (
            Encoding::Decimal,
            "-1",
            "invalid character '-' at position 0 in decimal id",
        ),
        (
            Encoding::Decimal,
            " 1",
            "invalid character ' ' at position 0 in decimal id",
        ),
        (
            Encoding::Base62,
            "LygHa16AHYG",
            "base62 id does not fit in 64 bits",
        ),
        (
            Encoding::Base62,
            "zzzzzzzzzzzz",
            "base62 id has 12 characters, more than the 11 a 64-bit id takes",
        ),
        (
            Encoding::Base62,
            "abc_",
            "invalid character '_' at position 3 in base62 id",
        ),
        // Positions count characters, not bytes: 'é' takes two bytes.
        (
            Encoding::Base32,
            "éé",
            "invalid character 'é' at position 0 in base32 id",
        ),
        (
            Encoding::Decimal,
            "1é2✓",
            "invalid character 'é' at position 1 in decimal id",
        ),
        (
            Encoding::Base62,
            "ab✓",
            "invalid character '✓' at position 2 in base62 id",
        ),
        // A bad character outranks the length, and the length outranks an overflow.
        (
            Encoding::Decimal,
            "99999999999999999999999x",
            "invalid character 'x' at position 23 in decimal id",
        ),
        (
            Encoding::Base32,
            "ZZZZZZZZZZZZZZ",
            "base32 id has 14 characters, more than the 13 a 64-bit id takes",
        ),
    ];
    for (encoding, text, message) in cases {
        assert_eq!(error_text(encoding, text), message, "{encoding} {text:?}");
    }
}

#[test]
fn errors_are_structured() {
    assert_eq!(
        Encoding::Base32.decode("012U"),
        Err(ParseError::InvalidChar {
            encoding: Encoding::Base32,
            ch: 'U',
            position: 3
        })
    );
    assert_eq!(
        Encoding::Hex.decode("00000000000000000"),
        Err(ParseError::TooLong {
            encoding: Encoding::Hex,
            len: 17,
            max: 16
        })
    );
    assert_eq!(
        Encoding::Base32.decode("G000000000000"),
        Err(ParseError::Overflow {
            encoding: Encoding::Base32
        })
    );
    assert_eq!(Encoding::Base62.decode(""), Err(ParseError::Empty));
}

#[test]
fn names_round_trip() {
    for encoding in Encoding::ALL {
        assert_eq!(encoding.to_string(), encoding.name());
        assert_eq!(encoding.name().parse(), Ok(encoding));
        assert_eq!(encoding.name().to_uppercase().parse(), Ok(encoding));
        let mut buf = [0; MAX_LEN];
        assert!(encoding.encode(u64::MAX, &mut buf).len() == encoding.written_len());
    }
    assert_eq!("DEC".parse(), Ok(Encoding::Decimal));
    assert_eq!("b32".parse(), Ok(Encoding::Base32));
    assert_eq!("B62".parse(), Ok(Encoding::Base62));
    assert_eq!("BIN".parse(), Ok(Encoding::Binary));
    assert_eq!(
        "x".parse::<Encoding>(),
        Err(
            r#"unknown encoding "x": expected one of decimal, hex, base32, base62, binary"#
                .to_owned()
        )
    );
}

/// What an encoding says of itself is what it does: the table of digits is exactly the
/// characters that decode on their own, and the alphabet is what encoding writes.
#[test]
fn the_description_is_the_behaviour() {
    for encoding in Encoding::ALL {
        let alphabet: Vec<char> = encoding.alphabet().chars().collect();
        for (value, &ch) in alphabet.iter().enumerate() {
            assert_eq!(encoding.digit(ch), Some(value as u8), "{encoding} {ch:?}");
        }
        let radix = alphabet.len() as u64;
        let written = encode(encoding, radix - 1);
        assert_eq!(
            written.chars().last(),
            alphabet.last().copied(),
            "{encoding}"
        );
        let table: Vec<(char, u8)> = encoding.digits().collect();
        // Every character of the first planes, and some beyond: the table and decode agree.
        let decoded: Vec<(char, u8)> = (0..0x3000)
            .chain(0x1_F600..0x1_F650)
            .filter_map(char::from_u32)
            .filter_map(|ch| {
                let value = encoding.decode(&ch.to_string()).ok()?;
                Some((ch, u8::try_from(value).unwrap()))
            })
            .collect();
        assert_eq!(table, decoded, "{encoding}");
        // The other case reads the same exactly where the encoding says it ignores case.
        let letters: Vec<char> = alphabet
            .iter()
            .copied()
            .filter(char::is_ascii_alphabetic)
            .collect();
        let folds = !letters.is_empty()
            && letters.iter().all(|&ch| {
                let other = if ch.is_ascii_uppercase() {
                    ch.to_ascii_lowercase()
                } else {
                    ch.to_ascii_uppercase()
                };
                encoding.digit(other) == encoding.digit(ch)
            });
        assert_eq!(folds, encoding.ignores_case(), "{encoding}");
        assert_eq!(
            encode(encoding, 0).len() == encoding.written_len(),
            encoding.is_padded(),
            "{encoding}"
        );
        for prefix in encoding.prefixes() {
            assert_eq!(
                encoding.decode(&format!("{prefix}10")),
                encoding.decode("10")
            );
        }
        assert!(encode(encoding, 0).starts_with(encoding.written_prefix()));
    }
    let titles = Encoding::ALL.map(Encoding::title);
    assert_eq!(
        titles,
        ["Decimal", "Hex", "Crockford base32", "Base62", "Binary"]
    );
}

#[test]
fn adapters_display_and_parse() -> Result<(), ParseError> {
    let id = Id::from_u64(1_234_567_890);
    assert_eq!(Decimal(id).to_string(), "1234567890");
    assert_eq!(Hex(id).to_string(), "0x00000000499602d2");
    assert_eq!(Base32(id).to_string(), "00000014SC0PJ");
    assert_eq!(Base62(id).to_string(), "000001LY7VK");
    assert_eq!(
        Binary(id).to_string(),
        "0b0000000000000000000000000000000001001001100101100000001011010010"
    );
    assert_eq!(format!("[{:>12}]", Decimal(id)), "[  1234567890]");
    assert_eq!("1234567890".parse::<Decimal>()?, Decimal(id));
    assert_eq!("0x499602d2".parse::<Hex>()?, Hex(id));
    assert_eq!("14sc0pj".parse::<Base32>()?, Base32(id));
    assert_eq!("1LY7VK".parse::<Base62>()?, Base62(id));
    assert_eq!(
        "1001001100101100000001011010010".parse::<Binary>()?,
        Binary(id)
    );
    assert_eq!("".parse::<Hex>(), Err(ParseError::Empty));
    Ok(())
}

#[test]
fn detect_follows_its_rules() {
    let cases = [
        ("42", Ok((42, Encoding::Decimal))),
        ("0x2a", Ok((42, Encoding::Hex))),
        ("0X2A", Ok((42, Encoding::Hex))),
        ("000000000000002a", Ok((42, Encoding::Hex))),
        ("000000000001A", Ok((42, Encoding::Base32))),
        ("0000000000g", Ok((42, Encoding::Base62))),
        // Digits only: decimal, whatever the width.
        ("0000000000000042", Ok((42, Encoding::Decimal))),
        ("0000000000042", Ok((42, Encoding::Decimal))),
        // The hex prefix and hex digits: hex at any width, though base32 and base62 text
        // can start so too.
        ("0X00000000000", Ok((0, Encoding::Hex))),
        ("0x000000000", Ok((0, Encoding::Hex))),
        ("0x00000000000000", Ok((0, Encoding::Hex))),
        // The hex prefix and then no hex digits: the padded widths decide.
        ("0X0000000000Z", Ok(((29 << 55) + 31, Encoding::Base32))),
        (
            "0x00000000z",
            Ok((59 * 62u64.pow(9) + 61, Encoding::Base62)),
        ),
        // A binary prefix and binary digits, at any width: binary.
        ("0b101010", Ok((42, Encoding::Binary))),
        ("0B101010", Ok((42, Encoding::Binary))),
        ("0b10101010101", Ok((0b101_0101_0101, Encoding::Binary))),
        ("0b00000000000000", Ok((0, Encoding::Binary))),
        ("0b000000000", Ok((0, Encoding::Binary))),
        // Not binary digits after 0b: the padded widths and prefixes decide.
        (
            "0b00000000002",
            Ok((11 * 32u64.pow(11) + 2, Encoding::Base32)),
        ),
        (
            "0b00000000000002",
            Ok((0x0b00_0000_0000_0002, Encoding::Hex)),
        ),
        ("", Err(ParseError::Empty)),
    ];
    for (text, expected) in cases {
        assert_eq!(Encoding::detect(text), expected, "{text:?}");
    }
    let errors = [
        ("hello", "invalid character 'h' at position 0 in decimal id"),
        ("12.5", "invalid character '.' at position 2 in decimal id"),
        ("0xhello", "invalid character 'h' at position 2 in hex id"),
        (
            "0000000000U00",
            "invalid character 'U' at position 10 in base32 id",
        ),
        (
            "000000000000000g",
            "invalid character 'g' at position 15 in hex id",
        ),
        (
            "0000000000_",
            "invalid character '_' at position 10 in base62 id",
        ),
        ("0b102", "invalid character '2' at position 4 in binary id"),
        ("0b", "empty input: expected an id"),
        ("0b1é", "invalid character 'é' at position 3 in binary id"),
        (
            &format!("0b{}", "1".repeat(65)),
            "binary id has 65 characters, more than the 64 a 64-bit id takes",
        ),
        ("G000000000000", "base32 id does not fit in 64 bits"),
        ("99999999999999999999", "decimal id does not fit in 64 bits"),
    ];
    for (text, message) in errors {
        let err = Encoding::detect(text).expect_err(text);
        assert_eq!(err.to_string(), message, "{text:?}");
    }
}

proptest! {
    #[test]
    fn every_encoding_round_trips(value: u64) {
        for encoding in Encoding::ALL {
            let text = encode(encoding, value);
            prop_assert!(text.len() <= encoding.written_len());
            prop_assert_eq!(encoding.decode(&text), Ok(value));
        }
        let id = Id::from_u64(value);
        prop_assert_eq!(Decimal(id).to_string().parse::<Decimal>(), Ok(Decimal(id)));
        prop_assert_eq!(Hex(id).to_string().parse::<Hex>(), Ok(Hex(id)));
        prop_assert_eq!(Base32(id).to_string().parse::<Base32>(), Ok(Base32(id)));
        prop_assert_eq!(Base62(id).to_string().parse::<Base62>(), Ok(Base62(id)));
        prop_assert_eq!(Binary(id).to_string().parse::<Binary>(), Ok(Binary(id)));
        prop_assert_eq!(Binary(id).to_string(), format!("0b{value:064b}"));
        let bare = format!("{value:b}");
        prop_assert_eq!(Encoding::Binary.decode(&bare), Ok(value));
        prop_assert_eq!(Encoding::detect(&format!("0b{bare}")), Ok((value, Encoding::Binary)));
    }

    #[test]
    fn case_insensitive_encodings_ignore_case(value: u64) {
        for encoding in [Encoding::Hex, Encoding::Base32] {
            let text = encode(encoding, value);
            prop_assert_eq!(encoding.decode(&text.to_lowercase()), Ok(value));
            prop_assert_eq!(encoding.decode(&text.to_uppercase()), Ok(value));
        }
        let bare = encode(Encoding::Hex, value).replace("0x", "");
        prop_assert_eq!(Encoding::Hex.decode(&bare), Ok(value));
    }

    #[test]
    fn padded_encodings_sort_like_numbers(a: u64, b: u64) {
        for encoding in [Encoding::Hex, Encoding::Base32, Encoding::Base62, Encoding::Binary] {
            let (text_a, text_b) = (encode(encoding, a), encode(encoding, b));
            prop_assert_eq!(text_a.len(), encoding.written_len());
            prop_assert_eq!(text_a.cmp(&text_b), a.cmp(&b), "{} {} {}", encoding, text_a, text_b);
        }
    }

    #[test]
    fn detect_reads_back_what_encode_wrote(value: u64) {
        prop_assert_eq!(
            Encoding::detect(&encode(Encoding::Decimal, value)),
            Ok((value, Encoding::Decimal))
        );
        prop_assert_eq!(
            Encoding::detect(&encode(Encoding::Hex, value)),
            Ok((value, Encoding::Hex))
        );
        // Hex as written before it took its prefix: 16 digits.
        let bare = encode(Encoding::Hex, value).replace("0x", "");
        if !bare.bytes().all(|byte| byte.is_ascii_digit()) {
            prop_assert_eq!(Encoding::detect(&bare), Ok((value, Encoding::Hex)));
        }
        prop_assert_eq!(
            Encoding::detect(&encode(Encoding::Binary, value)),
            Ok((value, Encoding::Binary))
        );
        // Base32 and base62 text of digits only is read as decimal, as documented, and
        // text with the hex or binary prefix as hex or binary.
        for encoding in [Encoding::Base32, Encoding::Base62] {
            let text = encode(encoding, value);
            if !text.bytes().all(|byte| byte.is_ascii_digit())
                && !["0x", "0X", "0b", "0B"].iter().any(|p| text.starts_with(p))
            {
                prop_assert_eq!(Encoding::detect(&text), Ok((value, encoding)));
            }
        }
    }

    #[test]
    fn parsing_never_panics(text in prop_oneof![any::<String>(), "(0[xX])?[0-9A-Za-z]{0,22}", "(0[bB])?[0-2]{0,66}"]) {
        for encoding in Encoding::ALL {
            if let Ok(value) = encoding.decode(&text) {
                prop_assert_eq!(encoding.decode(&encode(encoding, value)), Ok(value));
            }
        }
        if let Ok((value, encoding)) = Encoding::detect(&text) {
            prop_assert_eq!(encoding.decode(&text), Ok(value));
        }
    }
}
