//! Parsing a template, and a serial against it, never panics; a serial that parses formats
//! back to the same text.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use snowmint::Layout;
use snowmint::serial::{Template, Zone};

fuzz_target!(|input: (&str, &str)| {
    let (template, serial) = input;
    let Ok(template) = Template::parse(template, &Layout::TWITTER) else {
        return;
    };
    let zone = Zone::UTC;
    if let Ok(parsed) = template.parse_serial(serial, &zone)
        && let Some(biz) = parsed.biz
    {
        assert_eq!(
            template.format(&biz, parsed.id, &zone).as_deref(),
            Ok(serial)
        );
    }
});
