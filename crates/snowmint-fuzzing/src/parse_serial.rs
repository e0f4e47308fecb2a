//! Parsing a template, and a serial against it, never panics; a serial that parses formats
//! back to the same text.

use snowmint::Layout;
use snowmint::serial::{Template, Zone};

/// Feeds the bytes, as a template then a serial, to `Template::parse` and
/// `Template::parse_serial`.
pub fn check(data: &[u8]) {
    let Some((template, serial)) = crate::input::<(&str, &str)>(data) else {
        return;
    };
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
}
