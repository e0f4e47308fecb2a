//! Every printed id reads back; negative decimals by the layout's width; guesses that fail
//! name the encodings that read the text.
use proptest::prelude::*;

use crate::{Bits, Encoding, Id, Layout, ParseError};

/// Every preset, and a custom layout of each width.
fn layouts() -> Vec<Layout> {
    let bits = |timestamp, datacenter, worker, sequence| Bits {
        timestamp,
        datacenter,
        worker,
        sequence,
    };
    let mut layouts = Layout::PRESETS.to_vec();
    layouts.push(Layout::new(bits(39, 0, 10, 14), 10, 1_577_836_800_000).unwrap());
    layouts.push(Layout::new_u64(bits(32, 8, 8, 16), 1_000, 1_700_000_000_000).unwrap());
    layouts
}

fn printed(encoding: Encoding, value: u64) -> String {
    encoding
        .encode(value, &mut [0; Encoding::BUF_LEN])
        .to_owned()
}

fn read(
    layout: &Layout,
    text: &str,
    encoding: Option<Encoding>,
) -> Result<(u64, Encoding), ParseError> {
    layout
        .read_id(text, encoding)
        .map(|r| (r.id.as_u64(), r.encoding))
}

proptest! {
    /// For every layout, encoding and id of the whole 64-bit range (cut to the layout's
    /// width): the text snowmint prints reads back with its encoding named; unnamed, it
    /// reads back in decimal, hex and binary, and base32 and base62 text of digits only
    /// reads as the decimal it also is.
    #[test]
    fn every_printed_id_reads_back(raw in prop_oneof![
        any::<u64>(),
        // Ids whose hex or base32 is all digits, which a guess reads as decimal.
        "[0-9]{16}".prop_map(|digits| u64::from_str_radix(&digits, 16).unwrap()),
        "[0-1][0-9]{12}".prop_map(|digits| Encoding::Base32.decode(&digits).unwrap()),
    ]) {
        for layout in layouts() {
            let value = raw & layout.max_id().as_u64();
            for encoding in Encoding::ALL {
                let text = printed(encoding, value);
                prop_assert_eq!(read(&layout, &text, Some(encoding)), Ok((value, encoding)), "{}", text);
                let guessed = read(&layout, &text, None);
                if matches!(encoding, Encoding::Decimal | Encoding::Hex | Encoding::Binary) {
                    prop_assert_eq!(guessed, Ok((value, encoding)), "{}", text);
                } else if text.bytes().all(|b| b.is_ascii_digit()) {
                    prop_assert_eq!(guessed, Ok((text.parse().unwrap(), Encoding::Decimal)), "{}", text);
                } else if !["0x", "0X", "0b", "0B"].iter().any(|p| text.starts_with(p)) {
                    prop_assert_eq!(guessed, Ok((value, encoding)), "{}", text);
                }
            }
            // A signed 64-bit column's text of the id.
            let signed = (value as i64).to_string();
            let reading = layout.read_id(&signed, None);
            if layout.uses_bit_63() || value < 1 << 63 {
                let reading = reading.unwrap();
                prop_assert_eq!(reading.id.as_u64(), value);
                prop_assert_eq!(reading.signed, value >= 1 << 63);
            } else {
                let refused = matches!(reading, Err(ParseError::Negative { .. }));
                prop_assert!(refused);
            }
        }
    }
}

#[test]
fn a_negative_decimal_is_the_twos_complement_in_a_64_bit_layout() {
    let read = Layout::INSTAGRAM
        .read_id("-8499700661677131895", None)
        .unwrap();
    assert_eq!(read.id, Id::from_u64(9_947_043_412_032_419_721));
    assert!(read.signed && read.guessed);
    let parts = Layout::INSTAGRAM.decode(read.id).unwrap();
    assert_eq!((parts.worker, parts.sequence), (1341, 905));
    assert_eq!(
        crate::UnixMs(parts.unix_ms).to_string(),
        "2049-03-22T04:26:40.000Z"
    );
    let discord = |text| Layout::DISCORD.read_id(text, Some(Encoding::Decimal));
    assert_eq!(discord("-1").unwrap().id, Id::MAX);
    assert_eq!(
        discord("-9223372036854775808").unwrap().id,
        Id::from_u64(1 << 63)
    );
    let zero = discord("-0").unwrap();
    assert_eq!((zero.id, zero.signed), (Id::MIN, false));
}

#[test]
fn negative_text_that_cannot_be_an_id_says_why() {
    let msg = |layout: &Layout, text| layout.read_id(text, None).unwrap_err().to_string();
    let discord = &Layout::DISCORD;
    assert_eq!(
        msg(discord, "-9223372036854775809"),
        "id \"-9223372036854775809\" is below -9223372036854775808, the smallest signed 64-bit number"
    );
    assert_eq!(
        msg(discord, "-99999999999999999999"),
        "id \"-99999999999999999999\" is below -9223372036854775808, the smallest signed 64-bit number"
    );
    assert_eq!(
        msg(discord, "-12a"),
        "invalid character 'a' at position 3 in decimal id"
    );
    assert_eq!(
        msg(discord, "-"),
        "invalid character '-' at position 0 in decimal id"
    );
    assert_eq!(
        msg(&Layout::TWITTER, "-5"),
        "id \"-5\" is negative, but layout twitter uses 63 bits: none of its ids is negative, even in a signed 64-bit column"
    );
    // Only decimal has a sign.
    assert_eq!(
        Layout::DISCORD
            .read_id("-1", Some(Encoding::Hex))
            .unwrap_err()
            .to_string(),
        "invalid character '-' at position 0 in hex id"
    );
}

#[test]
fn all_digit_text_is_decimal_unless_the_encoding_is_named() {
    let tsid = &Layout::TSID;
    let cases = [
        ("3962102955333052", Encoding::Hex, 4_134_885_177_588_658_258),
        ("8000000000000", Encoding::Base32, 1 << 63),
        ("0000000000123", Encoding::Base32, 1091),
    ];
    for (text, encoding, value) in cases {
        assert_eq!(read(tsid, text, Some(encoding)), Ok((value, encoding)));
        assert_eq!(
            read(tsid, text, None),
            Ok((text.parse().unwrap(), Encoding::Decimal))
        );
    }
}

#[test]
fn a_failed_guess_names_the_encodings_that_read_the_text() {
    let err = Layout::TSID.read_id("WIlLsHwljH", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid character 'W' at position 0 in decimal id, the encoding guessed from its form, but it reads as base32 or base62: name its encoding (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)"
    );
    assert!(
        matches!(err, ParseError::Unguessed { ref readers, .. } if readers == &[Encoding::Base32, Encoding::Base62])
    );
    let base62 = Layout::TSID
        .read_id("WIlLsHwljH", Some(Encoding::Base62))
        .unwrap();
    assert_eq!(
        base62.id,
        Id::from_u64(Encoding::Base62.decode("0WIlLsHwljH").unwrap())
    );
    // Named, the encoding's own refusal; read by none, the guess's.
    assert_eq!(
        Layout::TSID
            .read_id("WIlLsHwljH", Some(Encoding::Decimal))
            .unwrap_err()
            .to_string(),
        "invalid character 'W' at position 0 in decimal id"
    );
    assert_eq!(
        Layout::TSID.read_id("zz!", None).unwrap_err().to_string(),
        "invalid character 'z' at position 0 in decimal id"
    );
    // A prefix names the encoding: its refusal stands, whatever else reads the text.
    assert_eq!(
        Layout::TSID
            .read_id("0b1021", None)
            .unwrap_err()
            .to_string(),
        "invalid character '2' at position 4 in binary id"
    );
}
